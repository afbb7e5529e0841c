package stores

import (
	"context"
	"time"
)

type callerTimeoutKey struct{}

// WithCallerTimeout marks ctx as one whose caller cancels each op at its
// own timeout, so that a driver adds no deadline of its own. The workload
// engine does this instead of a deadline per op, which gRPC would send to
// the store as a grpc-timeout header and the store would arm a timer for.
func WithCallerTimeout(ctx context.Context) context.Context {
	return context.WithValue(ctx, callerTimeoutKey{}, true)
}

// OpContext returns ctx bounded by timeout, unless the op is bounded
// already: ctx has a deadline or its caller times it out (WithCallerTimeout).
// Call cancel when the op returns.
func OpContext(ctx context.Context, timeout time.Duration) (_ context.Context, cancel context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, noCancel
	}
	if timed, _ := ctx.Value(callerTimeoutKey{}).(bool); timed {
		return ctx, noCancel
	}
	return context.WithTimeout(ctx, timeout)
}

func noCancel() {}
