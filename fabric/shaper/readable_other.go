//go:build !unix

package shaper

import "errors"

// pollSet is not available here: readers wait for the runtime's poller
// alone.
type pollSet struct{}

func (p *pollSet) set([]int32) {}

func (p *pollSet) readable([]bool) error { return errors.New("poll(2) is not available") }
