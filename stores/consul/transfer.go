package consul

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// transferConfigTimeout bounds the target's answer with the raft
// configuration before a transfer: a server that takes longer (paused, cut
// off) is in no state to lead, and the transfer fails then rather than at
// its caller's deadline.
const transferConfigTimeout = 5 * time.Second

// TransferLeader hands the leadership to node to with Consul's
// transfer-leader operator endpoint (raft's leadership transfer), what
// `consul operator raft transfer-leader -id` sends. Raft names servers by
// their IDs, so to's is looked up in the raft configuration by its server
// address. The endpoint returns once the transfer is done. moved is false
// when to led already.
func TransferLeader(ctx context.Context, eps []stores.Endpoint, to int) (moved bool, err error) {
	i := stores.EndpointIndex(eps, to)
	if i < 0 {
		return false, fmt.Errorf("%s is not among the endpoints", plan.NodeName(to))
	}
	ep := eps[i]
	peer, err := netip.ParseAddrPort(ep.PeerAddr)
	if err != nil {
		return false, fmt.Errorf("server address %q of %s: %w", ep.PeerAddr, plan.NodeName(to), err)
	}
	t := newTransport(ep.Dial, 1)
	defer t.CloseIdleConnections()
	cli, err := newAPIClient(ep.ClientAddr, t)
	if err != nil {
		return false, err
	}
	cctx, cancel := context.WithTimeout(ctx, transferConfigTimeout)
	cfg, err := cli.Operator().RaftGetConfiguration((&api.QueryOptions{}).WithContext(cctx))
	cancel()
	if err != nil {
		return false, fmt.Errorf("raft configuration from %s: %w", plan.NodeName(to), err)
	}
	for _, s := range cfg.Servers {
		ap, err := netip.ParseAddrPort(s.Address)
		if err != nil || normalize(ap) != normalize(peer) {
			continue
		}
		if s.Leader {
			return false, nil
		}
		out, err := cli.Operator().RaftLeaderTransfer(s.ID, (&api.QueryOptions{}).WithContext(ctx))
		if err == nil && !out.Success {
			err = errors.New("the leader refused")
		}
		if err != nil {
			return false, fmt.Errorf("transfer the leadership to %s (raft ID %s): %w", plan.NodeName(to), s.ID, err)
		}
		return true, nil
	}
	return false, fmt.Errorf("%s (server address %s) is not in the raft configuration", plan.NodeName(to), ep.PeerAddr)
}
