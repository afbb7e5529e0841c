package process

import (
	"context"
	"os/exec"
	"runtime"
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// spawnLoop starts every node of the run from one goroutine locked to its
// OS thread. Pdeathsig fires when the *thread* that forked a child exits, not
// the process; the Go runtime terminates a thread whenever a goroutine exits
// while locked to it (code that switches network namespaces does exactly
// that to discard a tainted thread), so a node forked from an arbitrary
// thread could be SIGKILLed at a random moment. This thread runs nothing but
// forks and lives as long as the run.
//
// The thread is never unlocked: when the loop returns at the end of Close,
// the thread exits and the kernel SIGKILLs anything still alive that was
// started from it, a last line of defence behind Close's own kill.
func (r *Run) spawnLoop() {
	runtime.LockOSThread()
	defer close(r.spawnDone)
	for {
		select {
		case req := <-r.spawnReqs:
			req.done <- req.cmd.Start()
		case <-r.spawnQuit:
			return
		}
	}
}

// spawn starts cmd on the run's spawner thread.
func (r *Run) spawn(ctx context.Context, cmd *exec.Cmd) error {
	req := spawnReq{cmd: cmd, done: make(chan error, 1)}
	select {
	case r.spawnReqs <- req:
	case <-r.spawnDone:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// No ctx here: once handed over the fork is quick, and giving up on it
	// would lose track of a process that may already be running.
	return <-req.done
}
