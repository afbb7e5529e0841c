//go:build !linux

package shaper

import "context"

func newSleeper(ctx context.Context, coarse bool) sleeper { return newTimerSleeper(ctx) }
