package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coordlab/scenario/stores"
)

// TransferContract hands the leadership of a healthy cluster from node
// from to the next node with drv.TransferLeader, and holds the driver to
// its contract: the transfer reports a move, every node then names the new
// leader in a later term, and a second transfer to it reports none. It
// returns the new leader and its term.
func TransferContract(t *testing.T, ctx context.Context, drv stores.Driver, eps []stores.Endpoint, from int, fromTerm uint64) (int, uint64) {
	t.Helper()
	poller, err := drv.NewPoller(eps)
	if err != nil {
		t.Fatal(err)
	}
	defer poller.Close()
	to := from%len(eps) + 1
	start := time.Now()
	if moved, err := drv.TransferLeader(ctx, eps, to); err != nil || !moved {
		t.Fatalf("TransferLeader from n%d to n%d: moved %t, %v", from, to, moved, err)
	}
	took := time.Since(start)
	// The stores answer once to has won its election; the other nodes
	// hear of it with its first heartbeat.
	var term uint64
	WaitFor(t, ctx, 10*time.Second, "every node names the new leader", func() string {
		sts := poller.Poll(ctx, 2*time.Second)
		if ls := Leaders(sts); !slices.Equal(ls, []int{to}) {
			return fmt.Sprintf("leaders %v in %+v", ls, sts)
		}
		for _, s := range sts {
			if s.Err != nil || s.Leader != to {
				return fmt.Sprintf("status of n%d: %+v", s.Node, s)
			}
		}
		if term = sts[to-1].Term; term <= fromTerm {
			return fmt.Sprintf("n%d leads in term %d, not after term %d", to, term, fromTerm)
		}
		return ""
	})
	t.Logf("the leadership moved from n%d to n%d in %v (term %d)", from, to, took.Round(time.Millisecond), term)
	if moved, err := drv.TransferLeader(ctx, eps, to); err != nil || moved {
		t.Errorf("TransferLeader to the leader: moved %t, %v; want nothing moved", moved, err)
	}
	return to, term
}

// TransferToPausedContract asks for the leadership of a healthy cluster led
// by node leader to be handed to a node that is paused: pause(n, true)
// stops node n's process (SIGSTOP) and pause(n, false) resumes it. The
// transfer must fail, and within 10 s: a driver that waited for the paused
// node's answer until its caller's deadline (30 s in the runner) held the
// fault that long. Once the node is resumed, every node must name leader.
func TransferToPausedContract(t *testing.T, ctx context.Context, drv stores.Driver, eps []stores.Endpoint, leader int, pause func(n int, stop bool)) {
	t.Helper()
	to := leader%len(eps) + 1
	pause(to, true)
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	moved, err := drv.TransferLeader(tctx, eps, to)
	cancel()
	took := time.Since(start)
	pause(to, false)
	switch {
	case err == nil:
		t.Errorf("TransferLeader to n%d, paused: moved %t and no error, want an error", to, moved)
	case took > 10*time.Second:
		t.Errorf("TransferLeader to n%d, paused: failed after %v, want within 10 s: %v", to, took.Round(time.Millisecond), err)
	default:
		t.Logf("TransferLeader to n%d, paused: failed after %v: %v", to, took.Round(time.Millisecond), err)
	}
	poller, err := drv.NewPoller(eps)
	if err != nil {
		t.Fatal(err)
	}
	defer poller.Close()
	WaitFor(t, ctx, 30*time.Second, fmt.Sprintf("every node names n%d again", leader), func() string {
		for _, s := range poller.Poll(ctx, 2*time.Second) {
			if s.Err != nil || s.Leader != leader {
				return fmt.Sprintf("status of n%d: %+v", s.Node, s)
			}
		}
		return ""
	})
}
