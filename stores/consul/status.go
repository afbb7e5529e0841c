package consul

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// StatusPoller asks every server of one cluster for its raft state, over
// one long-lived HTTP client per server, so that polling every 100 ms
// reuses a connection rather than opening one each time. It is safe for
// concurrent use.
type StatusPoller struct {
	eps     []stores.Endpoint
	clients []*http.Client // clients[i] talks to eps[i] only
	peers   map[netip.AddrPort]int
}

// NewStatusPoller prepares a client per endpoint. Nothing is dialed yet: a
// server that is down simply fails its polls until it is back.
func NewStatusPoller(eps []stores.Endpoint) (*StatusPoller, error) {
	if len(eps) == 0 {
		return nil, errors.New("consul status: no endpoints")
	}
	p := &StatusPoller{eps: eps, peers: make(map[netip.AddrPort]int)}
	for _, ep := range eps {
		if _, _, err := net.SplitHostPort(ep.ClientAddr); err != nil {
			return nil, fmt.Errorf("consul status: %s HTTP address %q: %w", plan.NodeName(ep.Node), ep.ClientAddr, err)
		}
		// A leader is named by its server (raft) address; a peer
		// address that is no ip:port simply never matches.
		if ap, err := netip.ParseAddrPort(ep.PeerAddr); err == nil {
			p.peers[normalize(ap)] = ep.Node
		}
		// Two connections: a poll may overlap the previous one when a
		// server is slow.
		p.clients = append(p.clients, &http.Client{Transport: newTransport(ep.Dial, 2)})
	}
	return p, nil
}

// agentSelf is the part of GET /v1/agent/self this package reads:
// Stats.raft is hashicorp/raft's Stats() (state "Leader", "Follower",
// "Candidate", "Shutdown"; term), Stats.consul has leader_addr, the
// server's raft.Leader().
type agentSelf struct {
	Stats struct {
		Consul map[string]string `json:"consul"`
		Raft   map[string]string `json:"raft"`
	} `json:"Stats"`
}

// Poll asks every server at once, each bounded by timeout (if positive)
// and ctx, and returns what each said in endpoint order. A server that does
// not answer in time has Err set.
func (p *StatusPoller) Poll(ctx context.Context, timeout time.Duration) []stores.NodeStatus {
	return stores.PollEach(ctx, len(p.eps), timeout, p.poll)
}

// PollNode asks the server at index i of the endpoints alone.
func (p *StatusPoller) PollNode(ctx context.Context, i int) stores.NodeStatus {
	return stores.Stamp(p.poll(ctx, i))
}

// poll asks one server. Its raft state, term and leader come from one
// answer, /v1/agent/self, so they describe one moment; /v1/status/leader
// would be a second request and could straddle an election. Only a server
// whose stats lack leader_addr is asked /v1/status/leader.
func (p *StatusPoller) poll(ctx context.Context, i int) stores.NodeStatus {
	ep := p.eps[i]
	ns := stores.NodeStatus{Node: ep.Node}
	fail := func(err error) stores.NodeStatus {
		ns.Err = fmt.Errorf("consul status of %s (%s): %w", plan.NodeName(ep.Node), ep.ClientAddr, err)
		return ns
	}
	var self agentSelf
	if err := p.get(ctx, i, "/v1/agent/self", &self); err != nil {
		return fail(err)
	}
	raft := self.Stats.Raft
	if raft == nil {
		return fail(errors.New("no raft stats: the agent is not a server"))
	}
	ns.IsLeader = raft["state"] == "Leader"
	if t, ok := raft["term"]; ok {
		term, err := strconv.ParseUint(t, 10, 64)
		if err != nil {
			return fail(fmt.Errorf("raft term %q: %w", t, err))
		}
		ns.Term = term
	}
	leaderAddr, ok := self.Stats.Consul["leader_addr"]
	if !ok {
		if err := p.get(ctx, i, "/v1/status/leader", &leaderAddr); err != nil {
			return fail(err)
		}
	}
	leader, err := p.leaderNode(leaderAddr)
	if err != nil {
		return fail(err)
	}
	ns.Leader = leader
	ns.Electing = raft["state"] == "Candidate" || (!ns.IsLeader && leader == 0)
	return ns
}

// leaderNode maps a leader's server address ("ip:port"; "" when there is
// no leader) to its 1-based node, 0 for none.
func (p *StatusPoller) leaderNode(addr string) (int, error) {
	if addr == "" {
		return 0, nil
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return 0, fmt.Errorf("leader address %q: %w", addr, err)
	}
	n, ok := p.peers[normalize(ap)]
	if !ok {
		return 0, fmt.Errorf("leader %s is none of the servers' addresses", addr)
	}
	return n, nil
}

// normalize makes an IPv4-mapped IPv6 address compare equal to its IPv4.
func normalize(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// get fetches path from server i into out as JSON.
func (p *StatusPoller) get(ctx context.Context, i int, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.eps[i].ClientAddr+path, nil)
	if err != nil {
		return err
	}
	resp, err := p.clients[i].Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	// Drain what the decoder left so the connection is reused.
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}

// Close drops every idle connection. Polls made afterwards still work, on
// new connections; closing twice is harmless.
func (p *StatusPoller) Close() error {
	for _, c := range p.clients {
		c.CloseIdleConnections()
	}
	return nil
}

// WaitReady waits, up to timeout, until every server answers and all of
// them name the same leader, which itself says it leads. The error names
// the servers that did not answer or disagreed at the last poll.
func WaitReady(ctx context.Context, eps []stores.Endpoint, timeout time.Duration) error {
	p, err := NewStatusPoller(eps)
	if err != nil {
		return err
	}
	defer p.Close()
	return stores.WaitReady(ctx, timeout, "consul cluster", func(ctx context.Context, each time.Duration) string {
		if why := stores.LeaderAgreement(p.Poll(ctx, each)); why != "" {
			return why
		}
		return p.catalogMissing(ctx, each)
	})
}

// catalogMissing says which servers the catalog does not list yet, asking
// the first server that answers. The leader adds each server's node to the
// catalog shortly after its election, and until then Consul refuses a
// session made through that server ("Missing node registration"): a
// cluster is ready for sessions, and so for registries and locks, only
// once every server is listed.
func (p *StatusPoller) catalogMissing(ctx context.Context, timeout time.Duration) string {
	var last error
	for i, ep := range p.eps {
		var nodes []struct{ Node string }
		qctx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			qctx, cancel = context.WithTimeout(ctx, timeout)
		}
		err := p.get(qctx, i, "/v1/catalog/nodes", &nodes)
		cancel()
		if err != nil {
			last = fmt.Errorf("%s: %w", plan.NodeName(ep.Node), err)
			continue
		}
		listed := map[string]bool{}
		for _, n := range nodes {
			listed[n.Node] = true
		}
		var missing []string
		for _, e := range p.eps {
			if !listed[plan.NodeName(e.Node)] {
				missing = append(missing, plan.NodeName(e.Node))
			}
		}
		if len(missing) > 0 {
			return "the catalog does not list " + strings.Join(missing, ", ") + " yet"
		}
		return ""
	}
	return fmt.Sprintf("no server answered a catalog query (%v)", last)
}
