package runner

import (
	"cmp"
	"log/slog"
	"slices"
	"sync"

	"github.com/coordlab/scenario/fabric/shaper"
	"github.com/coordlab/scenario/internal/results"
)

// netCounter is what netCounts samples: the frames the shaper read, the
// frames the network lost that no link declared, and each pair's
// counters with how late the shaper handed on the packets it held, so far
// (fabric.Fabric's Frames, Drops and Pairs).
type netCounter interface {
	Frames() uint64
	Drops() (uint64, error)
	Pairs() map[[2]string]*shaper.PairCounts
}

// netCount is one sample of a netCounter.
type netCount struct {
	frames, drops uint64
	pairs         map[[2]string]*shaper.PairCounts
}

// phaseNet is one phase's counts, summarised for results.json.
type phaseNet struct {
	frames, drops int64
	late          *results.NetworkLate
	pairs         []results.NetworkPair
}

// netCounts samples the fabric's counters at each phase's start and end,
// so that each phase gets its own counts. A sample is taken on a goroutine
// of its own: reading the devices' drop counters enters every host's
// namespace, and the timeline's walk must not wait for that. A phase is
// summarised as soon as both its samples are read, and its samples let
// go: each holds every pair's lateness histogram in full.
type netCounts struct {
	src netCounter
	log *slog.Logger

	wg     sync.WaitGroup
	mu     sync.Mutex
	first  map[string]sample                // by phase: the sample read first, until the other is
	phases map[string]phaseNet              // by phase: those with both samples read
	run    map[[2]string]*shaper.PairCounts // summed over phases: their samples are gone
	failed bool                             // a sample could not be read: no counts at all
}

// sample is a netCount read as its phase started (end false) or ended.
type sample struct {
	netCount
	end bool
}

func newNetCounts(src netCounter, log *slog.Logger) *netCounts {
	return &netCounts{src: src, log: log, first: map[string]sample{}, phases: map[string]phaseNet{}, run: map[[2]string]*shaper.PairCounts{}}
}

// sample reads the counts as phase starts (end false) or ends.
func (d *netCounts) sample(phase string, end bool) {
	d.wg.Go(func() {
		frames, pairs := d.src.Frames(), d.src.Pairs()
		drops, err := d.src.Drops()
		d.mu.Lock()
		defer d.mu.Unlock()
		if err != nil {
			if !d.failed {
				d.log.Warn("network drops not counted", "phase", phase, "err", err)
			}
			d.failed = true
			return
		}
		c := sample{netCount{frames: frames, drops: drops, pairs: pairs}, end}
		other, ok := d.first[phase]
		if !ok || other.end == end {
			d.first[phase] = c
			return
		}
		delete(d.first, phase)
		if end {
			d.add(phase, other.netCount, c.netCount)
		} else {
			d.add(phase, c.netCount, other.netCount)
		}
	})
}

// add summarises phase from its samples s and e, and adds it to the run's
// counts. d.mu is held.
func (d *netCounts) add(phase string, s, e netCount) {
	// Counters only grow; a reset device (none is reset during a run)
	// would read as none rather than as a huge count.
	f, n := int64(max(e.frames, s.frames)-s.frames), int64(max(e.drops, s.drops)-s.drops)
	pairs := map[[2]string]*shaper.PairCounts{}
	for k, c := range e.pairs {
		pairs[k] = c.Since(s.pairs[k])
		if d.run[k] == nil {
			d.run[k] = &shaper.PairCounts{}
		}
		d.run[k].Add(pairs[k])
	}
	pn := phaseNet{frames: f, drops: n}
	pn.late, pn.pairs = networkPairs(pairs)
	d.phases[phase] = pn
}

// fill waits for the samples, then sets each phase's NetworkFrames,
// NetworkDrops, NetworkLate and NetworkPairs where both its samples were
// read (a phase cut short by an abort has no end), and the run's, over
// those phases.
func (d *netCounts) fill(res *results.Results) {
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed || len(d.phases) == 0 {
		return
	}
	for i := range res.Phases {
		p := &res.Phases[i]
		if pn, ok := d.phases[p.Name]; ok {
			p.NetworkFrames, p.NetworkDrops = &pn.frames, &pn.drops
			p.NetworkLate, p.NetworkPairs = pn.late, pn.pairs
		}
	}
	var frames, drops int64
	for _, pn := range d.phases {
		frames += pn.frames
		drops += pn.drops
	}
	res.Run.NetworkFrames, res.Run.NetworkDrops = &frames, &drops
	res.Run.NetworkLate, res.Run.NetworkPairs = networkPairs(d.run)
}

// networkPairs summarises an interval's pair counts for results.json: the
// lateness over all pairs, and each pair that counted anything, in order
// of name.
func networkPairs(pairs map[[2]string]*shaper.PairCounts) (*results.NetworkLate, []results.NetworkPair) {
	var all shaper.Lateness
	var out []results.NetworkPair
	for k, c := range pairs {
		all.Add(&c.Late)
		if c.Empty() {
			continue
		}
		out = append(out, results.NetworkPair{
			From: k[0], To: k[1],
			Packets: int64(c.Forwarded),
			Lost:    int64(c.DroppedLoss),
			Cut:     int64(c.DroppedDown),
			Dropped: int64(c.DroppedQueue + c.WriteErrors),
			Late:    networkLate(&c.Late),
		})
	}
	slices.SortFunc(out, func(a, b results.NetworkPair) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	return networkLate(&all), out
}

// networkLate summarises l for results.json; nil when it counts no packet.
func networkLate(l *shaper.Lateness) *results.NetworkLate {
	n, p50, p99, maxLate := l.Summary()
	if n == 0 {
		return nil
	}
	return &results.NetworkLate{Packets: int64(n), P50MS: results.MS(p50), P99MS: results.MS(p99), MaxMS: results.MS(maxLate)}
}
