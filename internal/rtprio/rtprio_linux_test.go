package rtprio

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// policies returns each thread's scheduling policy.
func policies(t *testing.T) map[int]uint32 {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]uint32{}
	for _, e := range tasks {
		tid, _ := strconv.Atoi(e.Name())
		if a, err := unix.SchedGetAttr(tid, 0); err == nil {
			out[tid] = a.Policy
		}
	}
	return out
}

func TestRaise(t *testing.T) {
	// Started under nice 5, as a user may start a run: stop puts that back.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: 5}, 0); err != nil {
		t.Fatal(err)
	}
	defer putBack(unix.SchedAttr{Policy: unix.SCHED_NORMAL})
	// Only the threads there before Raise must be raised when it returns:
	// the runtime may start one at any time, and the scanner raises those.
	was := policies(t)
	stop, err := Raise(Priority)
	if errors.Is(err, unix.EPERM) {
		t.Skipf("this process may not take real-time priority (needs CAP_SYS_NICE): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	before := policies(t)
	for tid, p := range before {
		if _, old := was[tid]; old && p != unix.SCHED_FIFO {
			t.Errorf("thread %d: policy %d after Raise, want SCHED_FIFO", tid, p)
		}
	}

	// Threads the runtime starts later: goroutines locked to threads and
	// blocked in system calls make it start more. There are more of them
	// than threads before, so some must be new even where an earlier run of
	// the test (-count) left idle threads behind.
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range len(before) + 2 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			<-release
		})
	}
	var pipe [2]int
	if err := unix.Pipe(pipe[:]); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		wg.Go(func() {
			var b [1]byte
			unix.Read(pipe[0], b[:]) // a blocking read holds its thread
		})
	}
	defer func() {
		close(release)
		unix.Write(pipe[1], []byte{1, 1})
		wg.Wait()
		unix.Close(pipe[0])
		unix.Close(pipe[1])
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		after, fresh, normal := policies(t), 0, 0
		for tid, p := range after {
			if _, ok := before[tid]; !ok {
				fresh++
			}
			if p != unix.SCHED_FIFO {
				normal++
			}
		}
		if fresh > 0 && normal == 0 {
			t.Logf("%d threads, %d started after Raise, all SCHED_FIFO", len(after), fresh)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d threads started after Raise, %d still at the normal policy after 10 s", fresh, normal)
		}
		time.Sleep(scanEvery)
	}

	// A process started from a raised thread keeps the normal policy.
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	a, err := unix.SchedGetAttr(cmd.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Policy != unix.SCHED_NORMAL {
		t.Errorf("a child process runs at policy %d, want SCHED_NORMAL (SCHED_RESET_ON_FORK)", a.Policy)
	}

	stop()
	for tid, p := range policies(t) {
		if p != unix.SCHED_NORMAL {
			t.Errorf("thread %d: policy %d after stop, want SCHED_NORMAL", tid, p)
		}
		if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Nice != 5 {
			t.Errorf("thread %d: nice %d after stop, want the 5 it had before Raise", tid, a.Nice)
		}
	}
}
