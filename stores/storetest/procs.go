package storetest

import (
	"os/exec"
	"syscall"
	"testing"
)

// Pauser is TransferToPausedContract's pause for a test cluster whose live
// processes are procs, by node: it stops (SIGSTOP) or resumes (SIGCONT) one.
func Pauser(t *testing.T, procs map[int]*exec.Cmd) func(n int, stop bool) {
	return func(n int, stop bool) {
		sig := syscall.SIGCONT
		if stop {
			sig = syscall.SIGSTOP
		}
		if cmd, ok := procs[n]; !ok {
			t.Errorf("pause n%d: not running", n)
		} else if err := cmd.Process.Signal(sig); err != nil {
			t.Errorf("signal n%d: %v", n, err)
		}
	}
}

// Kill SIGKILLs node n of a test cluster whose live processes are procs,
// by node, reaps it and takes it out of procs. A node not in procs is
// down already.
func Kill(t *testing.T, procs map[int]*exec.Cmd, n int) {
	t.Helper()
	cmd, ok := procs[n]
	if !ok {
		return
	}
	delete(procs, n)
	if err := cmd.Process.Kill(); err != nil {
		t.Errorf("kill n%d: %v", n, err)
	}
	_ = cmd.Wait() // "signal: killed" is the expected outcome
}
