package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/plan"
)

// injection is a fault in effect: when it took effect, how to undo it, and
// for node and disk faults what package faults reports of it.
type injection struct {
	applied time.Time
	undo    func(context.Context) error
	active  *faults.Active
	// unchanged: there was nothing to do (a transfer to the leader).
	unchanged bool
	// done is when a transfer's request returned, which the stores do
	// once the leadership has moved; zero for other kinds.
	done time.Time
}

// injector is how the runner injects one kind of fault (plan.FaultKinds
// says what the kind does).
type injector struct {
	inject func(d *faultDriver, ctx context.Context, f plan.FaultSpec, targets []int) (injection, error)
	// needsFabric: the kind acts on the network fabric, which a plan
	// with such a fault therefore starts.
	needsFabric bool
}

// injectors lists every fault kind the runner can inject: node and disk
// faults through package faults, network faults through the fabric.
func injectors() map[string]injector {
	node := injector{inject: func(d *faultDriver, ctx context.Context, f plan.FaultSpec, targets []int) (injection, error) {
		a, err := d.inj.Inject(ctx, f, targets)
		if err != nil {
			return injection{}, err
		}
		return injection{applied: a.AppliedAt(), undo: a.Recover, active: a}, nil
	}}
	network := injector{needsFabric: true, inject: func(d *faultDriver, ctx context.Context, f plan.FaultSpec, targets []int) (injection, error) {
		applied, undo, err := d.c.x.net.inject(ctx, f, targets)
		return injection{applied: applied, undo: undo}, err
	}}
	all := map[string]injector{
		plan.FaultNetwork:   network,
		plan.FaultPartition: network,
		plan.FaultVanish: {inject: func(d *faultDriver, ctx context.Context, f plan.FaultSpec, _ []int) (injection, error) {
			return d.vanish(ctx, f)
		}},
		plan.FaultTransferLeader: {inject: func(d *faultDriver, ctx context.Context, _ plan.FaultSpec, targets []int) (injection, error) {
			return d.transferLeader(ctx, targets)
		}},
	}
	for _, k := range faults.Kinds() {
		all[k] = node
	}
	// A pause that names a lock workload freezes its holder, not a node.
	all[plan.FaultPause] = injector{inject: func(d *faultDriver, ctx context.Context, f plan.FaultSpec, targets []int) (injection, error) {
		if f.Workload != "" {
			return d.pauseHolder(f)
		}
		return node.inject(d, ctx, f, targets)
	}}
	return all
}

// transferTimeout bounds a leadership transfer. The stores give a transfer
// up after an election timeout; this is for a store that does not answer.
const transferTimeout = 30 * time.Second

// transferLeader hands the leadership to the one target. It took effect
// when it was asked for: the time to the new leader is measured from then.
func (d *faultDriver) transferLeader(ctx context.Context, targets []int) (injection, error) {
	c := d.c
	if len(targets) != 1 {
		return injection{}, fmt.Errorf("a leadership transfer goes to one node, not %d", len(targets))
	}
	to := targets[0]
	if c.drv.TransferLeader == nil {
		return injection{}, fmt.Errorf("%s cannot transfer its leadership", c.spec.Store)
	}
	if !c.nodes[to-1].Running() {
		return injection{}, fmt.Errorf("%s is down, so it cannot take the leadership", plan.NodeName(to))
	}
	ctx, cancel := context.WithTimeout(ctx, transferTimeout)
	defer cancel()
	asked := time.Now()
	moved, err := c.drv.TransferLeader(ctx, c.eps, to)
	done := time.Now()
	if err != nil {
		return injection{}, fmt.Errorf("transfer the leadership to %s: %w", plan.NodeName(to), err)
	}
	if moved {
		c.log.Info("leadership transferred", "to", plan.NodeName(to), "took", done.Sub(asked).Round(time.Millisecond))
	} else {
		c.log.Info("nothing to transfer: the target leads already", "to", plan.NodeName(to))
	}
	return injection{applied: asked, undo: func(context.Context) error { return nil }, unchanged: !moved, done: done}, nil
}

// faultKind is what the plan says of kind; the language accepts only known
// kinds.
func faultKind(kind string) plan.FaultKind {
	k, _ := plan.FaultKindOf(kind)
	return k
}
