//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/runner/process"
)

// TestReapCommandLine covers what reap prints and exits with, on a state
// directory that holds nothing of a killed run and on bad command lines.
// The docker, blkio and network namespace reapers look at the whole host,
// as they do at the start of every run: what a killed runner of another
// test left there is removed too.
func TestReapCommandLine(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr *regexp.Regexp
	}{
		{name: "missing state dir", args: []string{"reap", "--state-dir", filepath.Join(t.TempDir(), "none")}, code: exitOK},
		{name: "empty state dir", args: []string{"reap", "--state-dir", t.TempDir()}, code: exitOK},
		{name: "an argument", args: []string{"reap", "extra"}, code: exitInvalid,
			stderr: regexp.MustCompile(`unknown command "extra" for "scenario reap"|accepts 0 arg`)},
		{name: "unknown flag", args: []string{"reap", "--bogus"}, code: exitInvalid,
			stderr: regexp.MustCompile(`unknown flag: --bogus`)},
		{name: "kube flag without --kubernetes", args: []string{"reap", "--state-dir", t.TempDir(), "--kube-context", "kind-x"}, code: exitInvalid,
			stderr: regexp.MustCompile(`--kube-context is used only with --kubernetes`)},
		{name: "missing kubeconfig", args: []string{"reap", "--state-dir", t.TempDir(), "--kubernetes", "--kubeconfig", filepath.Join(t.TempDir(), "none")}, code: exitCheckFailed,
			stderr: regexp.MustCompile(`(?m)^Error: reap kubernetes namespaces: kubeconfig: `)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if tt.stderr != nil && !tt.stderr.MatchString(stderr) {
				t.Errorf("stderr does not match %s:\n%s", tt.stderr, stderr)
			}
			if tt.code != exitOK {
				return
			}
			if stdout != "nothing to remove\n" {
				// A killed runner elsewhere on the host left something:
				// never a run of this empty state directory.
				if strings.Contains(stdout, "run(s)") {
					t.Fatalf("reaped runs of an empty state directory:\n%s", stdout)
				}
				// It is gone now.
				if code, stdout, stderr = run(t, tt.args...); code != exitOK || stdout != "nothing to remove\n" {
					t.Errorf("second reap: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
			}
		})
	}
}

// TestReapStaleRun lays out a run as a runner killed with SIGKILL leaves
// it (its owner gone, its node alive and carrying the run id) and checks
// that reap kills the node, removes the workspace and says so, and that a
// live run beside it is left alone.
func TestReapStaleRun(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("needs sleep(1)")
	}
	state := t.TempDir()
	pidns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}

	// The owner: a process that has exited. Its start time cannot match a
	// later process that reuses the pid.
	owner := cliCommand("version")
	if err := owner.Run(); err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("%d 1 %s\n", owner.Process.Pid, pidns)
	id, dir := fakeRun(t, state, 0, dead)

	// Its node, still running, as Pdeathsig would not have stopped what a
	// node forked.
	node := exec.Command(sleep, "60")
	node.Env = append(os.Environ(), process.EnvRunID+"="+id)
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		node.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		node.Process.Kill()
		<-exited
	})
	if err := os.WriteFile(filepath.Join(dir, "nodes", "n1", "pid"), []byte(strconv.Itoa(node.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// A live run: this process owns it.
	start, err := selfStart()
	if err != nil {
		t.Fatal(err)
	}
	_, liveDir := fakeRun(t, state, 1, fmt.Sprintf("%d %s %s\n", os.Getpid(), start, pidns))

	code, stdout, stderr := run(t, "reap", "--state-dir", state)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "cleaned up 1 run(s) left behind by an earlier, killed scenario\n") {
		t.Errorf("reap did not report the run:\n%s", stdout)
	}
	if strings.Contains(stdout, "nothing to remove") {
		t.Errorf("reap says nothing to remove:\n%s", stdout)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the killed run's directory is still there: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Errorf("the killed run's node is still running")
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("the live run's directory: %v", err)
	}

	// Once is enough.
	if code, stdout, _ := run(t, "reap", "--state-dir", state); code != exitOK || strings.Contains(stdout, "run(s)") {
		t.Errorf("second reap: exit %d, stdout:\n%s", code, stdout)
	}
}

// fakeRun makes a run directory under state as process.NewRun lays it
// out, with the owner record given; seq keeps ids made in one second apart.
func fakeRun(t *testing.T, state string, seq int, owner string) (id, dir string) {
	t.Helper()
	id = fmt.Sprintf("%s-%06x", time.Now().UTC().Format("20060102T150405"), 0xab0000+seq)
	dir = filepath.Join(state, "runs", id)
	if err := os.MkdirAll(filepath.Join(dir, "nodes", "n1", "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(owner), 0o600); err != nil {
		t.Fatal(err)
	}
	return id, dir
}

// selfStart returns this process's start time (field 22 of
// /proc/self/stat), which process records in its runs' owner files.
func selfStart() (string, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return "", err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return "", fmt.Errorf("/proc/self/stat: %q", s)
	}
	return f[19], nil
}
