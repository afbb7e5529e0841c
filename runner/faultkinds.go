package runner

import (
	"context"
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

// faultKind is what the plan says of kind; the language accepts only known
// kinds.
func faultKind(kind string) plan.FaultKind {
	k, _ := plan.FaultKindOf(kind)
	return k
}
