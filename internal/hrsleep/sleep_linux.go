package hrsleep

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdSleeper sleeps on a timerfd read through the runtime's poller.
//
// Why not a time.Timer: when the process is idle, the runtime waits for
// its next timer in epoll_pwait, whose timeout has millisecond
// granularity, so timers fire up to ~1 ms late (measured 0.3–1 ms for
// 10–25 ms sleeps). A timerfd is a kernel hrtimer: its expiry makes the
// fd readable, which wakes the poller at once (measured ~50–100 µs late),
// and the goroutine parks in the poller without holding a thread.
type timerfdSleeper struct {
	ctx      context.Context
	fd       int
	f        *os.File
	stop     func() bool
	fallback Sleeper // after an unexpected timerfd error
	buf      [8]byte
}

// New returns a timerfd sleeper, or a runtime timer where no timerfd can
// be made.
func New(ctx context.Context) Sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return NewTimer(ctx)
	}
	// Non-blocking, so os.File registers it with the poller and honours
	// read deadlines, which is how ctx interrupts a sleep.
	s := &timerfdSleeper{ctx: ctx, fd: fd, f: os.NewFile(uintptr(fd), "hrsleep-timerfd")}
	s.stop = context.AfterFunc(ctx, func() { s.f.SetReadDeadline(time.Now()) })
	return s
}

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
	// and the caller read it before this call, so it never fires early.
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(ns)}
	err := unix.TimerfdSettime(s.fd, 0, &spec, nil)
	if err == nil {
		_, err = s.f.Read(s.buf[:])
	}
	if err == nil {
		return true
	}
	if s.ctx.Err() != nil {
		return false
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
