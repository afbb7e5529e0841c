package runner

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coordlab/scenario/internal/cpuwake"
	"github.com/coordlab/scenario/internal/rtprio"
)

// TestRealtime runs a scenario with --realtime and a follower's restart
// in its timeline, and watches the policies from beside it: the runner's
// threads at real-time priority during the timeline, every store process
// at the normal policy throughout (the restarted one too, started by a
// raised thread), and the runner's threads back as they were afterwards.
// It runs alone (no t.Parallel): it raises the whole test process.
func TestRealtime(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts a real 3-node cluster")
	}
	stop, err := rtprio.Raise(rtprio.Priority)
	if errors.Is(err, unix.EPERM) {
		t.Skipf("this process may not take real-time priority (needs CAP_SYS_NICE): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	stop()
	before := threadPolicies(t, os.Getpid())
	for tid, p := range before {
		if p == unix.SCHED_FIFO {
			t.Fatalf("thread %d at SCHED_FIFO before the run", tid)
		}
	}

	var (
		raised   int                 // samples in which a runner thread was at SCHED_FIFO
		stores   = map[int]bool{}    // etcd processes seen
		badStore = map[string]bool{} // "etcd PID thread TID policy P"
	)
	// The sampler alone writes these until wg.Wait, after which only the
	// test reads them.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			own := threadPolicies(t, os.Getpid())
			for _, p := range own {
				if p == unix.SCHED_FIFO {
					raised++
					break
				}
			}
			for _, pid := range descendants(os.Getpid()) {
				if comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm")); strings.TrimSpace(string(comm)) != "etcd" {
					continue
				}
				stores[pid] = true
				for tid, p := range threadPolicies(t, pid) {
					if p != unix.SCHED_NORMAL {
						badStore[fmt.Sprintf("etcd %d thread %d policy %d", pid, tid, p)] = true
					}
				}
			}
		}
	})
	res := runScenarioWith(t, faultCluster+`
phase "restart" {
  duration = "5s"
  load "w" {}
  fault "restart" {
    target = "follower"
    at     = "1s"
  }
}
`, Options{Realtime: true})
	close(done)
	wg.Wait()

	t.Logf("%d samples with a runner thread at SCHED_FIFO, %d etcd processes seen", raised, len(stores))
	if raised == 0 {
		t.Error("no runner thread was seen at SCHED_FIFO during the run")
	}
	if len(stores) < 4 {
		t.Errorf("saw %d etcd processes, want the 3 started and the restarted one", len(stores))
	}
	if len(badStore) > 0 {
		bad := slices.Sorted(maps.Keys(badStore))
		t.Errorf("%d store threads not at the normal policy: %s", len(bad), strings.Join(bad[:min(len(bad), 5)], "; "))
	}
	for tid, p := range threadPolicies(t, os.Getpid()) {
		if p != unix.SCHED_NORMAL {
			t.Errorf("thread %d at policy %d after the run, want SCHED_NORMAL as before", tid, p)
		}
	}
	if note := res.Notes["realtime"]; !strings.Contains(note, "SCHED_FIFO") {
		t.Errorf("notes.realtime = %q", note)
	}
	if b := res.Backend["realtime"]; !strings.Contains(b, "SCHED_FIFO 1") {
		t.Errorf("backend.realtime = %q", b)
	}
	failover(t, phase(t, res, "restart"), 1)
}

// threadPolicies returns the scheduling policy of each thread of pid; a
// thread or process that ended meanwhile is left out.
func threadPolicies(t *testing.T, pid int) map[int]uint32 {
	t.Helper()
	tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	out := map[int]uint32{}
	for _, e := range tasks {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if a, err := unix.SchedGetAttr(tid, 0); err == nil {
			out[tid] = a.Policy
		}
	}
	return out
}

// descendants returns the processes below pid, from /proc's parent links.
func descendants(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: the fields
		// after it start past the last ')'.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		// A bound on the hops: a pid reused while /proc was read could
		// close a loop.
		for q, hops := parent[p], 0; q > 1 && hops < 64; q, hops = parent[q], hops+1 {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// TestPollIdle runs a scenario with --poll-idle and counts, from beside
// it, the kernel's idle-state entries of every CPU: while the timeline
// plays (a light load leaves the CPUs idle most of the time, so they halt
// hundreds of times a second without it) no CPU may halt, and results.json
// must say the latency was held.
func TestPollIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: starts a real 3-node cluster")
	}
	if _, ok, err := cpuwake.Halts(); err != nil || !ok {
		t.Skipf("no CPU idle state with a wake-up latency under /sys/devices/system/cpu/cpu*/cpuidle (no cpuidle driver), so nothing to hold: %v", err)
	}
	if r, err := cpuwake.Hold(0); err != nil {
		t.Skipf("this process may not hold the CPUs' wake-up latency: %v", err)
	} else {
		r.Close()
	}
	t.Parallel()
	// The sampler alone writes longest until wg.Wait.
	var longest time.Duration // without a halt
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		last, since := int64(-1), time.Now()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			n, _, err := cpuwake.Halts()
			if err != nil {
				t.Error(err)
				return
			}
			if n != last {
				last, since = n, time.Now()
			}
			longest = max(longest, time.Since(since))
		}
	})
	res := runScenarioWith(t, faultCluster+`
phase "quiet" {
  duration = "4s"
  load "w" {
    rate = 100
  }
}
`, Options{PollIdle: true})
	close(done)
	wg.Wait()

	t.Logf("the longest stretch without a halt: %v", longest)
	if longest < 3*time.Second {
		t.Errorf("the CPUs halted at least every %v, want a stretch of 3 s without a halt in the 4 s timeline", longest)
	}
	if b := res.Backend["poll_idle"]; !strings.Contains(b, "held at 0") {
		t.Errorf("backend.poll_idle = %q", b)
	}
}
