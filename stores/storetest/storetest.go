// Package storetest holds what the store drivers' integration tests share:
// free loopback addresses for a cluster, waiting for a condition, who
// leads, and the end of a node's log.
package storetest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/coordlab/scenario/runner/process"
	"github.com/coordlab/scenario/stores"
)

// FreeAddrs returns n distinct loopback addresses whose ports are free for
// TCP and UDP, drawn from below the kernel's ephemeral range and held from
// every other caller of process.AllocatePorts until the test ends. A port
// the kernel picked for a bind to port 0 could be taken by any outgoing
// connection before the store binds it, a cluster's own peers dialing each
// other or another package's tests running beside this one: make test runs
// the store drivers' packages two at a time.
func FreeAddrs(t *testing.T, n int) []string {
	t.Helper()
	ports, release, err := process.AllocatePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	// Held until the test ends: a store binds some of its ports seconds
	// after it starts (ZooKeeper's election port).
	t.Cleanup(release)
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return addrs
}

// WaitFor polls cond every 50 ms until it returns "" or the deadline
// passes, then fails with cond's last reason.
func WaitFor(t *testing.T, ctx context.Context, within time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		reason := cond()
		if reason == "" {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not within %s: %s", what, within, reason)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Leaders returns the nodes that say they lead.
func Leaders(sts []stores.NodeStatus) []int {
	var ls []int
	for _, s := range sts {
		if s.Err == nil && s.IsLeader {
			ls = append(ls, s.Node)
		}
	}
	return ls
}

// Tail keeps the last n bytes of a log, from a line start.
func Tail(b []byte, n int) []byte {
	b = bytes.TrimSpace(b)
	if len(b) <= n {
		return b
	}
	b = b[len(b)-n:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return append([]byte("...\n"), b...)
}

// CheckServed fails t unless a successful result names one of eps as the
// member that answered.
func CheckServed(t *testing.T, res stores.Result, eps []stores.Endpoint) {
	t.Helper()
	for _, ep := range eps {
		if ep.Node == res.Node {
			return
		}
	}
	t.Errorf("answered by node %d, not one of the %d endpoints", res.Node, len(eps))
}

// PollNodeContract holds a poller's PollNode to what its Poll says of a
// healthy cluster of nodes: each node asked alone answers, stamped with
// the time of its answer, with the IsLeader and Term a poll of all of them
// gives it, and not Electing (it knows its leader); and a node asked with
// a canceled context fails.
func PollNodeContract(t *testing.T, ctx context.Context, p stores.Poller, nodes int) {
	t.Helper()
	// Polled until they agree: a busy machine can hold an election
	// between the two questions.
	WaitFor(t, ctx, 30*time.Second, "each node asked alone says what a poll of all says", func() string {
		all := p.Poll(ctx, 2*time.Second)
		for i := range nodes {
			asked := time.Now()
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			s := p.PollNode(pctx, i)
			cancel()
			switch {
			case s.Err != nil:
				return fmt.Sprintf("n%d asked alone: %v", i+1, s.Err)
			case s.Node != i+1:
				return fmt.Sprintf("node index %d answered as n%d", i, s.Node)
			case s.At.Before(asked):
				return fmt.Sprintf("n%d's answer stamped %v, before it was asked", i+1, s.At)
			case s.IsLeader != all[i].IsLeader || s.Term != all[i].Term:
				return fmt.Sprintf("n%d asked alone: %+v; in a poll of all: %+v", i+1, s, all[i])
			case s.Electing || all[i].Electing:
				return fmt.Sprintf("n%d says it knows no leader in a healthy cluster: alone %+v, in a poll of all %+v", i+1, s, all[i])
			}
		}
		return ""
	})
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if s := p.PollNode(canceled, 0); s.Err == nil {
		t.Errorf("n1 asked with a canceled context answered: %+v", s)
	}
}
