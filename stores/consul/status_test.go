package consul

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/stores"
)

func TestLeaderNode(t *testing.T) {
	p, err := NewStatusPoller([]stores.Endpoint{
		{Node: 1, ClientAddr: "127.0.0.1:10500", PeerAddr: "127.0.0.1:10300"},
		{Node: 2, ClientAddr: "127.0.0.1:20500", PeerAddr: "127.0.0.1:20300"},
		{Node: 3, ClientAddr: "10.99.0.3:8500", PeerAddr: "10.99.0.3:8300"},
		{Node: 4, ClientAddr: "[::1]:8500", PeerAddr: "[::1]:8300"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tests := []struct {
		addr string
		want int
		err  string
	}{
		{"", 0, ""},
		{"127.0.0.1:10300", 1, ""},
		{"127.0.0.1:20300", 2, ""},
		{"10.99.0.3:8300", 3, ""},
		{"[::ffff:10.99.0.3]:8300", 3, ""},
		{"[::1]:8300", 4, ""},
		{"127.0.0.1:10500", 0, "none of the servers"}, // an HTTP port is no server address
		{"127.0.0.1:8300", 0, "none of the servers"},
		{"n1", 0, "leader address"},
	}
	for _, tt := range tests {
		got, err := p.leaderNode(tt.addr)
		if got != tt.want || (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("leaderNode(%q) = %d, %v; want %d, error %q", tt.addr, got, err, tt.want, tt.err)
		}
	}
}

// fakeAgent serves /v1/agent/self with the given raft stats.
type fakeAgent struct {
	*httptest.Server
	mu                    sync.Mutex
	state, term, leader   string
	noLeaderAddr, noStats bool
	statusLeaderRequested bool
}

func newFakeAgent(t *testing.T, state, term, leader string) *fakeAgent {
	a := &fakeAgent{state: state, term: term, leader: leader}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		switch r.URL.Path {
		case "/v1/agent/self":
			if a.noStats {
				fmt.Fprint(w, `{"Config":{"Server":false},"Stats":{"agent":{"checks":"0"}}}`)
				return
			}
			leaderAddr := fmt.Sprintf(`,"leader_addr":%q`, a.leader)
			if a.noLeaderAddr {
				leaderAddr = ""
			}
			// The real answer is much larger; the poller reads two maps.
			fmt.Fprintf(w, `{"Config":{"Datacenter":"dc1","NodeName":"x"},"DebugConfig":{"Big":[1,2,3]},"Stats":{"consul":{"server":"true"%s},"raft":{"state":%q,"term":%q,"num_peers":"2"}},"Member":{}}`,
				leaderAddr, a.state, a.term)
		case "/v1/status/leader":
			a.statusLeaderRequested = true
			fmt.Fprintf(w, "%q", a.leader)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *fakeAgent) set(f func(*fakeAgent)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(a)
}

func TestPoll(t *testing.T) {
	// The fake agents' HTTP addresses stand in for ClientAddr; their
	// server addresses are made up, as a real leader_addr names them.
	a1 := newFakeAgent(t, "Follower", "4", "127.0.0.1:10300")
	a2 := newFakeAgent(t, "Leader", "4", "127.0.0.1:10300")
	a3 := newFakeAgent(t, "Candidate", "5", "")
	eps := []stores.Endpoint{
		{Node: 1, ClientAddr: strings.TrimPrefix(a1.URL, "http://"), PeerAddr: "127.0.0.1:20300"},
		{Node: 2, ClientAddr: strings.TrimPrefix(a2.URL, "http://"), PeerAddr: "127.0.0.1:10300"},
		{Node: 3, ClientAddr: strings.TrimPrefix(a3.URL, "http://"), PeerAddr: "127.0.0.1:30300"},
		{Node: 4, ClientAddr: freeAddr(t), PeerAddr: "127.0.0.1:40300"},
	}
	p, err := NewStatusPoller(eps)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	asked := time.Now()
	sts := p.Poll(context.Background(), time.Second)
	answered := time.Now()
	want := []stores.NodeStatus{
		{Node: 1, Leader: 2, Term: 4},
		{Node: 2, Leader: 2, Term: 4, IsLeader: true},
		{Node: 3, Leader: 0, Term: 5, Electing: true},
	}
	for i, w := range want {
		got := sts[i]
		if got.At.Before(asked) || got.At.After(answered) {
			t.Errorf("status of n%d answered at %v, not between the question (%v) and the end of the poll (%v)", i+1, got.At, asked, answered)
		}
		got.At = time.Time{}
		if got != w {
			t.Errorf("status of n%d = %+v, want %+v", i+1, got, w)
		}
	}
	if !sts[3].At.IsZero() {
		t.Errorf("a node that did not answer has an answer time: %+v", sts[3])
	}
	if e := sts[3].Err; e == nil || !strings.Contains(e.Error(), "consul status of n4 ("+eps[3].ClientAddr+")") {
		t.Errorf("status of a node nobody serves: %+v", sts[3])
	}
	if a1.statusLeaderRequested {
		t.Error("asked /v1/status/leader although agent/self had leader_addr")
	}

	// Without leader_addr in the stats the poller asks /v1/status/leader.
	a1.set(func(a *fakeAgent) { a.noLeaderAddr = true })
	if s := p.Poll(context.Background(), time.Second)[0]; s.Err != nil || s.Leader != 2 || !a1.statusLeaderRequested {
		t.Errorf("fallback to /v1/status/leader: %+v, asked %v", s, a1.statusLeaderRequested)
	}
	// Answers that cannot be a server's are errors naming the node.
	for _, tt := range []struct {
		f    func(*fakeAgent)
		want string
	}{
		{func(a *fakeAgent) { a.noLeaderAddr = false; a.leader = "127.0.0.1:9" }, "none of the servers"},
		{func(a *fakeAgent) { a.leader = ""; a.term = "x" }, `raft term "x"`},
		{func(a *fakeAgent) { a.term = "1"; a.noStats = true }, "not a server"},
	} {
		a1.set(tt.f)
		if s := p.Poll(context.Background(), time.Second)[0]; s.Err == nil || !strings.Contains(s.Err.Error(), tt.want) || !strings.Contains(s.Err.Error(), "n1") {
			t.Errorf("status %+v, want an error naming n1 and %q", s, tt.want)
		}
	}
}

func TestWaitReadyNamesSilentNodes(t *testing.T) {
	eps := []stores.Endpoint{{Node: 1, ClientAddr: freeAddr(t), PeerAddr: "127.0.0.1:1"}, {Node: 2, ClientAddr: freeAddr(t), PeerAddr: "127.0.0.1:2"}}
	err := WaitReady(context.Background(), eps, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "n1 did not answer") || !strings.Contains(err.Error(), "n2 did not answer") {
		t.Errorf("WaitReady with nothing listening: %v", err)
	}
	p, err := NewStatusPoller(eps)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, s := range p.Poll(context.Background(), 200*time.Millisecond) {
		if s.Err == nil {
			t.Errorf("Status of %d: no error with nothing listening", s.Node)
		}
	}
	if _, err := NewStatusPoller(nil); err == nil {
		t.Error("NewStatusPoller without endpoints")
	}
}
