package hrsleep

import (
	"context"
	"runtime"
	"time"
)

// spinSleeper sleeps on NewDual until window before its due time, then
// spins on the clock, yielding its P between reads, until the time is due:
// a busy-poll window.
//
// Why: in a virtual machine a thread that sleeps lets its vCPU halt, and
// the host wakes a halted vCPU late now and then, by up to milliseconds
// (BenchmarkSleeperWakeups in runner/workload), while a thread that keeps
// reading the clock never lets it halt. Why yield: the goroutines the
// caller has just made runnable (the open loop's workers, released for
// the arrival before) then run on this P at once, with no other thread
// to wake. The cost is the window's CPU each sleep, a whole core while
// sleeps are shorter than the window.
type spinSleeper struct {
	ctx    context.Context
	sleep  Sleeper
	window int64
}

// MaxBusyPoll is the longest busy-poll window a run may ask for
// (scenario run --busy-poll): ten times the late-start threshold, past
// which spinning longer makes nothing more on time.
const MaxBusyPoll = 10 * time.Millisecond

// NewSpinning returns a sleeper that spins through the last window of
// every sleep, and sleeps on NewDual before it. A window of zero or less
// is NewDual itself.
func NewSpinning(ctx context.Context, window time.Duration) Sleeper {
	if window <= 0 {
		return NewDual(ctx)
	}
	return &spinSleeper{ctx: ctx, sleep: NewDual(ctx), window: int64(window)}
}

func (s *spinSleeper) Sleep(ns int64) bool {
	due := time.Now().Add(time.Duration(ns))
	if ns > s.window && !s.sleep.Sleep(ns-s.window) {
		return false
	}
	done := s.ctx.Done()
	for time.Now().Before(due) {
		select {
		case <-done:
			return false
		default:
		}
		runtime.Gosched()
	}
	return s.ctx.Err() == nil
}

func (s *spinSleeper) Close() { s.sleep.Close() }
