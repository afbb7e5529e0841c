package hrsleep

import (
	"context"
	"os"
	"runtime"
	"sync"
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

// blockingSleeper sleeps in read(2) on a blocking timerfd: its goroutine
// holds an OS thread for the sleep, outside the runtime's poller.
//
// Why not the poller (timerfdSleeper): the runtime polls the network only
// from a P with nothing else to run, or from sysmon every 10 ms. With both
// Ps busy (the collector's background sweep yields only to goroutines
// already runnable), an expired timerfd waited up to 10 ms to be noticed.
// A thread blocked in read(2) is woken by the kernel at the expiry, and on
// its way back into Go its goroutine is runnable at once: on an idle P, or
// on the global run queue that a busy P reads at its next scheduling.
type blockingSleeper struct {
	ctx      context.Context
	fd       int
	stop     func() bool
	mu       sync.Mutex // wake against Close: the fd number may be reused once closed
	closed   bool
	fallback Sleeper // after an unexpected timerfd error
	buf      [8]byte
}

// NewBlocking returns a sleeper whose goroutine sleeps in a blocking
// read(2), or a runtime timer where no timerfd can be made. It suits one
// long-lived goroutine that must wake on time while the process is busy
// (the open-loop dispatcher); each sleeping goroutine holds a thread.
func NewBlocking(ctx context.Context) Sleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	if err != nil {
		return NewTimer(ctx)
	}
	s := &blockingSleeper{ctx: ctx, fd: fd}
	s.stop = context.AfterFunc(ctx, s.wake)
	return s
}

// wake expires the timerfd now, so that a read blocked on it returns.
func (s *blockingSleeper) wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		unix.TimerfdSettime(s.fd, 0, &unix.ItimerSpec{Value: unix.Timespec{Nsec: 1}}, nil)
	}
}

func (s *blockingSleeper) Sleep(ns int64) bool {
	if ns <= 0 {
		return s.ctx.Err() == nil
	}
	if s.fallback != nil {
		return s.fallback.Sleep(ns)
	}
	var now unix.Timespec
	err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	if err == nil {
		// A thread in a system call keeps its P until sysmon takes it back
		// (20 µs to 10 ms), and the goroutines this one readied just before
		// (the workers it released) wait on that P meanwhile: let them run
		// first. The deadline is absolute, so the yield does not delay it.
		runtime.Gosched()
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(now.Nano() + ns)}
		err = unix.TimerfdSettime(s.fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
	}
	// ctx's end wakes a read only if it comes after the settime above,
	// which would overwrite an earlier wake: check in between.
	if s.ctx.Err() != nil {
		return false
	}
	for err == nil {
		_, err = unix.Read(s.fd, s.buf[:])
		if err != unix.EINTR {
			break
		}
	}
	if s.ctx.Err() != nil {
		return false
	}
	if err == nil {
		return true
	}
	s.fallback = NewTimer(s.ctx)
	return s.fallback.Sleep(ns)
}

func (s *blockingSleeper) Close() {
	s.stop()
	s.mu.Lock()
	s.closed = true
	unix.Close(s.fd)
	s.mu.Unlock()
	if s.fallback != nil {
		s.fallback.Close()
	}
}
