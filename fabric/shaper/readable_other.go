//go:build !unix

package shaper

import (
	"errors"
	"syscall"
)

// pollSet is not available here: readers wait for the runtime's poller
// alone.
type pollSet struct{}

func (p *pollSet) set([]int32) {}

func (p *pollSet) readable([]bool) error { return errors.New("poll(2) is not available") }

// watchedRead is nil here: readers read with the device's own Read.
func watchedRead(syscall.RawConn, *readerWait) func([]byte) (int, error) { return nil }
