package shaper

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// How often the watcher looks at the devices of waiting readers: every
// watchTick while it finds readers left waiting (one is woken within two
// ticks), less often the longer it finds none, down to every
// watchTickIdle. Each tick of an idle process costs a wake-up, and an
// idle process's poller leaves nothing waiting: on a machine with
// page-table isolation ticks every watchTick took 2% of a core, and every
// watchTickIdle, each waking sysmon as well (about 80 µs), 0.3-0.5%.
const (
	watchTick     = time.Millisecond
	watchTickIdle = 32 * time.Millisecond
	// watchPatience is how many ticks in a row that find nobody waiting
	// double the interval.
	watchPatience = 16
)

// readerWatch wakes ring readers that the runtime's poller has left
// waiting on a device with frames in it. The runtime polls the network
// only from a P with nothing else to run, or from sysmon every 10 ms, so
// while both Ps have goroutines to run a frame can wait in its device up
// to 10 ms before its reader hears of it (BenchmarkBusyRoundTrip in
// fabric), and the shaper's lateness, timed from the read, does not see
// it. The watcher's ticker is a runtime timer, which a busy P runs each
// time it schedules: on each tick it polls the waiting readers' devices
// without waiting, and a reader found waiting on a readable device at two
// ticks in a row gets a read deadline of now, which wakes it to read. An
// idle process's poller delivers a frame within microseconds, so there a
// reader is rarely found waiting on a readable device twice.
type readerWatch struct {
	mu      sync.Mutex
	waits   map[*readerWait]struct{}
	changed chan struct{} // capacity 1: a reader came or went
	kicks   atomic.Uint64 // readers woken
}

// readerWait is one ring reader as the watcher sees it.
type readerWait struct {
	fd     int32
	dl     deadliner
	parked atomic.Bool // the reader's last reads found nothing and it waits on the poller
	seen   bool        // the watcher's: parked on a readable device at the last tick
}

func newReaderWatch() *readerWatch {
	return &readerWatch{waits: map[*readerWait]struct{}{}, changed: make(chan struct{}, 1)}
}

// add registers a reader of fd, woken through dl; remove it when the
// reader stops.
func (w *readerWatch) add(fd int32, dl deadliner) *readerWait {
	rw := &readerWait{fd: fd, dl: dl}
	w.mu.Lock()
	w.waits[rw] = struct{}{}
	w.mu.Unlock()
	w.notify()
	return rw
}

func (w *readerWatch) remove(rw *readerWait) {
	w.mu.Lock()
	delete(w.waits, rw)
	w.mu.Unlock()
	w.notify()
}

func (w *readerWatch) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// run watches until ctx ends; it ticks only while readers are registered.
func (w *readerWatch) run(ctx context.Context) {
	var (
		waits []*readerWait
		fds   []int32
		ready []bool
		ps    pollSet
	)
	t := time.NewTimer(watchTick)
	t.Stop()
	defer t.Stop()
	interval, empty := watchTick, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.changed:
			w.mu.Lock()
			waits = waits[:0]
			for rw := range w.waits {
				waits = append(waits, rw)
			}
			w.mu.Unlock()
			fds, ready = fds[:0], ready[:0]
			for _, rw := range waits {
				fds, ready = append(fds, rw.fd), append(ready, false)
			}
			ps.set(fds)
			t.Stop()
			if len(waits) > 0 {
				interval, empty = watchTick, 0
				t.Reset(interval)
			}
		case <-t.C:
			if err := ps.readable(ready); err != nil {
				// Poll(2) refused: the readers wait for the poller alone.
				continue
			}
			found := false
			for i, rw := range waits {
				waiting := ready[i] && rw.parked.Load()
				found = found || waiting
				if waiting && rw.seen {
					rw.dl.SetReadDeadline(time.Now())
					w.kicks.Add(1)
					waiting = false
				}
				rw.seen = waiting
			}
			interval, empty = nextWatchTick(interval, empty, found)
			t.Reset(interval)
		}
	}
}

// nextWatchTick is the interval to the next tick, and the count of ticks
// in a row that found nobody waiting, after a tick that found someone or
// not.
func nextWatchTick(interval time.Duration, empty int, found bool) (time.Duration, int) {
	if found {
		return watchTick, 0
	}
	if empty++; empty >= watchPatience {
		return min(2*interval, watchTickIdle), 0
	}
	return interval, empty
}
