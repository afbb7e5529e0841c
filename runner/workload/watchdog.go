package workload

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// opTimer ends a worker's operation at the workload's timeout without a
// deadline on its context. A deadline per op cost a runtime timer in the
// runner and, because gRPC sends it as a grpc-timeout header, a parsed
// header and a second timer in the store for every request: work etcd's
// own benchmark tool, which sends no deadline, does not make either side
// do. Instead each worker keeps one cancellable context across its ops and
// publishes when its current op is due to time out; a watchdog per Run
// scans the workers a few times per timeout and cancels the context of an
// op past its due time. The store sees the cancellation as the client
// giving up (gRPC's RST_STREAM), as it would a deadline.
type opTimer struct {
	base   context.Context // never cancelled; marked as timed by its caller
	ctx    context.Context // the current op's context
	cancel context.CancelFunc
	// due is the monotonic offset at which the current op times out, 0
	// between ops, and claimed once the watchdog has taken the op to cancel
	// it. Only the worker stores a due time and only the watchdog claims one.
	due     atomic.Int64
	expired bool // the last op was cancelled: ctx is spent
}

const claimed = -1

func newOpTimer(base context.Context) *opTimer {
	t := &opTimer{base: stores.WithCallerTimeout(base)}
	t.ctx, t.cancel = context.WithCancel(t.base)
	return t
}

// begin returns the context for an op that times out at offset due.
func (t *opTimer) begin(due time.Duration) context.Context {
	if t.expired {
		t.ctx, t.cancel = context.WithCancel(t.base)
		t.expired = false
	}
	t.due.Store(int64(due))
	return t.ctx
}

// end marks the op returned and reports whether the watchdog cancelled it.
func (t *opTimer) end() bool {
	if t.due.Swap(0) != claimed {
		return false
	}
	// The watchdog claimed the op and cancels right after: wait for it, so
	// that the next op's context is not the one it is about to cancel.
	<-t.ctx.Done()
	t.expired = true
	return true
}

// expire cancels the op if it is still running past its due time at now,
// and otherwise returns the due time of the op it left running (0 if none).
func (t *opTimer) expire(now time.Duration) (pending time.Duration) {
	d := t.due.Load()
	switch {
	case d <= 0:
		return 0
	case int64(now) < d:
		return time.Duration(d)
	}
	if t.due.CompareAndSwap(d, claimed) {
		t.cancel()
	}
	return 0
}

// errClass is the error class of an op's result: "" for a success, a
// timeout when the watchdog cancelled it (timedOut, from end), whatever the
// driver made of the cancellation, else the driver's class or ErrOther.
func errClass(res stores.Result, timedOut bool) string {
	switch {
	case res.Err == nil:
		return ""
	case timedOut:
		return plan.ErrTimeout
	case res.Class != "":
		return res.Class
	}
	return plan.ErrOther
}

// close releases the context once the worker has stopped.
func (t *opTimer) close() { t.cancel() }

// watchTick is how often the watchdog looks: an op ends at most this long
// after its timeout, 1/64 of it (16 ms at the default 5 s, under 2 ms at 100
// ms), and never more often than every millisecond.
func watchTick(timeout time.Duration) time.Duration {
	return min(max(timeout/64, time.Millisecond), 16*time.Millisecond)
}

// watchdog cancels the ops of a Run's workers that outlive their timeout.
type watchdog struct {
	mu     sync.Mutex
	timers []*opTimer
	stop   chan struct{}
	done   chan struct{}
}

// startWatchdog cancels the ops of the timers added to it once they are
// past their due time, reading the time from now. Every op is due timeout
// after it began, so a scan at t that finds the earliest op still running
// due at d has nothing to do before min(d, t+timeout): it sleeps until then,
// but at least watchTick(timeout), which bounds how late an op ends and how
// often the watchdog wakes while ops keep timing out. A fixed tick woke an
// otherwise idle process 62 times a second at the default timeout: one
// thread's sleep and wake-up each time, for every run at every load.
//
// An op whose start was read before a scan and whose due time was stored
// after it (its worker was descheduled in between) is cancelled late by at
// most that delay.
func startWatchdog(timeout time.Duration, now func() time.Duration) *watchdog {
	w := &watchdog{stop: make(chan struct{}), done: make(chan struct{})}
	tick := watchTick(timeout)
	go func() {
		defer close(w.done)
		t := time.NewTimer(tick)
		defer t.Stop()
		var seen []*opTimer
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			w.mu.Lock()
			seen = append(seen[:0], w.timers...)
			w.mu.Unlock()
			at := now()
			next := at + timeout
			for _, ot := range seen {
				if d := ot.expire(at); d > 0 {
					next = min(next, d)
				}
			}
			t.Reset(max(next-now(), tick))
		}
	}()
	return w
}

// add watches t from now on.
func (w *watchdog) add(t *opTimer) {
	w.mu.Lock()
	w.timers = append(w.timers, t)
	w.mu.Unlock()
}

// close stops the watchdog; it has cancelled its last op when close returns.
func (w *watchdog) close() {
	close(w.stop)
	<-w.done
}
