// Package proc holds what several packages need to know about processes by
// pid, and nothing else.
package proc

import (
	"context"
	"errors"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Alive reports whether a process with this pid exists. It does not tell a
// reused pid from the original: callers use it on pids recorded in names
// they created, where a reuse only delays a cleanup until the pid is free.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// WaitPidfd waits until the process behind the pidfd fd has exited, or ctx
// ends. A pidfd polls readable at exit, before the process is reaped, and
// works for processes that are not our children, which cannot be reaped
// from here anyway.
func WaitPidfd(ctx context.Context, fd int) error {
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 20)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		if n > 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// ParseCgroups reads /proc/PID/cgroup: the path of the process's group in
// each controller's hierarchy, "" naming the unified (v2) one.
func ParseCgroups(b []byte) map[string]string {
	groups := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			groups[c] = f[2]
		}
	}
	return groups
}
