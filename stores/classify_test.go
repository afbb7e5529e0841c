package stores

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/coordlab/scenario/plan"
)

func TestClassifyShared(t *testing.T) {
	tests := []struct {
		err       error
		abandoned bool
		class     string
	}{
		{context.DeadlineExceeded, true, plan.ErrTimeout}, // it is a net.Error that times out
		{fmt.Errorf("put: %w", context.Canceled), true, ""},
		{os.ErrDeadlineExceeded, true, plan.ErrTimeout},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false, plan.ErrConnection},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), false, plan.ErrConnection},
		{syscall.EHOSTUNREACH, false, plan.ErrConnection},
		{io.ErrUnexpectedEOF, false, plan.ErrConnection},
		{net.ErrClosed, false, plan.ErrConnection},
		{errors.New("no leader"), false, ""},
	}
	for _, tt := range tests {
		if got := Abandoned(tt.err); got != tt.abandoned {
			t.Errorf("Abandoned(%v) = %v, want %v", tt.err, got, tt.abandoned)
		}
		if got := NetworkClass(tt.err); got != tt.class {
			t.Errorf("NetworkClass(%v) = %q, want %q", tt.err, got, tt.class)
		}
	}
}
