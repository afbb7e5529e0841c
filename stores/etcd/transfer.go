package etcd

import (
	"context"
	"errors"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// transferAttempts bounds how often TransferLeader asks again when the
// member it took for the leader no longer leads by the time it is asked.
const transferAttempts = 3

// TransferLeader hands the leadership to node to with etcd's MoveLeader,
// what `etcdctl move-leader` sends. Only the leader serves it, so every
// member is asked for its status first: for the leader, and for the member
// ID of node to. MoveLeader returns once to leads, or fails when etcd gives
// the transfer up (after an election timeout) or ctx ends. moved is false
// when to led already.
func TransferLeader(ctx context.Context, eps []stores.Endpoint, to int) (moved bool, err error) {
	p, err := NewStatusPoller(eps)
	if err != nil {
		return false, err
	}
	defer p.Close()
	for attempt := 1; ; attempt++ {
		target, leader, err := p.transferEnds(ctx, to)
		if err != nil || leader < 0 {
			return false, err
		}
		conn := p.clients[leader].ActiveConnection()
		_, err = pb.NewMaintenanceClient(conn).MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: target})
		if err == nil {
			return true, nil
		}
		// The leader changed between its status and the request: ask again.
		if errors.Is(rpctypes.Error(err), rpctypes.ErrNotLeader) && attempt < transferAttempts {
			continue
		}
		return false, fmt.Errorf("move the leadership from %s to %s: %w", plan.NodeName(p.eps[leader].Node), plan.NodeName(to), clientv3.ContextError(ctx, err))
	}
}

// transferEnds asks every member for its status and returns the member ID
// of node to and the index of the leader's endpoint, -1 when to leads
// already.
func (p *StatusPoller) transferEnds(ctx context.Context, to int) (target uint64, leader int, err error) {
	leader = -1
	var leaderID uint64
	for i, ep := range p.eps {
		resp, err := pb.NewMaintenanceClient(p.clients[i].ActiveConnection()).Status(ctx, &pb.StatusRequest{})
		switch {
		case err != nil && ep.Node == to:
			return 0, 0, fmt.Errorf("%s, to lead, did not answer: %w", plan.NodeName(to), clientv3.ContextError(ctx, err))
		case err != nil:
			continue // a member that is down neither leads nor is to lead
		}
		self := resp.Header.GetMemberId()
		if ep.Node == to {
			target = self
		}
		if resp.Leader != 0 && resp.Leader == self {
			leader, leaderID = i, self
		}
	}
	switch {
	case target == 0:
		return 0, 0, fmt.Errorf("%s is not among the endpoints", plan.NodeName(to))
	case leader < 0:
		return 0, 0, errors.New("no member says it leads")
	case leaderID == target:
		return target, -1, nil
	}
	return target, leader, nil
}
