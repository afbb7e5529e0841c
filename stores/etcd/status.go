package etcd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// StatusPoller asks every member of one cluster for its status, over one
// long-lived connection per member, so that polling every 100 ms costs one
// small RPC per member rather than a new connection each time. It is safe
// for concurrent use.
type StatusPoller struct {
	eps     []stores.Endpoint
	clients []*clientv3.Client // clients[i] talks to eps[i] only
	members memberIndex
}

// NewStatusPoller connects to every endpoint. Dialing does not block: a
// member that is down simply fails its polls until it is back.
func NewStatusPoller(eps []stores.Endpoint) (*StatusPoller, error) {
	if len(eps) == 0 {
		return nil, errors.New("etcd status: no endpoints")
	}
	p := &StatusPoller{eps: eps}
	for _, ep := range eps {
		cli, err := clientv3.New(clientConfig(clientURLs([]stores.Endpoint{ep}), ep.Dial))
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("etcd status: connect to %s: %w", plan.NodeName(ep.Node), err)
		}
		p.clients = append(p.clients, cli)
	}
	return p, nil
}

// Poll asks every member at once, each bounded by timeout (if positive)
// and ctx, and returns what each said in endpoint order. A member that does
// not answer in time has Err set.
func (p *StatusPoller) Poll(ctx context.Context, timeout time.Duration) []stores.NodeStatus {
	return stores.PollEach(ctx, len(p.eps), timeout, p.poll)
}

// PollNode asks the member at index i of the endpoints alone.
func (p *StatusPoller) PollNode(ctx context.Context, i int) stores.NodeStatus {
	return stores.Stamp(p.poll(ctx, i))
}

func (p *StatusPoller) poll(ctx context.Context, i int) stores.NodeStatus {
	ep, conn := p.eps[i], p.clients[i].ActiveConnection()
	ns := stores.NodeStatus{Node: ep.Node}
	// The raw gRPC client, not clientv3's Maintenance.Status, which dials
	// a fresh connection for every call. Without clientv3's WaitForReady
	// a member that is down fails at once instead of using up the timeout.
	resp, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
	if err != nil {
		ns.Err = fmt.Errorf("etcd status of %s (%s): %w", plan.NodeName(ep.Node), ep.ClientAddr, clientv3.ContextError(ctx, err))
		return ns
	}
	ns.Term = resp.RaftTerm
	self := resp.Header.GetMemberId()
	p.members.learn(self, ep.Node)
	if resp.Leader == 0 {
		// raft forgets the leader as it campaigns (pre-vote included)
		// and as it votes in a newer term.
		ns.Electing = true
		return ns
	}
	ns.IsLeader = resp.Leader == self
	if ns.IsLeader {
		ns.Leader = ep.Node
		return ns
	}
	if n, ok := p.members.node(resp.Leader); ok {
		ns.Leader = n
		return ns
	}
	// A leader this poller has not heard from yet: ask the member for the
	// membership.
	if err := p.members.refresh(ctx, conn); err != nil {
		ns.Err = fmt.Errorf("etcd status of %s: leader %x is not a known member: %w", plan.NodeName(ep.Node), resp.Leader, err)
		return ns
	}
	if n, ok := p.members.node(resp.Leader); ok {
		ns.Leader = n
		return ns
	}
	ns.Err = fmt.Errorf("etcd status of %s: leader %x is not a member named like n1, n2, ...", plan.NodeName(ep.Node), resp.Leader)
	return ns
}

// memberIndex maps etcd member IDs to node indexes. The zero value is
// ready to use and safe for concurrent use. Every response of every client
// looks a member up, while the membership is learnt a handful of times a
// run, so lookups read an immutable map without a lock and learning
// replaces it.
type memberIndex struct {
	mu    sync.Mutex                     // serialises learners
	nodes atomic.Pointer[map[uint64]int] // etcd member ID -> 1-based node index
}

func (m *memberIndex) learn(id uint64, node int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var old map[uint64]int
	if p := m.nodes.Load(); p != nil {
		old = *p
	}
	if n, ok := old[id]; ok && n == node {
		return
	}
	next := make(map[uint64]int, len(old)+1)
	maps.Copy(next, old)
	next[id] = node
	m.nodes.Store(&next)
}

func (m *memberIndex) node(id uint64) (int, bool) {
	p := m.nodes.Load()
	if p == nil {
		return 0, false
	}
	n, ok := (*p)[id]
	return n, ok
}

// id is the etcd member ID learnt for node, the inverse of node.
func (m *memberIndex) id(node int) (uint64, bool) {
	p := m.nodes.Load()
	if p == nil {
		return 0, false
	}
	for id, n := range *p {
		if n == node {
			return id, true
		}
	}
	return 0, false
}

// refresh asks the member behind conn for the membership. A serializable
// member list needs no leader and no quorum.
func (m *memberIndex) refresh(ctx context.Context, conn *grpc.ClientConn) error {
	resp, err := pb.NewClusterClient(conn).MemberList(ctx, &pb.MemberListRequest{})
	if err != nil {
		return fmt.Errorf("member list: %w", clientv3.ContextError(ctx, err))
	}
	for _, mb := range resp.Members {
		if n, ok := nodeIndex(mb.Name); ok {
			m.learn(mb.ID, n)
		}
	}
	return nil
}

// nodeIndex inverts plan.NodeName.
func nodeIndex(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "n")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || plan.NodeName(n) != name {
		return 0, false
	}
	return n, true
}

// Close closes every connection. Polls made afterwards report errors;
// closing twice is harmless.
func (p *StatusPoller) Close() error {
	var errs []error
	for _, cli := range p.clients {
		if err := cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Status asks every member once, over connections made for the purpose.
// A runner that polls repeatedly should keep a StatusPoller instead.
func Status(ctx context.Context, eps []stores.Endpoint, timeout time.Duration) []stores.NodeStatus {
	p, err := NewStatusPoller(eps)
	if err != nil {
		out := make([]stores.NodeStatus, len(eps))
		for i, ep := range eps {
			out[i] = stores.NodeStatus{Node: ep.Node, Err: err}
		}
		return out
	}
	defer p.Close()
	return p.Poll(ctx, timeout)
}

// WaitReady waits, up to timeout, until every member answers Status and all
// of them name the same leader, which itself says it leads. The error names
// the members that did not answer or disagreed at the last poll.
func WaitReady(ctx context.Context, eps []stores.Endpoint, timeout time.Duration) error {
	p, err := NewStatusPoller(eps)
	if err != nil {
		return err
	}
	defer p.Close()
	return stores.WaitReady(ctx, timeout, "etcd cluster", func(ctx context.Context, each time.Duration) string {
		return stores.LeaderAgreement(p.Poll(ctx, each))
	})
}
