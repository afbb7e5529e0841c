//go:build linux

package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	iproc "github.com/coordlab/scenario/internal/proc"
)

func platformSupported() error { return nil }

// sysProcAttr puts the node in its own process group, so one signal reaches
// everything it forks, and asks the kernel to SIGKILL it when the thread that
// started it exits: that covers a runner killed with SIGKILL, which runs no
// cleanup code at all. Pdeathsig reaches only the direct child; anything a
// node forks itself is left to ReapStale, which finds it by its environment.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func unixSignal(s sig) syscall.Signal {
	switch s {
	case sigKill:
		return syscall.SIGKILL
	case sigTerm:
		return syscall.SIGTERM
	case sigStop:
		return syscall.SIGSTOP
	case sigCont:
		return syscall.SIGCONT
	}
	panic(fmt.Sprintf("process: unknown signal %d", s))
}

// signalGroup signals the process group that p leads. The caller guarantees
// p is not reaped yet, so the group id cannot name anyone else's group. If p
// moved itself to another group and left its own empty, p is signalled on
// its own, through its pidfd.
func signalGroup(p *os.Process, s sig) error {
	err := syscall.Kill(-p.Pid, unixSignal(s))
	if errors.Is(err, syscall.ESRCH) {
		err = p.Signal(unixSignal(s))
		if errors.Is(err, os.ErrProcessDone) {
			return nil
		}
	}
	return err
}

// waitExitNoReap blocks until pid has exited but leaves it a zombie. While
// the zombie exists neither its pid nor its process group id can be reused,
// which makes it safe to kill what is left of the group before reaping.
func waitExitNoReap(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// exitSignal names the signal that ended a process, or "" if it exited.
func exitSignal(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}

// identity names a process in a way a recycled pid cannot fake: the start
// time (in clock ticks since boot) differs for every process that ever held
// the pid, and the pid namespace says which pid table the number belongs to.
type identity struct {
	pid   int
	start string
	pidns string
}

func selfIdentity() (identity, error) {
	pid := os.Getpid()
	_, start, err := procStat(pid)
	if err != nil {
		return identity{}, err
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return identity{}, err
	}
	return identity{pid: pid, start: start, pidns: ns}, nil
}

// ownerAlive reports whether the process that wrote id still runs. An owner
// in another pid namespace cannot be checked from here, so it counts as
// alive: leaving a run alone is always the safe mistake.
func ownerAlive(id identity) bool {
	if id.pidns != "" {
		ns, err := os.Readlink("/proc/self/ns/pid")
		if err != nil || ns != id.pidns {
			return true
		}
	}
	state, start, err := procStat(id.pid)
	if err != nil {
		return false
	}
	return start == id.start && state != 'Z' && state != 'X'
}

// procStat returns the state letter and start time of pid.
func procStat(pid int) (state byte, start string, err error) {
	st, err := readStat(pid)
	return st.state, st.start, err
}

type stat struct {
	state byte
	pgrp  int
	start string
}

// readStat parses /proc/<pid>/stat. The command name is skipped by its last
// ')', since the name itself may hold spaces and parentheses.
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	// Fields after the name start at field 3 (state); pgrp is field 5 and
	// starttime field 22.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return stat{}, fmt.Errorf("parse /proc/%d/stat: pgrp: %w", pid, err)
	}
	return stat{state: f[0][0], pgrp: pgrp, start: f[19]}, nil
}

// waitGroupGone waits until no live process other than the leader is left
// in process group pgid. Signals are delivered at once but a process takes
// a moment to die, and the ones the leader forked are not our children, so
// /proc is the only way to see them go. The caller keeps the leader a
// zombie, which keeps the group id from being reused meanwhile.
func waitGroupGone(pgid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of group %d still alive after %v", left, pgid, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func groupMembers(pgid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var left []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pgid {
			continue
		}
		st, err := readStat(pid)
		if err == nil && st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			left = append(left, pid)
		}
	}
	return left
}

// runIDOf returns the run id in pid's environment ("" if none). The
// environment is what the process was exec'd with, inherited by all it
// forks; a process of another user reads as an error, so as not ours.
func runIDOf(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", err
	}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(EnvRunID+"=")); ok {
			return string(v), nil
		}
	}
	return "", nil
}

// scanRunProcesses lists, for each of the given run ids, the live processes
// whose environment carries it. It is how ReapStale finds what a pid file
// never named: a node started just before its runner died, or a process
// a node forked itself.
func scanRunProcesses(ids map[string]bool) map[string][]int {
	found := make(map[string][]int)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return found
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		id, err := runIDOf(pid)
		if err == nil && ids[id] {
			found[id] = append(found[id], pid)
		}
	}
	return found
}

// killResult says what killVerified did with one pid.
type killResult int

const (
	killGone    killResult = iota // no such process (any more)
	killForeign                   // alive, but not a process of the run: left alone
	killKilled                    // verified, killed and seen dead
)

// killVerified SIGKILLs pid only if it belongs to run id, and waits until it
// is dead. It holds a pidfd across the check and the kill: a pidfd names one
// process, never a later holder of the same pid, so if the process exits and
// its pid is reused between the environment check and the signal, the signal
// fails with ESRCH instead of reaching the newcomer.
func killVerified(ctx context.Context, pid int, id string) (killResult, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return killGone, nil
	}
	if err != nil {
		return killGone, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)

	got, err := runIDOf(pid)
	if err != nil || got != id {
		// An exited process reads as an empty environment or an error;
		// one that is alive and unreadable belongs to another user.
		if errors.Is(err, fs.ErrNotExist) || exited(fd) {
			return killGone, nil
		}
		// A dying process reads as empty too, once the kernel has freed its
		// memory but before it is a zombie: another killer (a node's
		// group kill) got there first. Give it a moment to finish.
		if err == nil && got == "" && settled(ctx, fd) {
			return killGone, nil
		}
		return killForeign, nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return killGone, nil
		}
		return killForeign, fmt.Errorf("kill %d: %w", pid, err)
	}
	if err := waitPidfd(ctx, fd); err != nil {
		return killKilled, fmt.Errorf("wait for %d to die: %w", pid, err)
	}
	return killKilled, nil
}

// exited reports whether the process behind fd has exited.
func exited(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// exitSettle bounds how long a process seen mid-exit may take to finish.
const exitSettle = 2 * time.Second

// settled reports whether the process behind fd exits within exitSettle.
func settled(ctx context.Context, fd int) bool {
	ctx, cancel := context.WithTimeout(ctx, exitSettle)
	defer cancel()
	return iproc.WaitPidfd(ctx, fd) == nil
}

// waitPidfd waits, up to reapTimeout, until the process behind fd has
// exited.
func waitPidfd(ctx context.Context, fd int) error {
	ctx, cancel := context.WithTimeout(ctx, reapTimeout)
	defer cancel()
	return iproc.WaitPidfd(ctx, fd)
}

// checkPrivateDir refuses a state directory someone else could have planted
// or could write to: under /tmp another user may create /tmp/scenario-<uid>
// first, and we remove trees and kill processes based on what is in it.
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("state dir %s is not a directory", dir)
	case ok && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("state dir %s belongs to uid %d, not %d", dir, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("state dir %s is writable by others (mode %v)", dir, fi.Mode().Perm())
	}
	return nil
}

// reservePort holds port p for this process, machine-wide: a Unix socket
// bound to a name in the abstract namespace that only one socket can hold.
// The kernel frees it when the socket closes or the process dies, and
// leaves no file behind, as a lock file would. The abstract namespace
// belongs to the network namespace, as the port does.
func reservePort(p int) (io.Closer, error) {
	return net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "@coordlab-scenario-port-" + strconv.Itoa(p), Net: "unixgram"})
}
