package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// Consistency modes an etcd workload can ask for.
const (
	ConsistencyLinearizable = "linearizable" // the default
	ConsistencySerializable = "serializable"
)

// DefaultOpTimeout bounds an operation when ClientOptions.Timeout is zero.
const DefaultOpTimeout = 5 * time.Second

// What clientv3 v3.5 retries on its own, and what this package does about it
// (read from client/v3@v3.5.17: client.go, options.go, retry.go,
// retry_interceptor.go):
//
//   - Every connection carries clientv3's unary retry interceptor with
//     Config.MaxUnaryRetries attempts, 100 when left at 0. Reads (Range,
//     hence Get) use the "repeatable" policy and are re-sent on any
//     codes.Unavailable, which includes etcd's own "no leader", "leader
//     changed" and "request timed out" answers: a linearizable Get during an
//     election would quietly wait out the election and succeed. Writes use
//     the "nonRepeatable" policy and are re-sent only on two pre-connection
//     messages that grpc-go no longer produces. Independently of the policy
//     the loop re-sends any call that failed with DeadlineExceeded or
//     Canceled while the caller's context is still live (a server-side
//     deadline that fired first). The retry options that would turn this off
//     per call are unexported, but the interceptor loops `for attempt <
//     max`, so MaxUnaryRetries = 1 means exactly one attempt for every
//     unary call, reads and writes alike. The runner's own connections
//     (status, readiness, read-back) use that; a workload's clients keep
//     clientv3's default unless the scenario declares `retries`, since
//     that is what a service using clientv3 gets: a read refused during
//     an election is re-sent every 25 ms until it succeeds or its timeout
//     ends, and shows up as latency, not as an error.
//   - Streams (Watch, LeaseKeepAlive) get no retries by default; this
//     package opens none.
//   - clientv3 adds grpc.WaitForReady(true) to every call: when no
//     connection of the client is ready, a call waits (until its timeout)
//     for one instead of failing at once. That queues the request before it
//     is sent; it never sends it twice. With every endpoint down an op
//     therefore ends as a timeout rather than a connection error.
//   - grpc-go itself may transparently re-send a call that never reached
//     the server (the stream was refused before any byte was processed).
//     That cannot be turned off and cannot apply a write twice.
//   - No auth is configured, so the token-refresh retry never runs, and
//     AutoSyncInterval stays 0, so the endpoint list never changes.
const maxUnaryAttempts = 1

// client is a stores.Client over a fixed set of clientv3 connections.
type client struct {
	conns        []*clientv3.Client
	timeout      time.Duration
	serializable bool

	// members names the member behind a response header's member ID. It
	// is filled in the background, so that no measured operation waits
	// for a member list.
	members  memberIndex
	asked    atomic.Int64 // UnixNano of the last member list asked for
	stopBg   context.CancelFunc
	bgCtx    context.Context
	bgAsking sync.WaitGroup
}

// memberListEvery is how often an unknown member ID may cause another
// member list.
const memberListEvery = time.Second

// NewClient opens opts.Conns connections (at least one) to the cluster at
// opts.Endpoints; each balances its requests over every endpoint. Dialing
// does not block, so a client can be made while members are down; ctx only
// cancels the setup, the connections outlive it. Do bounds an operation
// whose context has no deadline by opts.Timeout (DefaultOpTimeout if zero);
// a deadline already on the context, or a caller that times its ops out
// itself (stores.WithCallerTimeout), is left as it is.
func NewClient(ctx context.Context, opts stores.ClientOptions) (stores.Client, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("etcd client: no endpoints")
	}
	switch opts.Consistency {
	case "", ConsistencyLinearizable, ConsistencySerializable:
	default:
		return nil, fmt.Errorf("etcd client: consistency %q: want %q or %q", opts.Consistency, ConsistencyLinearizable, ConsistencySerializable)
	}
	n := max(opts.Conns, 1)
	c := &client{
		timeout:      opts.Timeout,
		serializable: opts.Consistency == ConsistencySerializable,
	}
	c.bgCtx, c.stopBg = context.WithCancel(context.Background())
	if c.timeout <= 0 {
		c.timeout = DefaultOpTimeout
	}
	urls := clientURLs(opts.Endpoints)
	for i := range n {
		if err := ctx.Err(); err != nil {
			c.Close()
			return nil, fmt.Errorf("etcd client: %w", err)
		}
		// Rotating the endpoint order spreads the connections' first
		// picks over the members instead of all starting on node 1.
		rotated := append(append([]string(nil), urls[i%len(urls):]...), urls[:i%len(urls)]...)
		cfg := workloadConfig(rotated, opts.DialFunc(), opts.Workload.Client)
		if opts.Workload.Client.LeaderRequired() {
			cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(requireLeader))
		}
		cli, err := clientv3.New(cfg)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("etcd client: connection %d of %d: %w", i+1, n, err)
		}
		c.conns = append(c.conns, cli)
	}
	c.learnMembers(c.conns[0])
	return c, nil
}

// learnMembers asks, in the background, for the membership over cli's
// connection, unless that was asked for less than memberListEvery ago.
func (c *client) learnMembers(cli *clientv3.Client) {
	now := time.Now().UnixNano()
	last := c.asked.Load()
	if now-last < int64(memberListEvery) || !c.asked.CompareAndSwap(last, now) {
		return
	}
	c.bgAsking.Go(func() {
		ctx, cancel := context.WithTimeout(c.bgCtx, memberListEvery)
		defer cancel()
		// A failure is retried at the next unknown ID.
		_ = c.members.refresh(ctx, cli.ActiveConnection())
	})
}

// nodeOf is the node index of the member that wrote h, 0 if not known yet.
func (c *client) nodeOf(cli *clientv3.Client, h *pb.ResponseHeader) int {
	id := h.GetMemberId()
	if id == 0 {
		return 0
	}
	n, ok := c.members.node(id)
	if !ok {
		c.learnMembers(cli)
	}
	return n
}

// workloadConfig is the configuration of a workload's connections:
// clientv3's defaults (no keepalive, gRPC's reconnect backoff of 1 s
// growing to 120 s, the retries of its retry policy) except where the
// scenario declares otherwise, so that a fault hits the clients as it
// hits a service using clientv3.
func workloadConfig(endpoints []string, dial stores.DialFunc, c plan.ClientSpec) clientv3.Config {
	cfg := clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second, // only while dialing, which does not block here
		DialKeepAliveTime:    c.KeepaliveTime.D(),
		DialKeepAliveTimeout: c.KeepaliveTimeout.D(),
		Logger:               zap.NewNop(), // results carry the errors
	}
	if c.Retries != nil {
		// clientv3 counts attempts, and reads 0 as its default.
		cfg.MaxUnaryRetries = uint(*c.Retries) + 1
	}
	if c.ReconnectBackoffMax > 0 {
		b := backoff.DefaultConfig
		b.MaxDelay = c.ReconnectBackoffMax.D()
		cfg.DialOptions = append(cfg.DialOptions, grpc.WithConnectParams(grpc.ConnectParams{Backoff: b, MinConnectTimeout: 20 * time.Second}))
	}
	if dial != nil {
		cfg.DialOptions = append(cfg.DialOptions, grpc.WithContextDialer(dial))
	}
	return cfg
}

// ClientSettings describes the settings a workload's connections run
// with, defaults named as such, for results.json and the report.
func ClientSettings(c plan.ClientSpec) map[string]string {
	s := map[string]string{
		"keepalive_time":        "off (clientv3 default)",
		"keepalive_timeout":     "-",
		"reconnect_backoff_max": "120s (gRPC default: 1s, x1.6, jitter 0.2)",
		"retries":               "99 (clientv3 default: reads refused as unavailable are re-sent every 25 ms within the timeout; writes only if never sent)",
		"balancing":             "round robin over the endpoints (clientv3 default)",
		"require_leader":        "false (clientv3 default: a member without a leader holds requests until a leader or their timeout)",
	}
	if c.LeaderRequired() {
		s["require_leader"] = "true (writes and linearizable reads are refused at once by a member without a leader)"
	}
	if c.KeepaliveTime > 0 {
		s["keepalive_time"] = c.KeepaliveTime.String()
		s["keepalive_timeout"] = "20s (gRPC default; also TCP_USER_TIMEOUT)"
		if c.KeepaliveTimeout > 0 {
			s["keepalive_timeout"] = c.KeepaliveTimeout.String() + " (also TCP_USER_TIMEOUT)"
		}
	}
	if c.ReconnectBackoffMax > 0 {
		s["reconnect_backoff_max"] = c.ReconnectBackoffMax.String()
	}
	switch {
	case c.Retries == nil:
	case *c.Retries == 0:
		s["retries"] = "0: each operation is sent once"
	default:
		s["retries"] = fmt.Sprintf("%d (reads refused as unavailable re-sent every 25 ms within the timeout; writes only if never sent)", *c.Retries)
	}
	return s
}

// clientConfig is the configuration of the runner's own connections (the
// leader poller, readiness, the read-back of acknowledged writes): tuned
// to notice a member that is paused, cut off or restarted within seconds,
// since those are instruments, not the clients under test. dial, if not
// nil, opens every connection.
func clientConfig(endpoints []string, dial stores.DialFunc) clientv3.Config {
	cfg := clientv3.Config{
		Endpoints: endpoints,
		// Only used while dialing, which does not block here.
		DialTimeout: 5 * time.Second,
		// Detects a member that is paused or cut off while requests are
		// in flight. etcd's default --grpc-keepalive-min-time is 5 s and
		// pings without a stream are refused, so ping no more often than
		// that and only under load.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		MaxUnaryRetries:      maxUnaryAttempts,
		// clientv3 logs each failed attempt at warn; under a fault that is
		// a line per failed op. Results carry the errors instead.
		Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{
			// grpc's default reconnect backoff grows to 120 s, so a
			// member restarted after a long kill would stay unused for
			// minutes. Recovery time is what scenarios measure: retry
			// the connection at least every second.
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff: backoff.Config{
					BaseDelay:  50 * time.Millisecond,
					Multiplier: 1.6,
					Jitter:     0.2,
					MaxDelay:   time.Second,
				},
				MinConnectTimeout: 2 * time.Second,
			}),
		},
	}
	if dial != nil {
		cfg.DialOptions = append(cfg.DialOptions, grpc.WithContextDialer(dial))
	}
	return cfg
}

func clientURLs(eps []stores.Endpoint) []string {
	urls := make([]string, len(eps))
	for i, ep := range eps {
		urls[i] = "http://" + ep.ClientAddr
	}
	return urls
}

// valueString is v as the string clientv3 takes, without copying it:
// stores.Op's Value is never modified once sent, and a copy of every
// value was an allocation and a copy per write at 5,000 writes a second.
func valueString(v []byte) string { return unsafe.String(unsafe.SliceData(v), len(v)) }

// Do runs op once on the connection of op.Client. The per-op timeout applies
// unless the op is bounded already (stores.OpContext): the workload engine
// times out its ops itself, without a deadline the store would see.
func (c *client) Do(ctx context.Context, op stores.Op) stores.Result {
	cli := c.conns[uint(op.Client)%uint(len(c.conns))]
	ctx, cancel := stores.OpContext(ctx, c.timeout)
	defer cancel()

	var res stores.Result
	var err error
	var header *pb.ResponseHeader
	switch op.Kind {
	case plan.OpPut:
		var resp *clientv3.PutResponse
		resp, err = cli.Put(ctx, op.Key, valueString(op.Value))
		if err == nil {
			header = resp.Header
		}
	case plan.OpGet:
		var resp *clientv3.GetResponse
		resp, err = cli.Get(ctx, op.Key, c.readOpts()...)
		if err == nil {
			header = resp.Header
			if len(resp.Kvs) > 0 {
				res.Found = true
				res.Value = resp.Kvs[0].Value
			}
		}
	case plan.OpDelete:
		var resp *clientv3.DeleteResponse
		resp, err = cli.Delete(ctx, op.Key)
		if err == nil {
			header = resp.Header
		}
	case plan.OpRange:
		opts := c.readOpts()
		if op.End == "" {
			opts = append(opts, clientv3.WithPrefix())
		} else {
			opts = append(opts, clientv3.WithRange(op.End))
		}
		if op.Limit > 0 {
			opts = append(opts, clientv3.WithLimit(int64(op.Limit)))
		}
		var resp *clientv3.GetResponse
		resp, err = cli.Get(ctx, op.Key, opts...)
		if err == nil {
			header = resp.Header
			res.Count = len(resp.Kvs)
		}
	case plan.OpTxn:
		v := valueString(op.Value)
		// One round trip that reads the key's version and writes in
		// either branch: the cost of a compare-and-swap without its
		// contention failures, so every txn is a write.
		var resp *clientv3.TxnResponse
		resp, err = cli.Txn(ctx).
			If(clientv3.Compare(clientv3.Version(op.Key), ">", 0)).
			Then(clientv3.OpPut(op.Key, v)).
			Else(clientv3.OpPut(op.Key, v)).
			Commit()
		if err == nil {
			header = resp.Header
			res.Found = resp.Succeeded
		}
	default:
		err = fmt.Errorf("unsupported operation (etcd supports %s)", strings.Join(plan.AllOps, ", "))
	}
	if header != nil {
		res.Node = c.nodeOf(cli, header)
	}
	if err != nil {
		res.Err = fmt.Errorf("etcd %s: %w", op.Kind, err)
		res.Class = Classify(err)
	}
	return res
}

// leader makes a member without a leader refuse the request at once with
// ErrNoLeader instead of holding it until the request times out, so that a
// leaderless cluster shows up as "unavailable" rather than as latency.
func leader(ctx context.Context) context.Context {
	return clientv3.WithRequireLeader(ctx)
}

// requireLeader is leader for the workload's connections, applied by the
// request instead of by the caller: writes and linearizable reads require
// a leader, and a serializable read, answered from the member's own state,
// does not (staying available without a leader is the reason to ask for
// one). It appends to the outgoing metadata where clientv3.WithRequireLeader
// creates a map that clientv3 then copies twice (once to read it, once to
// add its API version) on every request, a measurable share of the client's
// CPU at thousands of requests a second.
func requireLeader(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	switch r := req.(type) {
	case *pb.PutRequest, *pb.DeleteRangeRequest, *pb.TxnRequest:
		ctx = metadata.AppendToOutgoingContext(ctx, rpctypes.MetadataRequireLeaderKey, rpctypes.MetadataHasLeader)
	case *pb.RangeRequest:
		if !r.Serializable {
			ctx = metadata.AppendToOutgoingContext(ctx, rpctypes.MetadataRequireLeaderKey, rpctypes.MetadataHasLeader)
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *client) readOpts() []clientv3.OpOption {
	if c.serializable {
		return []clientv3.OpOption{clientv3.WithSerializable()}
	}
	return nil
}

// Close closes every connection. Ops sent afterwards fail; closing twice is
// harmless.
func (c *client) Close() error {
	c.stopBg()
	c.bgAsking.Wait()
	var errs []error
	for _, cli := range c.conns {
		if err := cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Classify puts a failed operation's error into one of plan.ErrorClasses:
//
//   - timeout: the client gave up waiting (its deadline or the server's
//     "request timed out"), or abandoned the op; the outcome is unknown.
//   - unavailable: a member answered that it cannot serve now: no leader,
//     leader changed, stopping, too many requests, unhealthy.
//   - connection: the request did not get an answer because a connection
//     was refused, reset or closed.
//   - other: anything else (invalid request, space quota, ...).
func Classify(err error) string {
	if err == nil {
		return ""
	}
	// Context errors first: clientv3 returns the caller's context error
	// when a call fails because that context ended.
	if stores.Abandoned(err) {
		return plan.ErrTimeout
	}

	// Answers from an etcd member arrive as rpctypes.EtcdError once
	// clientv3 has converted them, or as a gRPC status that
	// rpctypes.Error converts by its registered description.
	st, isStatus := grpcStatus(err)
	var ee rpctypes.EtcdError
	isEtcd := errors.As(err, &ee)
	if !isEtcd && isStatus {
		ee, isEtcd = rpctypes.Error(st.Err()).(rpctypes.EtcdError)
	}
	if isEtcd {
		switch ee {
		case rpctypes.ErrTimeout, rpctypes.ErrTimeoutWaitAppliedIndex:
			// The member gave up waiting for the request to be
			// applied; it may still be.
			return plan.ErrTimeout
		case rpctypes.ErrNotLeader, rpctypes.ErrMemberNotEnoughStarted, rpctypes.ErrTooManyRequests:
			return plan.ErrUnavailable
		}
		switch ee.Code() {
		case codes.DeadlineExceeded, codes.Canceled:
			return plan.ErrTimeout
		case codes.Unavailable:
			// ErrNoLeader, ErrLeaderChanged, ErrTimeoutDueToLeaderFail,
			// ErrStopped, ErrUnhealthy, ...: a member refusing for now.
			return plan.ErrUnavailable
		}
		return plan.ErrOther
	}

	if isStatus {
		switch st.Code() {
		case codes.DeadlineExceeded, codes.Canceled:
			return plan.ErrTimeout
		case codes.Unavailable:
			// gRPC reports every transport failure (connection refused,
			// reset, EOF, "transport is closing") as Unavailable with only
			// a message to tell them apart, and etcd's own refusals carry
			// the same code. Known etcd refusals were matched by type
			// above; one that a newer server words differently still
			// starts with etcd's "etcdserver:" prefix. This and the
			// dropped proposal below are the only places that look at a
			// message.
			if strings.HasPrefix(st.Message(), "etcdserver:") {
				return plan.ErrUnavailable
			}
			return plan.ErrConnection
		case codes.Unknown:
			// raft's ErrProposalDropped, which etcd 3.5 passes on
			// unconverted: a leader drops writes while it hands its
			// office over, or while its uncommitted log is over its
			// limit. A member refusing for now, as ErrNoLeader is.
			if st.Message() == raftProposalDropped {
				return plan.ErrUnavailable
			}
		}
		return plan.ErrOther
	}
	// Errors from below gRPC, should one surface unwrapped.
	if errors.Is(err, clientv3.ErrNoAvailableEndpoints) {
		return plan.ErrConnection
	}
	if class := stores.NetworkClass(err); class != "" {
		return class
	}
	return plan.ErrOther
}

// raftProposalDropped is the text of raft's ErrProposalDropped.
const raftProposalDropped = "raft proposal dropped"

// grpcStatus finds a gRPC status in err's chain. Unlike status.FromError it
// keeps the status's own message rather than the wrapped error's text.
func grpcStatus(err error) (*status.Status, bool) {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		if st := se.GRPCStatus(); st != nil {
			return st, true
		}
	}
	return nil, false
}
