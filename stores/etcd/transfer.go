package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// transferAttempts bounds how often TransferLeader asks again when the
// member it took for the leader no longer leads by the time it is asked.
const transferAttempts = 3

// transferStatusTimeout bounds the target's answer to the status question
// before a transfer: a member that takes longer is in no state to lead.
const transferStatusTimeout = 5 * time.Second

// TransferLeader hands the leadership to node to with etcd's MoveLeader,
// what `etcdctl move-leader` sends. Only the leader serves it, so node to
// is asked for its status first: for its member ID and the leader it
// follows. MoveLeader returns once to leads, or fails when etcd gives
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

// transferEnds asks node to alone for its status and returns its member
// ID and the index of the endpoint of the leader it names, -1 when to
// leads already. Asking every member waited for one that was paused until
// the transfer's deadline; the target's view of the leader is enough, since
// a leader that has moved on answers ErrNotLeader and is asked again.
func (p *StatusPoller) transferEnds(ctx context.Context, to int) (target uint64, leader int, err error) {
	ti := stores.EndpointIndex(p.eps, to)
	if ti < 0 {
		return 0, 0, fmt.Errorf("%s is not among the endpoints", plan.NodeName(to))
	}
	sctx, cancel := context.WithTimeout(ctx, transferStatusTimeout)
	s := p.PollNode(sctx, ti)
	cancel()
	if s.Err != nil {
		return 0, 0, fmt.Errorf("%s, to lead, did not answer: %w", plan.NodeName(to), s.Err)
	}
	target, ok := p.members.id(to)
	switch {
	case !ok:
		return 0, 0, fmt.Errorf("%s answered without its member ID", plan.NodeName(to))
	case s.IsLeader:
		return target, -1, nil
	case s.Leader == 0:
		return 0, 0, fmt.Errorf("%s knows no leader to hand over from", plan.NodeName(to))
	}
	leader = stores.EndpointIndex(p.eps, s.Leader)
	if leader < 0 {
		return 0, 0, fmt.Errorf("%s names %s the leader, which is not among the endpoints", plan.NodeName(to), plan.NodeName(s.Leader))
	}
	return target, leader, nil
}
