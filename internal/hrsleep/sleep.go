// Package hrsleep sleeps precisely: on Linux on a timerfd, a kernel
// hrtimer that wakes the runtime's poller at once, instead of a runtime
// timer, which an idle Go process serves up to about a millisecond late.
// The shaper's schedulers and the open-loop dispatcher sleep on it
// (NewDual), or spin through the last stretch of each sleep where the run
// asks for a busy-poll window (NewSpinning).
package hrsleep

import (
	"context"
	"time"
)

// Sleeper sleeps one goroutine at a time. New (per OS) picks the most
// precise one available.
type Sleeper interface {
	// Sleep waits ns nanoseconds and reports false if ctx ended first.
	Sleep(ns int64) bool
	// Close releases the sleeper; ctx's end does not.
	Close()
}

// timerSleeper sleeps on a runtime timer: portable, but up to ~1 ms late
// on an idle Linux process (see timerfdSleeper). NewTimer returns one.
type timerSleeper struct {
	ctx context.Context
	t   *time.Timer
}

func NewTimer(ctx context.Context) Sleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerSleeper{ctx: ctx, t: t}
}

func (s *timerSleeper) Sleep(ns int64) bool {
	s.t.Reset(time.Duration(ns))
	select {
	case <-s.t.C:
		return true
	case <-s.ctx.Done():
		s.t.Stop()
		return false
	}
}

func (s *timerSleeper) Close() { s.t.Stop() }
