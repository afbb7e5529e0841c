//go:build !linux

package hrsleep

import "context"

// New returns a runtime timer: timerfds are Linux only.
func New(ctx context.Context) Sleeper { return NewTimer(ctx) }

// NewDual returns a runtime timer: timerfds are Linux only.
func NewDual(ctx context.Context) Sleeper { return NewTimer(ctx) }
