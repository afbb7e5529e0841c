package rtprio

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Raise puts every thread of the process at SCHED_FIFO priority prio, and
// within scanEvery each thread started after, until the returned stop,
// which puts them all back to the calling thread's policy and nice value
// before the call (a run started under nice keeps its nice).
func Raise(prio int) (stop func(), err error) {
	was, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return nil, fmt.Errorf("read the scheduling policy: %w", err)
	}
	back := unix.SchedAttr{Policy: was.Policy, Priority: was.Priority, Nice: was.Nice}
	restore := func() { putBack(back) }
	fifo := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(prio), Flags: unix.SCHED_FLAG_RESET_ON_FORK}
	// The caller's own thread first: where the process may not raise
	// itself, nothing has changed when this fails.
	if err := unix.SchedSetAttr(0, &fifo, 0); err != nil {
		return nil, fmt.Errorf("SCHED_FIFO %d: %w (it needs CAP_SYS_NICE, and in a container a real-time budget: docker run --cap-add SYS_NICE, and with cgroup v1 --cpu-rt-runtime)", prio, err)
	}
	// Every other thread, settling as stop does: a thread that a raised
	// thread starts begins at the normal policy (SCHED_RESET_ON_FORK), and
	// one whose clone was still under way during the last pass would
	// otherwise wait for the scanner's next tick.
	if err := converge(fifo); err != nil {
		restore()
		return nil, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(scanEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_, _ = eachThread(fifo)
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			restore()
		})
	}, nil
}

// same reports whether a thread at cur already has attr. A real-time
// policy leaves a thread's nice value as it was, so only the normal one
// compares it.
func same(cur, attr unix.SchedAttr) bool {
	if cur.Policy != attr.Policy || cur.Priority != attr.Priority {
		return false
	}
	return attr.Policy == unix.SCHED_FIFO || cur.Nice == attr.Nice
}

// putBack gives every thread attr as converge does, errors aside: a thread
// still raised while a pass runs may start a thread, and the kernel starts
// it at the normal policy and nice 0 (SCHED_RESET_ON_FORK), not at attr's
// nice. Once every thread is at attr, every thread started later inherits
// attr.
func putBack(attr unix.SchedAttr) { _ = converge(attr) }

// converge gives every thread attr, passing over the threads again until a
// pass changes none, and once more a little later. One pass is not enough:
// a thread started during a pass may start at another policy, and it shows
// in /proc only once its clone ends, which may be after a pass that found
// nothing to change.
func converge(attr unix.SchedAttr) error {
	for range 100 {
		n, err := eachThread(attr)
		if err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		time.Sleep(cloneSettle)
		if n, err = eachThread(attr); err != nil || n == 0 {
			return err
		}
	}
	return nil
}

// eachThread gives every thread of the process whose policy or nice value
// differs the policy of attr, and returns how many it changed. A thread
// that ended meanwhile is skipped.
func eachThread(attr unix.SchedAttr) (changed int, err error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, fmt.Errorf("list the threads: %w", err)
	}
	var errs []error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if cur, err := unix.SchedGetAttr(tid, 0); err == nil && same(*cur, attr) {
			continue
		}
		a := attr
		switch err := unix.SchedSetAttr(tid, &a, 0); {
		case err == nil:
			changed++
		case !errors.Is(err, unix.ESRCH):
			errs = append(errs, fmt.Errorf("thread %d: %w", tid, err))
		}
	}
	return changed, errors.Join(errs...)
}
