package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/coordlab/scenario/plan"
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

		{"context deadline", context.DeadlineExceeded, plan.ErrTimeout},
		{"wrapped context deadline", fmt.Errorf("etcd put: %w", context.DeadlineExceeded), plan.ErrTimeout},
		{"canceled", context.Canceled, plan.ErrTimeout},
		{"grpc deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), plan.ErrTimeout},
		{"etcd deadline", rpctypes.ErrGRPCDeadlineExceeded, plan.ErrTimeout},
		{"server request timed out", rpctypes.ErrTimeout, plan.ErrTimeout},
		{"server request timed out, raw status", rpctypes.ErrGRPCTimeout, plan.ErrTimeout},
		{"net timeout", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, plan.ErrTimeout},

		{"no leader", rpctypes.ErrNoLeader, plan.ErrUnavailable},
		{"no leader, raw status", rpctypes.ErrGRPCNoLeader, plan.ErrUnavailable},
		{"no leader, wrapped raw status", fmt.Errorf("etcd get: %w", rpctypes.ErrGRPCNoLeader), plan.ErrUnavailable},
		{"no leader, wrapped", fmt.Errorf("etcd get: %w", rpctypes.ErrNoLeader), plan.ErrUnavailable},
		{"leader changed", rpctypes.ErrLeaderChanged, plan.ErrUnavailable},
		{"timeout due to leader fail", rpctypes.ErrTimeoutDueToLeaderFail, plan.ErrUnavailable},
		{"timeout due to connection lost", rpctypes.ErrTimeoutDueToConnectionLost, plan.ErrUnavailable},
		{"server stopped", rpctypes.ErrStopped, plan.ErrUnavailable},
		{"unhealthy", rpctypes.ErrUnhealthy, plan.ErrUnavailable},
		{"too many requests", rpctypes.ErrTooManyRequests, plan.ErrUnavailable},
		{"not leader", rpctypes.ErrNotLeader, plan.ErrUnavailable},
		{"learner", rpctypes.ErrGPRCNotSupportedForLearner, plan.ErrUnavailable},
		{"unknown etcd refusal", status.Error(codes.Unavailable, "etcdserver: something new"), plan.ErrUnavailable},
		{"raft proposal dropped", fmt.Errorf("etcd put: %w", status.Error(codes.Unknown, "raft proposal dropped")), plan.ErrUnavailable},

		{"grpc connection refused", status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), plan.ErrConnection},
		{"grpc EOF", status.Error(codes.Unavailable, "error reading from server: EOF"), plan.ErrConnection},
		{"grpc transport closing", fmt.Errorf("etcd put: %w", status.Error(codes.Unavailable, "transport is closing")), plan.ErrConnection},
		{"dial refused", refused, plan.ErrConnection},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), plan.ErrConnection},
		{"eof", io.EOF, plan.ErrConnection},
		{"unexpected eof", io.ErrUnexpectedEOF, plan.ErrConnection},
		{"closed", net.ErrClosed, plan.ErrConnection},
		{"no endpoints", clientv3.ErrNoAvailableEndpoints, plan.ErrConnection},

		{"space quota", rpctypes.ErrNoSpace, plan.ErrOther},
		{"compacted", rpctypes.ErrCompacted, plan.ErrOther},
		{"too large", rpctypes.ErrRequestTooLarge, plan.ErrOther},
		{"too large, raw status", rpctypes.ErrGRPCRequestTooLarge, plan.ErrOther},
		{"corrupt", rpctypes.ErrCorrupt, plan.ErrOther},
		{"grpc invalid argument", status.Error(codes.InvalidArgument, "bad"), plan.ErrOther},
		{"grpc unknown", status.Error(codes.Unknown, "no leader"), plan.ErrOther},
		{"plain error", errors.New("no leader"), plan.ErrOther},
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
	for _, kind := range []string{plan.OpPut, plan.OpGet} {
		start := time.Now()
		res := cli.Do(context.Background(), stores.Op{Kind: kind, Key: "k", Value: []byte("v")})
		took := time.Since(start)
		if res.Err == nil || res.Class != plan.ErrTimeout {
			t.Errorf("%s: %v (class %q), want a timeout", kind, res.Err, res.Class)
		}
		if took > 2*time.Second {
			t.Errorf("%s took %s with a 300ms timeout", kind, took)
		}
	}
	res := cli.Do(context.Background(), stores.Op{Kind: "scan", Key: "k"})
	if res.Err == nil || res.Class != plan.ErrOther {
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

func TestRequireLeaderInterceptor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		req  any
		want bool
	}{
		{"put", &pb.PutRequest{}, true},
		{"delete", &pb.DeleteRangeRequest{}, true},
		{"txn", &pb.TxnRequest{}, true},
		{"linearizable read", &pb.RangeRequest{}, true},
		{"serializable read", &pb.RangeRequest{Serializable: true}, false},
		{"member list", &pb.MemberListRequest{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// As clientv3 hands it on: its API version already attached.
			ctx := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(rpctypes.MetadataClientAPIVersionKey, "3.5"))
			var sent metadata.MD
			invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				sent, _ = metadata.FromOutgoingContext(ctx)
				return nil
			}
			if err := requireLeader(ctx, "/m", tc.req, nil, nil, invoker); err != nil {
				t.Fatal(err)
			}
			got := slices.Equal(sent.Get(rpctypes.MetadataRequireLeaderKey), []string{rpctypes.MetadataHasLeader})
			if got != tc.want || len(sent.Get(rpctypes.MetadataClientAPIVersionKey)) != 1 {
				t.Errorf("sent metadata %v: want require-leader %v and the API version kept", sent, tc.want)
			}
		})
	}
}
