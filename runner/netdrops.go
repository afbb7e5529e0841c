package runner

import (
	"log/slog"
	"sync"

	"github.com/coordlab/scenario/internal/results"
)

// dropCounter is what netDrops samples: the frames the network lost that
// no link declared, so far (fabric.Fabric.Drops).
type dropCounter interface {
	Drops() (uint64, error)
}

// netDrops samples the fabric's undeclared drops at each phase's start and
// end, so that each phase gets its own count. A sample is taken on a
// goroutine of its own: reading the devices' counters enters every host's
// namespace, and the timeline's walk must not wait for that.
type netDrops struct {
	src dropCounter
	log *slog.Logger

	wg         sync.WaitGroup
	mu         sync.Mutex
	start, end map[string]uint64 // by phase
	failed     bool              // a sample could not be read: no counts at all
}

func newNetDrops(src dropCounter, log *slog.Logger) *netDrops {
	return &netDrops{src: src, log: log, start: map[string]uint64{}, end: map[string]uint64{}}
}

// sample reads the count as phase starts (end false) or ends.
func (d *netDrops) sample(phase string, end bool) {
	d.wg.Go(func() {
		n, err := d.src.Drops()
		d.mu.Lock()
		defer d.mu.Unlock()
		if err != nil {
			if !d.failed {
				d.log.Warn("network drops not counted", "phase", phase, "err", err)
			}
			d.failed = true
			return
		}
		if end {
			d.end[phase] = n
		} else {
			d.start[phase] = n
		}
	})
}

// fill waits for the samples, then sets each phase's NetworkDrops where
// both its samples were read (a phase cut short by an abort has no end),
// and the run's, their sum.
func (d *netDrops) fill(res *results.Results) {
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failed {
		return
	}
	var total int64
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
		n := int64(max(e, s) - s)
		p.NetworkDrops = &n
		total += n
		counted = true
	}
	if counted {
		res.Run.NetworkDrops = &total
	}
}
