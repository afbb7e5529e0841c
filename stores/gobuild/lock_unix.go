//go:build unix

package gobuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// LockFile takes an exclusive flock on path, polling so that ctx can cancel
// the wait, and calls waiting once if someone else holds it. flock locks
// belong to an open file description, so they exclude other goroutines of
// this process as well as other processes, and the kernel drops them when a
// holder dies.
func LockFile(ctx context.Context, path string, waiting func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	fd := int(f.Fd())
	told := false
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(fd, syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !told {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
