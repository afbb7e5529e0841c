//go:build !linux

package uring

// Ring is unavailable on this OS: New always fails.
type Ring struct{}

// New returns ErrUnsupported.
func New(entries int) (*Ring, error) { return nil, ErrUnsupported }

// Size is 0.
func (r *Ring) Size() int { return 0 }

// Reads is never called: New returns no Ring.
func (r *Ring) Reads(fd int, bufs [][]byte, res []int) error { return ErrUnsupported }

// Close does nothing.
func (r *Ring) Close() error { return nil }
