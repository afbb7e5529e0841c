// Package proc holds what several packages need to know about processes by
// pid, and nothing else.
package proc

import (
	"errors"
	"syscall"
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
