package dsl

import (
	"fmt"
	"sort"

	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
)

// Compile turns a validated scenario into its Plan: every phase, load and
// fault occurrence at an absolute offset from the start of the run. It is a
// pure function of the scenario.
func (s *Scenario) Compile(point Point) (*plan.Plan, hcl.Diagnostics) {
	p := &plan.Plan{
		Version:     plan.PlanVersion,
		Scenario:    s.Filename,
		Description: s.Description,
		Point:       point,
		Network:     s.Network.Spec,
		Variables:   map[string]string{},
	}
	for name, v := range s.Variables {
		p.Variables[name] = literal(v)
	}
	for _, c := range s.Clusters {
		p.Clusters = append(p.Clusters, c.Spec)
	}
	workloads := map[string]*Workload{}
	for i, w := range s.Workloads {
		spec := w.Spec
		if spec.Seed == 0 {
			spec.Seed = derivedSeed(s.Seed, "workload", spec.Name, fmt.Sprint(i))
		}
		workloads[spec.Name] = w
		p.Workloads = append(p.Workloads, spec)
	}
	type ranked struct {
		e    plan.Event
		rank int
	}
	// Events that share an offset run in this order: what ends (a fault's
	// recovery, then the phase) before what begins (the next phase, its
	// loads, then its faults), so nothing declared in one phase spills into
	// the next. A recovery at its own injection's offset (restart with
	// restart_after = 0) comes right after it.
	const (
		rankRecover = iota
		rankPhaseEnd
		rankPhaseStart
		rankLoad
		rankInject
		rankInstantRecover
	)
	var events []ranked
	push := func(e plan.Event, rank int) { events = append(events, ranked{e, rank}) }
	var at plan.Duration
	for _, ph := range s.Phases {
		p.Phases = append(p.Phases, plan.PhaseSpan{Name: ph.Name, Start: at, Duration: ph.Duration})
		push(plan.Event{At: at, Phase: ph.Name, Kind: plan.EventPhaseStart}, rankPhaseStart)
		for _, l := range ph.Loads {
			push(plan.Event{At: at, Phase: ph.Name, Kind: plan.EventLoad, Load: loadSpec(l, workloads[l.Workload], ph.Duration)}, rankLoad)
		}
		kindCount := map[string]int{}
		for _, f := range ph.Faults {
			kindCount[f.Name]++
		}
		kindSeen := map[string]int{}
		for _, f := range ph.Faults {
			id := ph.Name + "/" + f.Name
			if kindCount[f.Name] > 1 {
				kindSeen[f.Name]++
				id = fmt.Sprintf("%s.%d", id, kindSeen[f.Name])
			}
			for k, start := range occurrences(f, ph) {
				occ := id
				if f.Every > 0 {
					occ = fmt.Sprintf("%s#%d", id, k+1)
				}
				// Each occurrence has its own ID and so its own derived
				// seed: a repeated "random" fault draws again each time.
				spec := faultSpec(f, ph, s.Seed, occ)
				spec.Start = at + start
				push(plan.Event{At: spec.Start, Phase: ph.Name, Kind: plan.EventFaultInject, Fault: spec}, rankInject)
				if spec.Duration > 0 {
					push(plan.Event{At: spec.Start + spec.Duration, Phase: ph.Name, Kind: plan.EventFaultRecover, Fault: spec}, rankRecover)
				} else if spec.Kind == plan.FaultRestart {
					push(plan.Event{At: spec.Start, Phase: ph.Name, Kind: plan.EventFaultRecover, Fault: spec}, rankInstantRecover)
				}
			}
		}
		at += ph.Duration
		push(plan.Event{At: at, Phase: ph.Name, Kind: plan.EventPhaseEnd}, rankPhaseEnd)
	}
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].e.At != events[j].e.At {
			return events[i].e.At < events[j].e.At
		}
		return events[i].rank < events[j].rank
	})
	for _, e := range events {
		p.Events = append(p.Events, e.e)
	}
	p.Duration = at
	var diags hcl.Diagnostics
	scope := &checkScope{tree: metricTree(p)}
	for _, c := range s.Checks {
		spec, cdiags := compileCheck(c, scope, s.Variables)
		diags = append(diags, cdiags...)
		p.Checks = append(p.Checks, spec)
	}
	return p, diags
}

func loadSpec(l *PhaseLoad, w *Workload, d plan.Duration) *plan.LoadSpec {
	ls := &plan.LoadSpec{Workload: l.Workload, Duration: d}
	if l.Open {
		ls.Mode, ls.RateFrom, ls.RateTo = plan.LoadOpen, l.RateFrom, l.RateTo
		return ls
	}
	ls.Mode, ls.ClientsFrom, ls.ClientsTo = plan.LoadClosed, l.ClientsFrom, l.ClientsTo
	if ls.ClientsFrom == 0 && ls.ClientsTo == 0 {
		ls.ClientsFrom, ls.ClientsTo = w.Spec.Clients, w.Spec.Clients
	}
	return ls
}

// occurrences lists the offsets, within the phase, at which a fault fires.
func occurrences(f *Fault, ph *Phase) []plan.Duration {
	if f.Every <= 0 {
		return []plan.Duration{f.At}
	}
	n := occurrenceCount(f, ph)
	out := make([]plan.Duration, 0, n)
	for k := int64(0); k < n; k++ {
		out = append(out, f.At+plan.Duration(k)*f.Every)
	}
	return out
}

func faultSpec(f *Fault, ph *Phase, seed int64, id string) *plan.FaultSpec {
	spec := &plan.FaultSpec{
		ID:           id,
		Name:         f.Name,
		Kind:         f.Kind,
		Cluster:      f.Cluster,
		Target:       f.Target,
		Duration:     f.window(ph),
		RestartAfter: f.RestartAfter,
	}
	if spec.Target.Kind == plan.TargetNodes {
		spec.Target.Nodes = sortedInts(spec.Target.Nodes)
	}
	if !f.seedSet && (spec.Target.Kind == plan.TargetRandom || spec.Target.Kind == plan.TargetFollower) {
		spec.Target.Seed = derivedSeed(seed, "fault", id)
	}
	if f.Network != nil {
		n := *f.Network
		spec.Network = &n
	}
	if f.Partition != nil {
		pt := *f.Partition
		spec.Partition = &pt
	}
	if f.Disk != nil {
		d := *f.Disk
		spec.Disk = &d
	}
	if f.Vanish != nil {
		v := *f.Vanish
		spec.Vanish = &v
	}
	spec.Workload = f.Workload
	return spec
}
