// Package cpuhog keeps CPUs busy beside a benchmark, as other work on a
// user's CI runner does: each hog is a process of its own at the normal
// policy and priority, busy until the benchmark ends.
package cpuhog

import (
	"os/exec"
	"testing"

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
