package hrsleep

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdSleeper sleeps on a timerfd read through the runtime's poller,
// and with NewDual on a read deadline as well: the first of the two wakes
// it.
//
// Why not a time.Timer alone: when the process is idle, the runtime waits
// for its next timer in epoll_pwait, whose timeout has millisecond
// granularity, so timers fire up to ~1 ms late (measured 0.3–1 ms for
// 10–25 ms sleeps). A timerfd is a kernel hrtimer: its expiry makes the
// fd readable, which wakes the poller at once (measured ~50–100 µs late),
// and the goroutine parks in the poller without holding a thread.
//
// Why the deadline (NewDual): the runtime polls the network only from a P
// with nothing else to run, or from sysmon every 10 ms, so while both Ps
// have goroutines to run (the collector's background sweep yields only to
// runnable ones) an expired timerfd waits up to 10 ms to be noticed. A
// read deadline is a runtime timer, which a busy P runs each time it
// schedules. (A read(2) blocking its thread would be noticed at once, but
// its P would stay in the system call with the timers of every goroutine
// that ran on it, 10 ms late in turn.)
type timerfdSleeper struct {
	ctx      context.Context
	fd       int
	f        *os.File
	stop     func() bool
	deadline bool    // also wake on a read deadline (NewDual)
	fallback Sleeper // after an unexpected timerfd error
	buf      [8]byte
}

// New returns a timerfd sleeper, or a runtime timer where no timerfd can
// be made.
func New(ctx context.Context) Sleeper { return newTimerfd(ctx, false) }

// NewDual returns a timerfd sleeper that also wakes on a read deadline (a
// runtime timer) shortly after the timerfd's expiry, or a runtime timer
// where no timerfd can be made. It wakes on time whether the process is
// idle or busy, at the cost of a few microseconds a sleep. The open-loop
// dispatcher and the shaper's schedulers sleep on it.
func NewDual(ctx context.Context) Sleeper { return newTimerfd(ctx, true) }

// newTimerfd returns a timerfd sleeper, with a read deadline or not.
func newTimerfd(ctx context.Context, deadline bool) Sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return NewTimer(ctx)
	}
	// Non-blocking, so os.File registers it with the poller and honours
	// read deadlines, which is how ctx interrupts a sleep.
	s := &timerfdSleeper{ctx: ctx, fd: fd, deadline: deadline, f: os.NewFile(uintptr(fd), "hrsleep-timerfd")}
	s.stop = context.AfterFunc(ctx, func() { s.f.SetReadDeadline(time.Now()) })
	return s
}

// deadlineSlack puts the read deadline after the timerfd's expiry, so that
// an idle process wakes on the timerfd alone and the deadline's runtime
// timer only stands in for it while the Ps are busy.
const deadlineSlack = 100 * time.Microsecond

func (s *timerfdSleeper) Sleep(ns int64) bool {
	if ns <= 0 {
		// A zero it_value would disarm the timerfd, and the read would
		// wait forever.
		return s.ctx.Err() == nil
	}
	if s.fallback != nil {
		return s.fallback.Sleep(ns)
	}
	// Relative to now: the runtime's monotonic clock is CLOCK_MONOTONIC
	// and the caller read it before this call, so neither fires early.
	due := time.Now().Add(time.Duration(ns))
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(ns)}
	err := unix.TimerfdSettime(s.fd, 0, &spec, nil)
	if err == nil && s.deadline {
		err = s.f.SetReadDeadline(due.Add(deadlineSlack))
	}
	if err == nil && s.ctx.Err() != nil {
		// ctx's end sets the deadline to now; if it came before the line
		// above, that overwrote it.
		return false
	}
	if err == nil {
		_, err = s.f.Read(s.buf[:])
	}
	if s.ctx.Err() != nil {
		return false
	}
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		// On the deadline, the timerfd may have expired unread: the next
		// settime clears its count.
		return true
	}
	s.fallback = NewTimer(s.ctx)
	return s.fallback.Sleep(ns)
}

func (s *timerfdSleeper) Close() {
	s.stop()
	s.f.Close()
	if s.fallback != nil {
		s.fallback.Close()
	}
}
