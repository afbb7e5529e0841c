// Package cpuhog keeps CPUs busy beside a benchmark, as other work on a
// user's CI runner does: each hog is a process of its own at the normal
// policy and priority, busy until the benchmark ends. Yielders keep the
// benchmark's own process busy instead, and PollIdle keeps idle CPUs from
// halting, as scenario run --poll-idle does.
package cpuhog

import (
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/cpuwake"
	"github.com/coordlab/scenario/internal/rtprio"
)

// Start starts n hogs, stopped when tb ends, and with realtime puts tb's
// process at real-time priority until then, as scenario run --realtime
// does. A hog is yes(1) writing to /dev/null: it never sleeps, and its
// writes cost next to nothing.
func Start(tb testing.TB, n int, realtime bool) {
	tb.Helper()
	for range n {
		hog := exec.Command("yes")
		if err := hog.Start(); err != nil {
			tb.Fatalf("start a CPU hog: %v", err)
		}
		tb.Cleanup(func() {
			hog.Process.Kill()
			hog.Wait()
		})
	}
	if realtime {
		restore, err := rtprio.Raise(rtprio.Priority)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(restore)
	}
}

// Yielders starts n goroutines in tb's process, stopped when tb ends, each
// busy in turns of 20 µs and yielding its P between turns, as the
// collector's background sweep does: a P that runs one always has a
// runnable goroutine, so it does not poll the network, and a goroutine
// woken only through the runtime's poller waits for sysmon (up to 10 ms).
func Yielders(tb testing.TB, n int) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for t := time.Now(); time.Since(t) < 20*time.Microsecond; {
				}
				runtime.Gosched()
			}
		})
	}
	tb.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
}

// PollIdle holds every CPU's wake-up latency at 0 until tb ends
// (cpuwake.Hold), as scenario run --poll-idle does: idle CPUs poll
// rather than halt.
func PollIdle(tb testing.TB) {
	tb.Helper()
	r, err := cpuwake.Hold(0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
}
