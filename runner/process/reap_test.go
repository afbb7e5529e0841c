//go:build linux

package process

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// fakeRunDir lays out a run directory as a runner would have left it.
func fakeRunDir(t *testing.T, state string, owner *identity, keep bool) (id, dir string) {
	t.Helper()
	id, err := newRunID(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(state, "runs", id)
	if err := os.MkdirAll(filepath.Join(dir, nodesDir, "n1", "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if owner != nil {
		if err := writeOwner(dir, *owner); err != nil {
			t.Fatal(err)
		}
	}
	if keep {
		if err := writeKeep(dir); err != nil {
			t.Fatal(err)
		}
	}
	return id, dir
}

func TestReapStale(t *testing.T) {
	dead := deadIdentity(t)
	self, err := selfIdentity()
	if err != nil {
		t.Fatal(err)
	}
	otherNS := self
	otherNS.pid, otherNS.pidns = dead.pid, "pid:[1]"

	type procKind int
	const (
		none        procKind = iota
		ours                 // carries the run id, named in a pid file
		oursOrphan           // carries the run id, no pid file
		foreign              // no run id, but its pid is in the pid file
		otherRun             // another run's id, pid in the pid file
		oursAndMore          // named in a pid file, plus an orphan
	)
	for _, tc := range []struct {
		name        string
		owner       *identity // nil: no owner record
		ownerAge    time.Duration
		keep        bool
		proc        procKind
		wantDead    bool // the process is killed
		wantKilled  int  // processes reported killed
		wantForeign bool
		wantRemoved bool
		wantKept    bool
		wantListed  bool
	}{
		{name: "dead owner, node alive", owner: &dead, proc: ours, wantDead: true, wantKilled: 1, wantRemoved: true, wantListed: true},
		{name: "dead owner, node without pid file", owner: &dead, proc: oursOrphan, wantDead: true, wantKilled: 1, wantRemoved: true, wantListed: true},
		{name: "dead owner, node and orphan", owner: &dead, proc: oursAndMore, wantDead: true, wantKilled: 2, wantRemoved: true, wantListed: true},
		{name: "dead owner, nothing left", owner: &dead, wantRemoved: true, wantListed: true},
		{name: "pid reused by an unrelated process", owner: &dead, proc: foreign, wantForeign: true, wantRemoved: true, wantListed: true},
		{name: "pid reused by another run's process", owner: &dead, proc: otherRun, wantForeign: true, wantRemoved: true, wantListed: true},
		{name: "dead owner, kept", owner: &dead, keep: true, proc: ours, wantDead: true, wantKilled: 1, wantKept: true, wantListed: true},
		{name: "dead owner, kept, nothing left", owner: &dead, keep: true},
		{name: "live owner", owner: &self, proc: ours},
		{name: "owner in another pid namespace", owner: &otherNS, proc: ours},
		{name: "no owner record yet", proc: oursOrphan},
		{name: "no owner record for long", ownerAge: 2 * time.Minute, proc: oursOrphan, wantDead: true, wantKilled: 1, wantRemoved: true, wantListed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			id, dir := fakeRunDir(t, state, tc.owner, tc.keep)
			pidFile := filepath.Join(dir, nodesDir, "n1", "pid")
			var procs []proc
			start := func(env []string, withPidFile bool) {
				ready := filepath.Join(t.TempDir(), "ready")
				startHelper(t, "node", env, "-pidfile", ready)
				p := readPid(t, ready)
				procs = append(procs, p)
				if withPidFile {
					if err := os.WriteFile(pidFile, []byte(strconv.Itoa(p.pid)+"\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			switch tc.proc {
			case ours:
				start([]string{EnvRunID + "=" + id}, true)
			case oursOrphan:
				start([]string{EnvRunID + "=" + id}, false)
			case foreign:
				start(nil, true)
			case otherRun:
				start([]string{EnvRunID + "=20200101T000000-000000"}, true)
			case oursAndMore:
				start([]string{EnvRunID + "=" + id}, true)
				start([]string{EnvRunID + "=" + id}, false)
			}
			if tc.ownerAge > 0 {
				old := time.Now().Add(-tc.ownerAge)
				if err := os.Chtimes(dir, old, old); err != nil {
					t.Fatal(err)
				}
			}
			// Neither of these is a run directory: never touched.
			notRun := filepath.Join(state, "runs", "notarun")
			if err := os.Mkdir(notRun, 0o700); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(state, "runs", "20200101T000000-abcdef")
			if err := os.Symlink(t.TempDir(), link); err != nil {
				t.Fatal(err)
			}

			got, err := ReapStale(context.Background(), state, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Runs) > 1 {
				t.Fatalf("reaped %d runs, want at most 1: %+v", len(got.Runs), got)
			}
			if listed := len(got.Runs) == 1; listed != tc.wantListed {
				t.Fatalf("run listed = %v, want %v: %+v", listed, tc.wantListed, got)
			}
			var rr ReapedRun
			if tc.wantListed {
				rr = got.Runs[0]
				if rr.ID != id || rr.Dir != dir {
					t.Errorf("reaped %s in %s, want %s in %s", rr.ID, rr.Dir, id, dir)
				}
			}
			if len(rr.Killed) != tc.wantKilled || (len(rr.Foreign) > 0) != tc.wantForeign ||
				rr.Removed != tc.wantRemoved || rr.Kept != tc.wantKept {
				t.Errorf("reaped %+v", rr)
			}
			for _, p := range procs {
				if tc.wantDead {
					// Killed processes are reported by pid; they are our
					// children, so alive() sees them as zombies until reaped.
					if p.alive() {
						t.Errorf("process %d of the dead run still alive", p.pid)
					}
					if !slices.Contains(rr.Killed, p.pid) {
						t.Errorf("killed %v, missing %d", rr.Killed, p.pid)
					}
				} else if !p.alive() {
					t.Errorf("process %d killed, but it was not the dead run's", p.pid)
				}
			}
			_, err = os.Stat(dir)
			if gone := os.IsNotExist(err); gone != tc.wantRemoved {
				t.Errorf("run directory removed = %v, want %v", gone, tc.wantRemoved)
			}
			for _, p := range []string{notRun, link} {
				if _, err := os.Lstat(p); err != nil {
					t.Errorf("%s touched: %v", p, err)
				}
			}
		})
	}
}

func TestReapStaleEmptyStateDir(t *testing.T) {
	got, err := ReapStale(context.Background(), filepath.Join(t.TempDir(), "none"), nil)
	if err != nil || len(got.Runs) != 0 {
		t.Errorf("ReapStale on a missing dir = %+v, %v", got, err)
	}
}

// A run whose owner died while its nodes (and what they forked) live on:
// ReapStale kills them all and removes the directory.
func TestReapStaleKillsNodesOfDeadOwner(t *testing.T) {
	state := t.TempDir()
	r := newTestRun(t, RunOptions{StateDir: state})
	var nodes []*Node
	var procs []proc
	for i := 1; i <= 2; i++ {
		n, err := r.AddNode("n"+strconv.Itoa(i), helperSpec("-child-pidfile", filepath.Join(r.Dir(), "child"+strconv.Itoa(i))))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		procs = append(procs, procOf(t, n.PID()), readPid(t, filepath.Join(r.Dir(), "child"+strconv.Itoa(i))))
	}
	if err := writeOwner(r.Dir(), deadIdentity(t)); err != nil {
		t.Fatal(err)
	}

	got, err := ReapStale(context.Background(), state, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 1 || got.Runs[0].ID != r.ID() || !got.Runs[0].Removed {
		t.Fatalf("reaped %+v", got)
	}
	for i, p := range procs {
		if p.alive() {
			t.Errorf("process %d alive after ReapStale", p.pid)
		}
		// The nodes' children may instead die by the hand of this
		// process's own Run, which kills a node's group when its leader
		// exits; the nodes themselves can only be killed by ReapStale.
		if i%2 == 0 && !slices.Contains(got.Runs[0].Killed, p.pid) {
			t.Errorf("killed %v, missing node %d", got.Runs[0].Killed, p.pid)
		}
	}
	if len(got.Runs[0].Foreign) > 0 {
		t.Errorf("foreign %v, want none", got.Runs[0].Foreign)
	}
	for _, n := range nodes {
		waitExited(t, n)
		if e, _ := n.LastExit(); e.Expected || e.Signal != "killed" {
			t.Errorf("node %s: %+v", n.Name(), e)
		}
	}
	if _, err := os.Stat(r.Dir()); !os.IsNotExist(err) {
		t.Errorf("run directory still there: %v", err)
	}
}

// A runner killed with SIGKILL runs no cleanup: Pdeathsig takes its nodes
// down, and ReapStale kills what they forked and removes the directory.
func TestRunnerKilled(t *testing.T) {
	state := t.TempDir()
	runner, rep := startRunner(t, state)
	var nodes []proc
	for _, pid := range rep.Nodes {
		nodes = append(nodes, procOf(t, pid))
	}
	child := procOf(t, rep.Child)

	if err := runner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	runner.Wait()
	eventually(t, 10*time.Second, "Pdeathsig killed every node", func() bool {
		return !slices.ContainsFunc(nodes, proc.alive)
	})
	// Pdeathsig reaches direct children only: what a node forked lives on.
	if !child.alive() {
		t.Fatal("the node's child died too; the test no longer shows that ReapStale is needed")
	}

	got, err := ReapStale(context.Background(), state, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runs) != 1 || got.Runs[0].ID != rep.ID || !got.Runs[0].Removed ||
		!slices.Equal(got.Runs[0].Killed, []int{child.pid}) {
		t.Fatalf("reaped %+v, want run %s removed and %d killed", got, rep.ID, child.pid)
	}
	if child.alive() {
		t.Error("the node's child survived ReapStale")
	}
	if _, err := os.Stat(rep.Dir); !os.IsNotExist(err) {
		t.Errorf("run directory still there: %v", err)
	}
	if left := scanRunProcesses(map[string]bool{rep.ID: true}); len(left[rep.ID]) > 0 {
		t.Errorf("processes of the run left: %v", left[rep.ID])
	}
}

func startRunner(t *testing.T, state string) (*exec.Cmd, runnerReport) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(helperEnviron("runner"), "PROCESS_TEST_STATE="+state)
	cmd.Stderr = t.Output()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	reports := make(chan runnerReport, 1)
	go func() {
		var rep runnerReport
		if line, err := bufio.NewReader(stdout).ReadBytes('\n'); err == nil && json.Unmarshal(line, &rep) == nil {
			reports <- rep
		}
		close(reports)
	}()
	select {
	case rep, ok := <-reports:
		if !ok {
			t.Fatal("runner failed before reporting")
		}
		return cmd, rep
	case <-time.After(30 * time.Second):
		t.Fatal("runner did not report")
	}
	panic("unreachable")
}
