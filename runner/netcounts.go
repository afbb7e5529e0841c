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

// netCounts samples the fabric's counters at each phase's start and end,
// so that each phase gets its own counts. A sample is taken on a goroutine
// of its own: reading the devices' drop counters enters every host's
// namespace, and the timeline's walk must not wait for that.
type netCounts struct {
	src netCounter
	log *slog.Logger

	wg         sync.WaitGroup
	mu         sync.Mutex
	start, end map[string]netCount // by phase
	failed     bool                // a sample could not be read: no counts at all
}

func newNetCounts(src netCounter, log *slog.Logger) *netCounts {
	return &netCounts{src: src, log: log, start: map[string]netCount{}, end: map[string]netCount{}}
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
		c := netCount{frames: frames, drops: drops, pairs: pairs}
		if end {
			d.end[phase] = c
		} else {
			d.start[phase] = c
		}
	})
}

// fill waits for the samples, then sets each phase's NetworkFrames,
// NetworkDrops, NetworkLate and NetworkPairs where both its samples were
// read (a phase cut short by an abort has no end), and the run's, over
// those phases.
func (d *netCounts) fill(res *results.Results) {
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed {
		return
	}
	var frames, drops int64
	run := map[[2]string]*shaper.PairCounts{}
	counted := false
	for i := range res.Phases {
		p := &res.Phases[i]
		s, ok1 := d.start[p.Name]
		e, ok2 := d.end[p.Name]
		if !ok1 || !ok2 {
			continue
		}
		// Counters only grow; a reset device (none is reset during a
		// run) would read as none rather than as a huge count.
		f, n := int64(max(e.frames, s.frames)-s.frames), int64(max(e.drops, s.drops)-s.drops)
		p.NetworkFrames, p.NetworkDrops = &f, &n
		pairs := map[[2]string]*shaper.PairCounts{}
		for k, c := range e.pairs {
			pairs[k] = c.Since(s.pairs[k])
			if run[k] == nil {
				run[k] = &shaper.PairCounts{}
			}
			run[k].Add(pairs[k])
		}
		p.NetworkLate, p.NetworkPairs = networkPairs(pairs)
		frames += f
		drops += n
		counted = true
	}
	if counted {
		res.Run.NetworkFrames, res.Run.NetworkDrops = &frames, &drops
		res.Run.NetworkLate, res.Run.NetworkPairs = networkPairs(run)
	}
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
