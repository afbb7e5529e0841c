// Package stores holds what every store driver shares: the operations a
// workload sends, how their failures are classified, and the interface a
// driver's client implements. One sub-package per store knows how to launch
// its nodes and talk to them; none of them knows about phases or faults.
package stores

import (
	"context"
	"net"
	"slices"
	"time"

	"github.com/coordlab/scenario/plan"
)

// Op is one request a workload sends.
type Op struct {
	Kind string // plan.OpPut, plan.OpGet, ...
	Key  string
	// Value is what a put or txn writes. It must not be modified once the
	// op is handed to Do: a client may send it without copying it, and a
	// timed-out request may still sit in a send queue after Do returned.
	Value []byte
	End   string // range: exclusive end key; empty means a prefix range on Key
	Limit int    // range: maximum keys returned, 0 = no limit
	// Client is the id of the workload client sending the op. A store
	// client with several connections sends each client's ops over one of
	// them, as etcd's benchmark pins its clients: spreading one client's
	// requests over every connection costs measurably more CPU per request.
	Client int
}

// Result is what came back. Err is nil on success; on failure Class says why.
type Result struct {
	Found bool   // get: the key existed
	Value []byte // get: the value read
	Count int    // range: keys returned
	Err   error
	Class string // one of plan.ErrorClasses when Err != nil
	// Node is the 1-based index of the member that answered, the one the
	// client's connection talked to (not the leader it may have forwarded
	// to); 0 when no member answered or the client cannot tell.
	Node int
}

// Client sends operations to one cluster, as one workload's connections.
// Do is safe for concurrent use. It retries a failed operation only as the
// store's client library does, by default or as the workload's client
// block declares. It bounds an op by ClientOptions.Timeout unless its
// context is bounded already (OpContext).
type Client interface {
	Do(ctx context.Context, op Op) Result
	Close() error
}

// NodeStatus is what a node reports about itself and its view of the leader.
type NodeStatus struct {
	Node     int    // 1-based index of the node asked
	IsLeader bool   // this node is the leader
	Leader   int    // 1-based index of the leader it knows, 0 if none
	Term     uint64 // raft term, zxid epoch, ... (store specific, monotonic)
	// Electing says the node answered that it knows no leader: its
	// election timer fired and it campaigns, or it voted in a newer term,
	// or (ZooKeeper) it has no quorum and looks for one. Observers take it
	// as the first sign that the leadership may move, often before any
	// node stops leading.
	Electing bool
	Err      error // the node did not answer
	// At is when the answer arrived (zero with Err). A poll that waits
	// on a paused or overloaded node answers with the state at its end,
	// not its start: observers time states by it.
	At time.Time
}

// Endpoint is how to reach one node.
type Endpoint struct {
	Node       int    // 1-based
	ClientAddr string // host:port for clients
	PeerAddr   string // host:port for peers
	// Extra are further host:port addresses the node listens on, in the
	// order its driver lists them: ZooKeeper's leader-election port,
	// Consul's Serf LAN gossip port. Empty for etcd.
	Extra []string
	// Dial opens connections to ClientAddr when the node is not reachable
	// from the runner's own network (it lives in a network namespace);
	// nil dials directly.
	Dial DialFunc
}

// EndpointIndex is the index in eps of node's endpoint, -1 when it has
// none.
func EndpointIndex(eps []Endpoint, node int) int {
	return slices.IndexFunc(eps, func(ep Endpoint) bool { return ep.Node == node })
}

// DialFunc opens a TCP connection to addr (host:port), for example from
// inside a network namespace.
type DialFunc func(ctx context.Context, addr string) (net.Conn, error)

// Status polls every node once and returns what each said.
type StatusFunc func(ctx context.Context, timeout time.Duration) []NodeStatus

// ClientOptions configure a workload's client.
type ClientOptions struct {
	// Dial opens the client's connections, from the workload's region;
	// nil uses the endpoints' own Dial.
	Dial        DialFunc
	Endpoints   []Endpoint
	Conns       int
	Consistency string
	Timeout     time.Duration // per operation not bounded by its caller (see OpContext; the runner's engine times out its own)
	Workload    plan.WorkloadSpec
}

// DialFunc picks how the client's connections are opened: its own Dial,
// else the endpoints' (all endpoints of a cluster share one), else nil for
// a direct dial.
func (o ClientOptions) DialFunc() DialFunc {
	if o.Dial != nil {
		return o.Dial
	}
	for _, ep := range o.Endpoints {
		if ep.Dial != nil {
			return ep.Dial
		}
	}
	return nil
}
