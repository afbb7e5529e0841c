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

// transferEnds polls every member and returns the member ID of node to and
// the index of the leader's endpoint, -1 when to leads already. The poll
// learns each answering member's ID.
func (p *StatusPoller) transferEnds(ctx context.Context, to int) (target uint64, leader int, err error) {
	leader = -1
	for i, s := range p.Poll(ctx, 0) {
		switch {
		case s.Node == to && s.Err != nil:
			return 0, 0, fmt.Errorf("%s, to lead, did not answer: %w", plan.NodeName(to), s.Err)
		case s.Err == nil && s.IsLeader:
			leader = i
		}
	}
	target, ok := p.members.id(to)
	switch {
	case !ok:
		return 0, 0, fmt.Errorf("%s is not among the endpoints", plan.NodeName(to))
	case leader < 0:
		return 0, 0, errors.New("no member says it leads")
	case p.eps[leader].Node == to:
		return target, -1, nil
	}
	return target, leader, nil
}
