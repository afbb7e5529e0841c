package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/stores"
)

func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},

		{"context deadline", context.DeadlineExceeded, dsl.ErrTimeout},
		{"wrapped context deadline", fmt.Errorf("etcd put: %w", context.DeadlineExceeded), dsl.ErrTimeout},
		{"canceled", context.Canceled, dsl.ErrTimeout},
		{"grpc deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), dsl.ErrTimeout},
		{"etcd deadline", rpctypes.ErrGRPCDeadlineExceeded, dsl.ErrTimeout},
		{"server request timed out", rpctypes.ErrTimeout, dsl.ErrTimeout},
		{"server request timed out, raw status", rpctypes.ErrGRPCTimeout, dsl.ErrTimeout},
		{"net timeout", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, dsl.ErrTimeout},

		{"no leader", rpctypes.ErrNoLeader, dsl.ErrUnavailable},
		{"no leader, raw status", rpctypes.ErrGRPCNoLeader, dsl.ErrUnavailable},
		{"no leader, wrapped raw status", fmt.Errorf("etcd get: %w", rpctypes.ErrGRPCNoLeader), dsl.ErrUnavailable},
		{"no leader, wrapped", fmt.Errorf("etcd get: %w", rpctypes.ErrNoLeader), dsl.ErrUnavailable},
		{"leader changed", rpctypes.ErrLeaderChanged, dsl.ErrUnavailable},
		{"timeout due to leader fail", rpctypes.ErrTimeoutDueToLeaderFail, dsl.ErrUnavailable},
		{"timeout due to connection lost", rpctypes.ErrTimeoutDueToConnectionLost, dsl.ErrUnavailable},
		{"server stopped", rpctypes.ErrStopped, dsl.ErrUnavailable},
		{"unhealthy", rpctypes.ErrUnhealthy, dsl.ErrUnavailable},
		{"too many requests", rpctypes.ErrTooManyRequests, dsl.ErrUnavailable},
		{"not leader", rpctypes.ErrNotLeader, dsl.ErrUnavailable},
		{"learner", rpctypes.ErrGPRCNotSupportedForLearner, dsl.ErrUnavailable},
		{"unknown etcd refusal", status.Error(codes.Unavailable, "etcdserver: something new"), dsl.ErrUnavailable},

		{"grpc connection refused", status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), dsl.ErrConnection},
		{"grpc EOF", status.Error(codes.Unavailable, "error reading from server: EOF"), dsl.ErrConnection},
		{"grpc transport closing", fmt.Errorf("etcd put: %w", status.Error(codes.Unavailable, "transport is closing")), dsl.ErrConnection},
		{"dial refused", refused, dsl.ErrConnection},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), dsl.ErrConnection},
		{"eof", io.EOF, dsl.ErrConnection},
		{"unexpected eof", io.ErrUnexpectedEOF, dsl.ErrConnection},
		{"closed", net.ErrClosed, dsl.ErrConnection},
		{"no endpoints", clientv3.ErrNoAvailableEndpoints, dsl.ErrConnection},

		{"space quota", rpctypes.ErrNoSpace, dsl.ErrOther},
		{"compacted", rpctypes.ErrCompacted, dsl.ErrOther},
		{"too large", rpctypes.ErrRequestTooLarge, dsl.ErrOther},
		{"too large, raw status", rpctypes.ErrGRPCRequestTooLarge, dsl.ErrOther},
		{"corrupt", rpctypes.ErrCorrupt, dsl.ErrOther},
		{"grpc invalid argument", status.Error(codes.InvalidArgument, "bad"), dsl.ErrOther},
		{"grpc unknown", status.Error(codes.Unknown, "no leader"), dsl.ErrOther},
		{"plain error", errors.New("no leader"), dsl.ErrOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// With every member down a client can still be made, and an op fails once,
// as a timeout, after its own timeout rather than clientv3's retries.
func TestClientWithNoMemberUp(t *testing.T) {
	eps := []stores.Endpoint{{Node: 1, ClientAddr: freeAddr(t)}, {Node: 2, ClientAddr: freeAddr(t)}}
	cli, err := NewClient(context.Background(), stores.ClientOptions{Endpoints: eps, Conns: 2, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("NewClient with no member up: %v", err)
	}
	defer cli.Close()
	for _, kind := range []string{dsl.OpPut, dsl.OpGet} {
		start := time.Now()
		res := cli.Do(context.Background(), stores.Op{Kind: kind, Key: "k", Value: []byte("v")})
		took := time.Since(start)
		if res.Err == nil || res.Class != dsl.ErrTimeout {
			t.Errorf("%s: %v (class %q), want a timeout", kind, res.Err, res.Class)
		}
		if took > 2*time.Second {
			t.Errorf("%s took %s with a 300ms timeout", kind, took)
		}
	}
	res := cli.Do(context.Background(), stores.Op{Kind: "scan", Key: "k"})
	if res.Err == nil || res.Class != dsl.ErrOther {
		t.Errorf("unknown op: %v (class %q), want class other", res.Err, res.Class)
	}
}

func TestNewClientRejects(t *testing.T) {
	if _, err := NewClient(context.Background(), stores.ClientOptions{}); err == nil {
		t.Error("no endpoints accepted")
	}
	eps := []stores.Endpoint{{Node: 1, ClientAddr: "127.0.0.1:1"}}
	if _, err := NewClient(context.Background(), stores.ClientOptions{Endpoints: eps, Consistency: "stale"}); err == nil {
		t.Error("consistency \"stale\" accepted")
	}
}
