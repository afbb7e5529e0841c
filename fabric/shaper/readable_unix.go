//go:build unix

package shaper

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// pollSet tells which of a set of descriptors have something to read,
// without waiting (poll(2) with a zero timeout).
type pollSet struct{ pfds []unix.PollFd }

// set makes fds the set.
func (p *pollSet) set(fds []int32) {
	p.pfds = p.pfds[:0]
	for _, fd := range fds {
		p.pfds = append(p.pfds, unix.PollFd{Fd: fd, Events: unix.POLLIN})
	}
}

// readable sets ready[i] to whether the set's i-th descriptor has
// something to read.
func (p *pollSet) readable(ready []bool) error {
	for {
		_, err := unix.Poll(p.pfds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	for i := range p.pfds {
		ready[i] = p.pfds[i].Revents&unix.POLLIN != 0
	}
	return nil
}

// watchedRead reads one frame from rc into b, as an *os.File's Read does,
// and marks wait parked while it waits on the runtime's poller.
func watchedRead(rc syscall.RawConn, wait *readerWait) func([]byte) (int, error) {
	return func(b []byte) (int, error) {
		var (
			n       int
			readErr error
		)
		err := rc.Read(func(fd uintptr) bool {
			wait.parked.Store(false)
			for {
				n, readErr = unix.Read(int(fd), b)
				if readErr != unix.EINTR {
					break
				}
			}
			if readErr == unix.EAGAIN {
				wait.parked.Store(true)
				return false
			}
			return true
		})
		if err == nil {
			err = readErr
		}
		return max(n, 0), err
	}
}
