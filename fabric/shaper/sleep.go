package shaper

import (
	"context"
	"time"
)

// sleeper is what a pair's scheduler sleeps on until its head packet is
// due. newSleeper (per OS) picks the most precise one available.
type sleeper interface {
	// sleep waits ns nanoseconds and reports false if ctx ended first.
	sleep(ns int64) bool
	close()
}

// timerSleeper sleeps on a runtime timer: portable, but up to ~1 ms late
// on an idle Linux process (see timerfdSleeper).
type timerSleeper struct {
	ctx context.Context
	t   *time.Timer
}

func newTimerSleeper(ctx context.Context) *timerSleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerSleeper{ctx: ctx, t: t}
}

func (s *timerSleeper) sleep(ns int64) bool {
	s.t.Reset(time.Duration(ns))
	select {
	case <-s.t.C:
		return true
	case <-s.ctx.Done():
		s.t.Stop()
		return false
	}
}

func (s *timerSleeper) close() { s.t.Stop() }
