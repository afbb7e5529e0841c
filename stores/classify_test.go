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

	"github.com/coordlab/scenario/dsl"
)

func TestClassifyShared(t *testing.T) {
	tests := []struct {
		err       error
		abandoned bool
		class     string
	}{
		{context.DeadlineExceeded, true, dsl.ErrTimeout}, // it is a net.Error that times out
		{fmt.Errorf("put: %w", context.Canceled), true, ""},
		{os.ErrDeadlineExceeded, true, dsl.ErrTimeout},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false, dsl.ErrConnection},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), false, dsl.ErrConnection},
		{syscall.EHOSTUNREACH, false, dsl.ErrConnection},
		{io.ErrUnexpectedEOF, false, dsl.ErrConnection},
		{net.ErrClosed, false, dsl.ErrConnection},
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
