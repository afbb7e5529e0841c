package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/stores"
)

// srvrAnswer is a srvr answer of ZooKeeper 3.8.
func srvrAnswer(mode string, zxid uint64) string {
	s := fmt.Sprintf(`Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC
Latency min/avg/max: 0/0.0/0
Received: 1
Sent: 0
Connections: 1
Outstanding: 0
Zxid: %#x
Mode: %s
Node count: 5
`, zxid, mode)
	if mode == "leader" {
		s += "Proposal sizes last/min/max: -1/-1/-1\n"
	}
	return s
}

func TestParseSrvr(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want srvrReport
		err  string
	}{
		{"leader", srvrAnswer("leader", 0x200000000), srvrReport{serving: true, mode: "leader", zxid: 0x200000000}, ""},
		{"follower", srvrAnswer("follower", 0x100000007), srvrReport{serving: true, mode: "follower", zxid: 0x100000007}, ""},
		{"fresh follower", srvrAnswer("follower", 0), srvrReport{serving: true, mode: "follower"}, ""},
		{"standalone", srvrAnswer("standalone", 0x2a), srvrReport{serving: true, mode: "standalone", zxid: 0x2a}, ""},
		{"observer", srvrAnswer("observer", 0x300000001), srvrReport{serving: true, mode: "observer", zxid: 0x300000001}, ""},
		{"read-only", srvrAnswer("read-only", 0x1), srvrReport{serving: true, mode: "read-only", zxid: 1}, ""},
		{"crlf", strings.ReplaceAll(srvrAnswer("leader", 0x100000000), "\n", "\r\n"), srvrReport{serving: true, mode: "leader", zxid: 0x100000000}, ""},
		{"not serving", "This ZooKeeper instance is not currently serving requests\n", srvrReport{}, ""},
		{"not whitelisted", "srvr is not executed because it is not in the whitelist.\n", srvrReport{}, "4lw.commands.whitelist"},
		{"empty", "", srvrReport{}, "no Mode and Zxid"},
		{"no zxid", "Mode: leader\n", srvrReport{}, "no Mode and Zxid"},
		{"no mode", "Zxid: 0x1\n", srvrReport{}, "no Mode and Zxid"},
		{"bad zxid", "Zxid: 0xzz\nMode: leader\n", srvrReport{}, "bad Zxid"},
		{"unknown mode", "Zxid: 0x1\nMode: looking\n", srvrReport{}, `unknown mode "looking"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSrvr([]byte(tt.in))
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("parseSrvr: %+v, %v; want an error mentioning %q", got, err, tt.err)
			case tt.err == "" && err != nil:
				t.Errorf("parseSrvr: %v", err)
			case tt.err == "" && got != tt.want:
				t.Errorf("parseSrvr = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAssignLeaders(t *testing.T) {
	down := errors.New("connection refused")
	lead := func(epoch uint64) srvrReport { return srvrReport{serving: true, mode: "leader", zxid: epoch << 32} }
	follow := func(epoch uint64) srvrReport { return srvrReport{serving: true, mode: "follower", zxid: epoch<<32 | 7} }
	idle := srvrReport{}
	tests := []struct {
		name string
		reps []srvrReport
		errs []error
		want []stores.NodeStatus // Err is not compared
	}{
		{
			"steady", []srvrReport{follow(2), lead(2), follow(2)}, nil,
			[]stores.NodeStatus{{Node: 1, Leader: 2, Term: 2}, {Node: 2, IsLeader: true, Leader: 2, Term: 2}, {Node: 3, Leader: 2, Term: 2}},
		},
		{
			// Right after an election the followers' zxids are still
			// of the last epoch.
			"followers lag the new epoch", []srvrReport{follow(1), lead(2), follow(0)}, nil,
			[]stores.NodeStatus{{Node: 1, Leader: 2, Term: 1}, {Node: 2, IsLeader: true, Leader: 2, Term: 2}, {Node: 3, Leader: 2, Term: 0}},
		},
		{
			// An old leader cut off from its quorum still says so for
			// a while; each follower names the leader of its epoch.
			"two leaders", []srvrReport{lead(1), follow(1), lead(2), follow(2), follow(0)}, nil,
			[]stores.NodeStatus{
				{Node: 1, IsLeader: true, Leader: 1, Term: 1}, {Node: 2, Leader: 1, Term: 1},
				{Node: 3, IsLeader: true, Leader: 3, Term: 2}, {Node: 4, Leader: 3, Term: 2},
				{Node: 5, Leader: 3, Term: 0},
			},
		},
		{
			"leader down", []srvrReport{follow(3), idle, follow(3)}, []error{nil, down, nil},
			[]stores.NodeStatus{{Node: 1, Term: 3}, {Node: 2}, {Node: 3, Term: 3}},
		},
		{
			"leader of an older epoch than the follower", []srvrReport{follow(3), lead(2)}, nil,
			[]stores.NodeStatus{{Node: 1, Term: 3}, {Node: 2, IsLeader: true, Leader: 2, Term: 2}},
		},
		{
			"election", []srvrReport{idle, idle, idle}, nil,
			[]stores.NodeStatus{{Node: 1, Electing: true}, {Node: 2, Electing: true}, {Node: 3, Electing: true}},
		},
		{
			"standalone", []srvrReport{{serving: true, mode: "standalone", zxid: 0x5}}, nil,
			[]stores.NodeStatus{{Node: 1, IsLeader: true, Leader: 1}},
		},
		{
			"read-only follows nobody", []srvrReport{{serving: true, mode: "read-only", zxid: 1 << 32}, lead(1)}, nil,
			[]stores.NodeStatus{{Node: 1, Term: 1}, {Node: 2, IsLeader: true, Leader: 2, Term: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sts := make([]stores.NodeStatus, len(tt.reps))
			for i := range sts {
				sts[i].Node = i + 1
				if i < len(tt.errs) {
					sts[i].Err = tt.errs[i]
				}
			}
			assignLeaders(sts, tt.reps)
			for i := range sts {
				sts[i].Err = nil
			}
			if fmt.Sprint(sts) != fmt.Sprint(tt.want) {
				t.Errorf("assignLeaders =\n  %+v\nwant\n  %+v", sts, tt.want)
			}
		})
	}
}

func TestNotReady(t *testing.T) {
	down := errors.New("connection refused")
	lead := srvrReport{serving: true, mode: "leader", zxid: 2 << 32}
	follow := srvrReport{serving: true, mode: "follower", zxid: 1 << 32}
	tests := []struct {
		name string
		sts  []stores.NodeStatus
		reps []srvrReport
		want []string // substrings; none means ready
	}{
		{"ready", []stores.NodeStatus{{Node: 1, Leader: 2}, {Node: 2, Leader: 2, IsLeader: true}, {Node: 3, Leader: 2}}, []srvrReport{follow, lead, follow}, nil},
		{"single standalone", []stores.NodeStatus{{Node: 1, Leader: 1, IsLeader: true}}, []srvrReport{{serving: true, mode: "standalone"}}, nil},
		{"one silent", []stores.NodeStatus{{Node: 1, Leader: 2}, {Node: 2, Leader: 2, IsLeader: true}, {Node: 3, Err: down}}, []srvrReport{follow, lead, {}}, []string{"n3 did not answer", "connection refused"}},
		{"electing", []stores.NodeStatus{{Node: 1}, {Node: 2}, {Node: 3, Err: down}}, []srvrReport{{}, {}, {}}, []string{"n3 did not answer", "n1, n2 not serving requests"}},
		{"no leader", []stores.NodeStatus{{Node: 1}, {Node: 2}}, []srvrReport{follow, follow}, []string{"no node leads"}},
		{"two leaders", []stores.NodeStatus{{Node: 1, Leader: 1, IsLeader: true}, {Node: 2, Leader: 2, IsLeader: true}}, []srvrReport{lead, lead}, []string{"n1, n2 all say they lead"}},
		{"follower elsewhere", []stores.NodeStatus{{Node: 1, Leader: 1, IsLeader: true}, {Node: 2}}, []srvrReport{lead, {serving: true, mode: "read-only", zxid: 0x5}}, []string{"n2 is read-only and does not follow n1 (zxid 0x5)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := notReady(tt.sts, tt.reps)
			if len(tt.want) == 0 && got != "" {
				t.Errorf("notReady = %q, want ready", got)
			}
			if len(tt.want) > 0 && got == "" {
				t.Errorf("notReady = ready, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("notReady = %q, want it to mention %q", got, w)
				}
			}
		})
	}
}

func TestMntrValue(t *testing.T) {
	mntr := "zk_version\t3.8.0\nzk_server_state\tleader\nzk_synced_followers\t2\nzk_avg_latency\t0.5\n"
	if n, err := mntrValue([]byte(mntr), "zk_synced_followers"); n != 2 || err != nil {
		t.Errorf("zk_synced_followers = %d, %v; want 2", n, err)
	}
	for _, tt := range []struct{ in, key, err string }{
		{mntr, "zk_missing", "no zk_missing"},
		{mntr, "zk_avg_latency", "bad zk_avg_latency"},
		{notServing + "\n", "zk_synced_followers", "not serving"},
	} {
		if _, err := mntrValue([]byte(tt.in), tt.key); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("mntrValue(%q): %v; want an error mentioning %q", tt.key, err, tt.err)
		}
	}
}

// fakeNode answers four-letter words like a ZooKeeper server: it reads the
// four bytes, writes the canned answer and closes the connection. An
// unknown word gets no answer until the connection is closed.
type fakeNode struct {
	mu      sync.Mutex
	answers map[string]string
}

func (f *fakeNode) set(word, answer string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[word] = answer
}

func startFakeNode(t *testing.T, answers map[string]string) (*fakeNode, string) {
	t.Helper()
	f := &fakeNode{answers: answers}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				word := make([]byte, 4)
				if _, err := io.ReadFull(c, word); err != nil {
					return
				}
				f.mu.Lock()
				answer, ok := f.answers[string(word)]
				f.mu.Unlock()
				if !ok {
					<-done
					return
				}
				io.WriteString(c, answer)
			}()
		}
	}()
	return f, l.Addr().String()
}

func TestPollAndWaitReady(t *testing.T) {
	n1, a1 := startFakeNode(t, map[string]string{"srvr": srvrAnswer("follower", 0x100000003)})
	n2, a2 := startFakeNode(t, map[string]string{"srvr": srvrAnswer("leader", 0x200000000), "mntr": "zk_synced_followers\t1\n"})
	_, a3 := startFakeNode(t, map[string]string{}) // accepts, never answers: paused
	var mu sync.Mutex
	dialed := 0
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		mu.Lock()
		dialed++
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	eps := []stores.Endpoint{
		{Node: 1, ClientAddr: a1, Dial: dial},
		{Node: 2, ClientAddr: a2, Dial: dial},
		{Node: 3, ClientAddr: a3, Dial: dial},
		{Node: 4, ClientAddr: freeAddr(t), Dial: dial},
	}
	p, err := NewStatusPoller(eps)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	start := time.Now()
	sts := p.Poll(context.Background(), 300*time.Millisecond)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Poll took %s with a 300ms timeout", took)
	}
	if s := sts[0]; s.Node != 1 || s.Err != nil || s.Leader != 2 || s.Term != 1 || s.IsLeader {
		t.Errorf("follower: %+v", s)
	}
	if s := sts[1]; s.Node != 2 || s.Err != nil || s.Leader != 2 || s.Term != 2 || !s.IsLeader {
		t.Errorf("leader: %+v", s)
	}
	if s := sts[2]; s.Err == nil || !errors.Is(s.Err, context.DeadlineExceeded) || !strings.Contains(s.Err.Error(), "n3") {
		t.Errorf("silent node: %+v, want a deadline error naming n3", s)
	}
	if s := sts[3]; s.Err == nil || !strings.Contains(s.Err.Error(), "refused") {
		t.Errorf("stopped node: %+v, want connection refused", s)
	}
	mu.Lock()
	if dialed != 4 {
		t.Errorf("the endpoints' dialer opened %d connections, want 4", dialed)
	}
	mu.Unlock()

	err = WaitReady(context.Background(), eps, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "n3 did not answer") || !strings.Contains(err.Error(), "n4 did not answer") {
		t.Errorf("WaitReady with two nodes down: %v", err)
	}

	// Two nodes: ready once the leader counts the follower as synced.
	two := eps[:2]
	n2.set("mntr", "zk_synced_followers\t0\n")
	err = WaitReady(context.Background(), two, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "leader n2 has 0 of 1 followers in sync") {
		t.Errorf("WaitReady with the follower not yet synced: %v", err)
	}
	n2.set("mntr", "zk_synced_followers\t1\n")
	if err := WaitReady(context.Background(), two, 5*time.Second); err != nil {
		t.Errorf("WaitReady: %v", err)
	}
	n1.set("srvr", notServing+"\n")
	err = WaitReady(context.Background(), two, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "n1 not serving requests") {
		t.Errorf("WaitReady with n1 in an election: %v", err)
	}
	if _, err := NewStatusPoller(nil); err == nil {
		t.Error("NewStatusPoller without endpoints succeeded")
	}
}
