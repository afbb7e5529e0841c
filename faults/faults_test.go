//go:build linux

package faults_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/process"
)

// The runner hands *process.Node values to an Injector.
var _ faults.Node = (*process.Node)(nil)

// startNodes starts k sleeping processes as nodes n1..nk.
func startNodes(t *testing.T, k int) []*process.Node {
	t.Helper()
	run, err := process.NewRun(process.RunOptions{StateDir: t.TempDir(), StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := run.Close(context.Background()); err != nil {
			t.Errorf("close run: %v", err)
		}
	})
	nodes := make([]*process.Node, k)
	for i := range nodes {
		n, err := run.AddNode(plan.NodeName(i+1), process.NodeSpec{Path: "sleep", Args: []string{"1000"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
	}
	return nodes
}

func newInjector(nodes []*process.Node) *faults.Injector {
	in := make([]faults.Node, len(nodes))
	for i, n := range nodes {
		in[i] = n
	}
	return faults.NewInjector(in, faults.Options{StopGrace: time.Second})
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procState is the state letter in /proc/<pid>/stat ('S', 'T', ...).
func procState(t *testing.T, pid int) byte {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name in parentheses may hold spaces; the state follows it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		t.Fatalf("cannot parse /proc/%d/stat: %q", pid, s)
	}
	return s[i+2]
}

func ms(n int) plan.Duration { return plan.Duration(time.Duration(n) * time.Millisecond) }

func TestNodeFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault plan.FaultSpec
		// downAfterInject: the node is down when Inject returns.
		downAfterInject bool
		// backBy: the node comes back on its own, before Recover.
		backBy bool
		// newPID: the node runs a new process after Recover.
		newPID bool
		// minRecover: Recover waits at least this long after Inject.
		minRecover time.Duration
		// maxRecover: Recover returns within this long.
		maxRecover time.Duration
	}{
		{name: "kill stays down until recover", fault: plan.FaultSpec{Kind: plan.FaultKill}, downAfterInject: true, newPID: true, maxRecover: 2 * time.Second},
		{name: "kill restarts after", fault: plan.FaultSpec{Kind: plan.FaultKill, RestartAfter: ms(100)}, downAfterInject: true, backBy: true, newPID: true, maxRecover: 2 * time.Second},
		{name: "stop stays down until recover", fault: plan.FaultSpec{Kind: plan.FaultStop}, downAfterInject: true, newPID: true, maxRecover: 2 * time.Second},
		{name: "stop restarts after", fault: plan.FaultSpec{Kind: plan.FaultStop, RestartAfter: ms(100)}, downAfterInject: true, backBy: true, newPID: true, maxRecover: 2 * time.Second},
		// Recover cuts the hour short rather than waiting for it.
		{name: "stop recover cancels scheduled restart", fault: plan.FaultSpec{Kind: plan.FaultStop, RestartAfter: plan.Duration(time.Hour)}, downAfterInject: true, newPID: true, maxRecover: 2 * time.Second},
		{name: "restart at once", fault: plan.FaultSpec{Kind: plan.FaultRestart}, newPID: true, maxRecover: time.Second},
		// The plan recovers a restart right after injecting it; Recover
		// then waits for the restart rather than cutting it short.
		{name: "restart after", fault: plan.FaultSpec{Kind: plan.FaultRestart, RestartAfter: ms(300)}, downAfterInject: true, newPID: true, minRecover: 250 * time.Millisecond, maxRecover: 3 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nodes := startNodes(t, 3)
			in := newInjector(nodes)
			oldPID := nodes[1].PID()
			tc.fault.ID = "test/" + tc.fault.Kind

			a, err := in.Inject(t.Context(), tc.fault, []int{2})
			if err != nil {
				t.Fatalf("Inject: %v", err)
			}
			injected := time.Now()
			if got := nodes[1].Running(); got == tc.downAfterInject {
				t.Errorf("after Inject: Running() = %v, want %v", got, !tc.downAfterInject)
			}
			if a.AppliedAt().IsZero() || a.AppliedAt().After(injected) {
				t.Errorf("AppliedAt = %v, want a time before Inject returned (%v)", a.AppliedAt(), injected)
			}
			if got := a.Targets(); len(got) != 1 || got[0] != 2 {
				t.Errorf("Targets = %v, want [2]", got)
			}
			if _, ok := a.DiskStats(); ok {
				t.Error("DiskStats ok for a node fault")
			}
			if !nodes[0].Running() || !nodes[2].Running() {
				t.Error("a node outside the target is down")
			}
			if tc.backBy {
				eventually(t, "the node restarts on its own", nodes[1].Running)
			}

			if err := a.Recover(t.Context()); err != nil {
				t.Fatalf("Recover: %v", err)
			}
			took := time.Since(injected)
			if took < tc.minRecover || tc.maxRecover > 0 && took > tc.maxRecover {
				t.Errorf("Recover returned %v after Inject, want within [%v, %v]", took, tc.minRecover, tc.maxRecover)
			}
			if !nodes[1].Running() {
				t.Fatal("node not running after Recover")
			}
			if pid := nodes[1].PID(); tc.newPID && pid == oldPID {
				t.Errorf("pid %d unchanged: the node was not restarted", pid)
			}
			pid := nodes[1].PID()
			if err := a.Recover(t.Context()); err != nil {
				t.Errorf("second Recover: %v", err)
			}
			if got := nodes[1].PID(); got != pid {
				t.Errorf("second Recover changed the pid from %d to %d", pid, got)
			}
		})
	}
}

func TestPause(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	in := newInjector(nodes)
	a, err := in.Inject(t.Context(), plan.FaultSpec{ID: "p", Kind: plan.FaultPause, Duration: ms(100)}, []int{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		pid := nodes[i].PID()
		eventually(t, fmt.Sprintf("%s is stopped", nodes[i].Name()), func() bool { return procState(t, pid) == 'T' })
	}
	if s := procState(t, nodes[1].PID()); s == 'T' {
		t.Error("n2 was paused, but is not a target")
	}
	for range 2 { // idempotent
		if err := a.Recover(t.Context()); err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{0, 2} {
			pid := nodes[i].PID()
			eventually(t, fmt.Sprintf("%s is resumed", nodes[i].Name()), func() bool { return procState(t, pid) != 'T' })
		}
	}
}

// TestInjectUndoes checks that a fault that fails on one target leaves no
// other target faulted.
func TestInjectUndoes(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 2)
	if err := nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	in := newInjector(nodes)
	a, err := in.Inject(t.Context(), plan.FaultSpec{ID: "p", Kind: plan.FaultPause}, []int{1, 2})
	if err == nil || a != nil {
		t.Fatalf("Inject = %v, %v; want an error: n2 is not running", a, err)
	}
	if !errors.Is(err, process.ErrNotRunning) {
		t.Errorf("error %q does not wrap ErrNotRunning", err)
	}
	pid := nodes[0].PID()
	eventually(t, "n1 is resumed", func() bool { return procState(t, pid) != 'T' })
}

func TestDisk(t *testing.T) {
	tests := []struct {
		name string
		disk plan.DiskSpec
		// maxWrites bounds the writes in the first 500 ms, for a rate.
		maxWrites int64
	}{
		{name: "unlimited with fsync", disk: plan.DiskSpec{BlockSize: 4096, Fsync: true, Parallelism: 2}},
		// 64 KiB/s in 4 KiB blocks is 16 writes a second, 8 in 500 ms.
		{name: "rate limited", disk: plan.DiskSpec{Rate: 64 << 10, BlockSize: 4096, Fsync: true, Parallelism: 2}, maxWrites: 14},
		{name: "no fsync", disk: plan.DiskSpec{BlockSize: 4096, Parallelism: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nodes := startNodes(t, 2)
			in := newInjector(nodes)
			disk := tc.disk
			a, err := in.Inject(t.Context(), plan.FaultSpec{ID: "d", Kind: plan.FaultDisk, Disk: &disk}, []int{2})
			if err != nil {
				t.Fatal(err)
			}
			dir := faults.ContentionDir(nodes[1])
			if data := nodes[1].DataDir(); filepath.Dir(dir) != filepath.Dir(data) || dir == data {
				t.Errorf("contention dir %s is not a sibling of data dir %s", dir, data)
			}
			if _, err := os.Stat(dir); err != nil {
				t.Errorf("contention dir: %v", err)
			}
			if _, err := os.Stat(faults.ContentionDir(nodes[0])); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("n1 has a contention dir, but is not a target (stat: %v)", err)
			}
			if tc.maxWrites > 0 {
				time.Sleep(500 * time.Millisecond)
				if s, _ := a.DiskStats(); s.Writes > tc.maxWrites || s.Writes == 0 {
					t.Errorf("%d writes in 500 ms, want 1..%d", s.Writes, tc.maxWrites)
				}
			}
			eventually(t, "10 blocks are written", func() bool {
				s, ok := a.DiskStats()
				return ok && s.Writes >= 10
			})
			for range 2 { // idempotent
				if err := a.Recover(t.Context()); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("contention dir after Recover: %v, want it gone", err)
				}
			}
			s, ok := a.DiskStats()
			if !ok {
				t.Fatal("no disk stats")
			}
			if s.Bytes != s.Writes*disk.BlockSize {
				t.Errorf("%d bytes in %d writes of %d", s.Bytes, s.Writes, disk.BlockSize)
			}
			if disk.Fsync {
				if s.FsyncP50 <= 0 || s.FsyncP50 > s.FsyncP99 || s.FsyncP99 > s.FsyncMax {
					t.Errorf("fsync stats %+v: want 0 < p50 <= p99 <= max", s)
				}
			} else if s.FsyncMax != 0 {
				t.Errorf("fsync stats %+v without fsync", s)
			}
			// Stopped writers write no more.
			time.Sleep(20 * time.Millisecond)
			if again, _ := a.DiskStats(); again != s {
				t.Errorf("stats moved after Recover: %+v then %+v", s, again)
			}
		})
	}
}

func TestInjectErrors(t *testing.T) {
	nodes := startNodes(t, 2)
	in := newInjector(nodes)
	tests := []struct {
		name        string
		fault       plan.FaultSpec
		targets     []int
		err         string
		unsupported bool
	}{
		{name: "network", fault: plan.FaultSpec{ID: "x", Kind: plan.FaultNetwork}, targets: []int{1}, err: "network faults need the network fabric", unsupported: true},
		{name: "partition", fault: plan.FaultSpec{ID: "x", Kind: plan.FaultPartition}, targets: []int{1}, err: "partition faults need the network fabric", unsupported: true},
		{name: "unknown kind", fault: plan.FaultSpec{ID: "x", Kind: "flood"}, targets: []int{1}, err: `unknown fault kind "flood"`},
		{name: "no targets", fault: plan.FaultSpec{ID: "x", Kind: plan.FaultKill}, err: "no target nodes"},
		{name: "target out of range", fault: plan.FaultSpec{ID: "x", Kind: plan.FaultKill}, targets: []int{3}, err: "target node 3 out of range 1..2"},
		{name: "disk without settings", fault: plan.FaultSpec{ID: "x", Kind: plan.FaultDisk}, targets: []int{1}, err: "disk fault without disk settings"},
		{name: "disk without block size", fault: plan.FaultSpec{ID: "x", Kind: plan.FaultDisk, Disk: &plan.DiskSpec{Parallelism: 1}}, targets: []int{1}, err: "block size 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := in.Inject(t.Context(), tc.fault, tc.targets)
			if err == nil || a != nil {
				t.Fatalf("Inject = %v, %v; want an error", a, err)
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %q does not contain %q", err, tc.err)
			}
			var ue faults.UnsupportedError
			if got := errors.As(err, &ue); got != tc.unsupported || got && ue.Kind != tc.fault.Kind {
				t.Errorf("errors.As(UnsupportedError) = %v (%+v), want %v", got, ue, tc.unsupported)
			}
			for _, n := range nodes {
				if !n.Running() {
					t.Errorf("%s is down after a failed Inject", n.Name())
				}
			}
		})
	}
}

func TestDiskThrottle(t *testing.T) {
	if err := faults.ThrottleAvailable(); err != nil {
		t.Skipf("needs cgroup v1 blkio: %v", err)
	}
	run, err := process.NewRun(process.RunOptions{StateDir: t.TempDir(), StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close(context.Background()) })
	dataDir, _ := run.NodeDir("n1")
	// A writer that syncs every block, as etcd's WAL does.
	n, err := run.AddNode("n1", process.NodeSpec{Path: "dd", Args: []string{
		"if=/dev/zero", "of=" + filepath.Join(dataDir, "wal"), "bs=64k", "count=100000", "oflag=dsync"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	origin, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", n.PID()))
	if err != nil {
		t.Fatal(err)
	}
	in := faults.NewInjector([]faults.Node{n}, faults.Options{})
	const limit = 1 << 20
	a, err := in.Inject(t.Context(), plan.FaultSpec{ID: "p/disk", Kind: plan.FaultDisk,
		Disk: &plan.DiskSpec{Throttle: limit}}, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	inGroup, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", n.PID()))
	if !strings.Contains(string(inGroup), "blkio:/scenario-") {
		t.Errorf("node not in a scenario blkio group:\n%s", inGroup)
	}
	const window = 3 * time.Second
	time.Sleep(window)
	s, ok := a.DiskStats()
	if !ok || s.ThrottleBPS != limit {
		t.Fatalf("DiskStats = %+v, %v", s, ok)
	}
	rate := float64(s.ThrottledBytes) / window.Seconds()
	t.Logf("throttled to 1 MiB/s: %.2f MiB/s written through the group", rate/(1<<20))
	if rate < 0.5*limit || rate > 1.5*limit {
		t.Errorf("node wrote %.2f MiB/s through a 1 MiB/s throttle", rate/(1<<20))
	}
	if s.Writes != 0 {
		t.Errorf("a throttle-only fault started %d competing writes", s.Writes)
	}
	if err := a.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	back, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", n.PID()))
	if string(back) != string(origin) {
		t.Errorf("node not back in its own groups after recovery:\n%s\nwas:\n%s", back, origin)
	}
	groups, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/blkio/scenario-%d-*", os.Getpid()))
	if len(groups) != 0 {
		t.Errorf("blkio groups left behind: %v", groups)
	}
	if after, _ := a.DiskStats(); after.ThrottledBytes < s.ThrottledBytes {
		t.Errorf("throttled bytes not kept after recovery: %d < %d", after.ThrottledBytes, s.ThrottledBytes)
	}
}
