package shaper

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
	fallback sleeper // after an unexpected timerfd error
	buf      [8]byte
}

func newSleeper(ctx context.Context, coarse bool) sleeper {
	if coarse {
		return newTimerSleeper(ctx)
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimerSleeper(ctx)
	}
	// Non-blocking, so os.File registers it with the poller and honours
	// read deadlines, which is how ctx interrupts a sleep.
	s := &timerfdSleeper{ctx: ctx, fd: fd, f: os.NewFile(uintptr(fd), "shaper-timerfd")}
	s.stop = context.AfterFunc(ctx, func() { s.f.SetReadDeadline(time.Now()) })
	return s
}

func (s *timerfdSleeper) sleep(ns int64) bool {
	if s.fallback != nil {
		return s.fallback.sleep(ns)
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
	s.fallback = newTimerSleeper(s.ctx)
	return s.fallback.sleep(ns)
}

func (s *timerfdSleeper) close() {
	s.stop()
	s.f.Close()
	if s.fallback != nil {
		s.fallback.close()
	}
}
