package stores

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/coordlab/scenario/plan"
)

// Abandoned reports whether err is the caller giving up: its context ended
// (deadline or cancel) or a connection deadline passed. The op may or may
// not have been applied, so every driver classifies it as a timeout, and
// checks it first: clients wrap it in their own errors.
func Abandoned(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, context.Canceled)
}

// NetworkClass classifies errors from below a store's protocol: a
// connection refused, reset, closed or unreachable is plan.ErrConnection, a
// network timeout plan.ErrTimeout. It returns "" for anything else, which
// the driver classifies itself.
func NetworkClass(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed):
		return plan.ErrConnection
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return plan.ErrTimeout
	}
	return ""
}
