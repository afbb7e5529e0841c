package dsl

import (
	"fmt"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/registry"
	"github.com/hashicorp/hcl/v2"
)

// validate checks the blocks against each other. It reports every problem
// and changes nothing but the defaults it resolves (a workload's cluster,
// region and consistency when the file leaves them out).
func (s *Scenario) validate(f *File) hcl.Diagnostics {
	var diags hcl.Diagnostics
	add := func(d ...*hcl.Diagnostic) { diags = append(diags, d...) }
	fileStart := hcl.Range{Filename: f.Filename, Start: hcl.InitialPos, End: hcl.InitialPos}

	if len(s.Clusters) == 0 {
		add(errorAt(fileStart, "No cluster", "A scenario needs a cluster to run against, such as:\n  cluster \"main\" {\n    store = \"etcd\"\n    nodes = 3\n  }"))
	}
	if len(s.Phases) == 0 {
		add(errorAt(fileStart, "No phase", "A scenario needs at least one phase, such as:\n  phase \"steady\" {\n    duration = \"30s\"\n    load \"writers\" {}\n  }"))
	}
	// The timeline is one int64 of nanoseconds: refuse runs long enough to
	// overflow it (or to be a typo) before anything adds offsets up.
	var total plan.Duration
	for _, p := range s.Phases {
		if total += p.Duration; p.Duration > maxRunDuration || total > maxRunDuration {
			add(errorAt(p.durationRange, "Run too long",
				"The phases up to %q last %s; a run may last at most %s.", p.Name, time.Duration(total).Round(time.Hour), time.Duration(maxRunDuration)))
			break
		}
	}
	clusters := map[string]*Cluster{}
	var clusterNames []string
	placed := map[string]bool{}
	for _, c := range s.Clusters {
		clusters[c.Spec.Name] = c
		clusterNames = append(clusterNames, c.Spec.Name)
		for _, r := range c.Spec.Placement {
			placed[r] = true
		}
	}
	resolveCluster := func(name string, set bool, rng, decl hcl.Range, what string) *Cluster {
		if set {
			c, ok := clusters[name]
			if !ok && name != "" {
				add(errorAt(rng, "Unknown cluster", "No cluster is named %q. %s", name, didYouMean(name, clusterNames)))
			}
			return c
		}
		if len(s.Clusters) == 1 {
			return s.Clusters[0]
		}
		if len(s.Clusters) > 1 {
			add(errorAt(decl, "Which cluster?", "This scenario has several clusters: say which one this %s uses with `cluster = cluster.NAME`.", what))
		}
		return nil
	}

	workloads := map[string]*Workload{}
	var workloadNames []string
	for _, w := range s.Workloads {
		workloads[w.Spec.Name] = w
		workloadNames = append(workloadNames, w.Spec.Name)
		c := resolveCluster(w.Spec.Cluster, w.clusterSet, w.clusterRange, w.DeclRange, "workload")
		if c == nil {
			continue
		}
		w.Spec.Cluster = c.Spec.Name
		// A store named wrongly is reported where it is written.
		if drv, ok := registry.Lookup(c.Spec.Store); ok {
			add(validateForStore(w, c.Spec, drv)...)
			add(validateRegistry(w, c.Spec, drv.MinTTL, drv.RegistryRecipes)...)
			add(validateWatches(w, c.Spec, drv)...)
			add(validateRecipe(w, c.Spec, drv)...)
			add(validateKeyWatchers(w, c.Spec, drv)...)
		}
		if !w.regionSet {
			regions := distinct(c.Spec.Placement)
			if len(regions) == 1 {
				w.Spec.Region = regions[0]
			} else {
				add(errorAt(w.DeclRange, "Clients need a region",
					"Cluster %q spans regions %s: say where this workload's clients sit with `region = \"...\"`.", c.Spec.Name, quoteList(regions)))
			}
		}
	}
	linked := map[string]bool{}
	for _, l := range s.Network.Spec.Links {
		linked[l.A], linked[l.B] = true, true
	}
	for _, w := range s.Workloads {
		if w.regionSet && w.Spec.Region != "" && !placed[w.Spec.Region] && !linked[w.Spec.Region] {
			add(errorAt(w.regionRange, "Region used but not placed",
				"No node sits in region %q and no network link names it. %s Place a node there, or declare a link to it in the network block.", w.Spec.Region, didYouMean(w.Spec.Region, sortedKeys(placed))))
		}
	}
	known := map[string]bool{}
	for r := range placed {
		known[r] = true
	}
	for _, w := range s.Workloads {
		known[w.Spec.Region] = true
	}
	for i, l := range s.Network.Spec.Links {
		for j, r := range []string{l.A, l.B} {
			if !known[r] {
				rng := s.Network.linkRanges[i].a
				if j == 1 {
					rng = s.Network.linkRanges[i].b
				}
				add(errorAt(rng, "Region used but not placed",
					"No node or workload sits in region %q. %s Place a node there with `placement`, or remove this link.", r, didYouMean(r, sortedKeys(known))))
			}
		}
	}

	loaded := map[string]bool{}
	for _, p := range s.Phases {
		for _, l := range p.Loads {
			if _, ok := workloads[l.Workload]; !ok {
				add(errorAt(l.WorkloadRange, "Unknown workload", "No workload is named %q. %s", l.Workload, didYouMean(l.Workload, workloadNames)))
				continue
			}
			loaded[l.Workload] = true
			if ws := workloads[l.Workload].Spec; (ws.Registry != nil || ws.Lock != nil || ws.Watches != nil) && (l.Open || l.ClientsFrom != 0) {
				add(errorAt(l.DeclRange, "A registry's load takes no clients or rate",
					"Workload %q is a registry or lock workload: a load of it only says it lives during the phase. Size it in its own block (instances, contenders, ...) and write `load %q {}`.", l.Workload, l.Workload))
			}
		}
		names := duplicateCheck{}
		for _, ft := range p.Faults {
			if ft.Name != ft.Kind {
				add(nonNil(names.check("fault", ft.Name, ft.DeclRange))...)
			}
			if ft.Vanish != nil {
				add(validateVanish(ft, workloads, workloadNames)...)
				continue
			}
			if ft.Workload != "" {
				add(validateHolderPause(ft, workloads, workloadNames)...)
				continue
			}
			c := resolveCluster(ft.Cluster, ft.clusterSet, ft.clusterRange, ft.DeclRange, "fault")
			if c != nil {
				ft.Cluster = c.Spec.Name
				add(s.validateFaultTargets(ft, c, known)...)
				add(validateTransfer(ft, c.Spec)...)
			}
			add(validateFaultTiming(ft, p)...)
		}
	}
	for _, w := range s.Workloads {
		if !loaded[w.Spec.Name] {
			add(errorAt(w.DeclRange, "Workload never runs",
				"Workload %q has no load in any phase: add `load %q {}` to a phase, or remove the workload.", w.Spec.Name, w.Spec.Name))
		}
	}
	return diags
}

// validateVanish checks that a vanish fault names a registry workload, and
// takes its cluster from it.
func validateVanish(f *Fault, workloads map[string]*Workload, names []string) hcl.Diagnostics {
	w, ok := workloads[f.Vanish.Workload]
	switch {
	case f.Vanish.Workload == "":
		return nil // reported as missing
	case !ok:
		return hcl.Diagnostics{errorAt(f.workloadRange, "Unknown workload", "No workload is named %q. %s", f.Vanish.Workload, didYouMean(f.Vanish.Workload, names))}
	case w.Spec.Registry == nil:
		return hcl.Diagnostics{errorAt(f.workloadRange, "Not a registry",
			"Workload %q has no registry block, so it has no instances to vanish. Name a workload with `registry { instances = ..., ttl = ... }`.", f.Vanish.Workload)}
	case f.clusterSet && f.Cluster != w.Spec.Cluster:
		return hcl.Diagnostics{errorAt(f.clusterRange, "Wrong cluster",
			"Workload %q runs against cluster %q; a vanish fault acts on its instances there. Remove `cluster`.", f.Vanish.Workload, w.Spec.Cluster)}
	}
	f.Cluster = w.Spec.Cluster
	return nil
}

// validateTransfer refuses a leadership transfer in a store that has none.
func validateTransfer(f *Fault, c plan.ClusterSpec) hcl.Diagnostics {
	drv, ok := registry.Lookup(c.Store)
	if f.Kind != plan.FaultTransferLeader || !ok || drv.TransferLeader != nil {
		return nil
	}
	return hcl.Diagnostics{errorAt(f.kindRange, "No leadership transfer",
		"Cluster %q runs %s, which cannot hand its leadership to a chosen node. To move the leadership by a failover, write `fault \"stop\" { target = \"leader\" }` instead.", c.Name, c.Store)}
}

// validateHolderPause checks that a pause naming a workload names a lock
// workload, and takes its cluster from it.
func validateHolderPause(f *Fault, workloads map[string]*Workload, names []string) hcl.Diagnostics {
	w, ok := workloads[f.Workload]
	switch {
	case !ok:
		return hcl.Diagnostics{errorAt(f.workloadRange, "Unknown workload", "No workload is named %q. %s", f.Workload, didYouMean(f.Workload, names))}
	case w.Spec.Lock == nil:
		return hcl.Diagnostics{errorAt(f.workloadRange, "Not a lock workload",
			"A pause with a workload freezes that workload's lock holder, and workload %q has no lock block. Pause nodes with `target`, or name a workload with `lock { ... }`.", f.Workload)}
	case f.clusterSet && f.Cluster != w.Spec.Cluster:
		return hcl.Diagnostics{errorAt(f.clusterRange, "Wrong cluster",
			"Workload %q runs against cluster %q. Remove `cluster`.", f.Workload, w.Spec.Cluster)}
	}
	f.Cluster = w.Spec.Cluster
	return nil
}

// maxRunDuration bounds the whole timeline: 30 days.
const maxRunDuration = plan.Duration(30 * 24 * time.Hour)

func distinct(list []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func (s *Scenario) validateFaultTargets(f *Fault, c *Cluster, known map[string]bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	n := c.Spec.Nodes
	for i, node := range f.Target.Nodes {
		if node > n {
			diags = append(diags, errorAt(f.nodeRanges[i], "Fault target out of range",
				"Cluster %q has %d nodes (n1..n%d); there is no node %d.", c.Spec.Name, n, n, node))
		}
	}
	regions := distinct(c.Spec.Placement)
	if f.Target.Kind == plan.TargetRegion && !contains(regions, f.Target.Region) {
		diags = append(diags, errorAt(f.targetRange, "No nodes in region",
			"No node of cluster %q sits in region %q. %s", c.Spec.Name, f.Target.Region, didYouMean(f.Target.Region, regions)))
	}
	if (f.Target.Kind == plan.TargetFollower || f.Target.Kind == plan.TargetMinority) && n < 2 && f.Kind != plan.FaultPartition || f.Target.Kind == plan.TargetMinority && n < 3 {
		diags = append(diags, errorAt(f.targetRange, "Target names no node",
			"A %d-node cluster has no %s: target \"leader\" or a node number instead.", n, f.Target.Kind))
	}
	for i, r := range f.betweenRanges {
		if !known[f.Network.Between[i]] {
			diags = append(diags, errorAt(r, "Region used but not placed",
				"No node or workload sits in region %q. %s", f.Network.Between[i], didYouMean(f.Network.Between[i], sortedKeys(known))))
		}
	}
	if f.Partition != nil {
		seen := map[plan.Member]hcl.Range{}
		for gi, g := range f.Partition.Groups {
			for mi, m := range g {
				rng := f.memberRanges[gi][mi]
				switch {
				case m.Node > n:
					diags = append(diags, errorAt(rng, "Fault target out of range",
						"Cluster %q has %d nodes (n1..n%d); there is no node %d.", c.Spec.Name, n, n, m.Node))
				case m.Region != "" && !known[m.Region]:
					diags = append(diags, errorAt(rng, "Region used but not placed",
						"No node or workload sits in region %q. %s", m.Region, didYouMean(m.Region, sortedKeys(known))))
				}
				if prev, ok := seen[m]; ok {
					diags = append(diags, errorAt(rng, "Member in two groups",
						"%s is already in a group at %s; each host belongs to one side of a partition.", memberString(m), prev))
				}
				seen[m] = rng
			}
		}
		diags = append(diags, nodesOnBothSides(f, c)...)
	}
	return diags
}

// nodesOnBothSides refuses a partition that puts a node in two groups, one
// by its region and one by its number: it cannot be on both sides.
func nodesOnBothSides(f *Fault, c *Cluster) hcl.Diagnostics {
	type place struct {
		group int
		via   string
		rng   hcl.Range
	}
	var diags hcl.Diagnostics
	owner := map[int]place{}
	for gi, g := range f.Partition.Groups {
		for mi, m := range g {
			var nodes []int
			if m.Node > 0 {
				nodes = []int{m.Node}
			}
			for i, r := range c.Spec.Placement {
				if m.Region != "" && r == m.Region {
					nodes = append(nodes, i+1)
				}
			}
			here := place{group: gi, via: memberString(m), rng: f.memberRanges[gi][mi]}
			for _, node := range nodes {
				prev, ok := owner[node]
				if !ok {
					owner[node] = here
					continue
				}
				// The same member twice is reported above.
				if prev.group != gi && prev.via != here.via {
					diags = append(diags, errorAt(here.rng, "Node on both sides of a partition",
						"%s is in group %d as %s (at %s) and in group %d as %s; a node belongs to one side of a partition. Remove it from one group.",
						plan.NodeName(node), prev.group+1, prev.via, prev.rng, gi+1, here.via))
				}
			}
		}
	}
	return diags
}

func memberString(m plan.Member) string {
	if m.Region != "" {
		return fmt.Sprintf("region %q", m.Region)
	}
	return plan.NodeName(m.Node)
}

// window is how long one occurrence of a fault lasts within its phase.
func (f *Fault) window(p *Phase) plan.Duration {
	switch {
	case f.RestartAfter > 0:
		return f.RestartAfter
	case faultKinds[f.Kind].windowed && f.durationSet:
		return f.Duration
	case faultKinds[f.Kind].windowed:
		return p.Duration - f.At
	}
	return 0
}

func validateFaultTiming(f *Fault, p *Phase) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if p.Duration <= 0 {
		return nil
	}
	if f.At >= p.Duration {
		return hcl.Diagnostics{errorAt(f.atRange, "Fault after its phase ends",
			"Phase %q lasts %s; this fault starts at %s. Use an offset below %s, or move the fault to a later phase.", p.Name, p.Duration, f.At, p.Duration)}
	}
	// Compared as "longer than what is left" so huge values cannot overflow.
	if f.window(p) > p.Duration-f.At {
		rng, what := f.durationRange, "duration"
		if f.RestartAfter > 0 {
			rng, what = f.restartRange, "restart_after"
		}
		diags = append(diags, errorAt(rng, "Fault runs past its phase's end",
			"Phase %q lasts %s but this fault starts at %s and lasts %s. Shorten %s to at most %s, start it earlier, or lengthen the phase.",
			p.Name, p.Duration, f.At, f.window(p), what, p.Duration-f.At))
	}
	if f.Every > 0 {
		w := f.window(p)
		if faultKinds[f.Kind].windowed && !f.durationSet {
			diags = append(diags, errorAt(f.everyRange, "Repeating fault without a duration",
				"A %s fault that repeats needs a `duration` shorter than `every` (%s), or each occurrence would last to the end of the phase.", f.Kind, f.Every))
		} else if w >= f.Every {
			diags = append(diags, errorAt(f.everyRange, "Fault repeats before it ends",
				"Each occurrence lasts %s, so `every` must be longer than that; got %s.", w, f.Every))
		} else if n := occurrenceCount(f, p); n > maxOccurrences {
			diags = append(diags, errorAt(f.everyRange, "Fault repeats too often",
				"Every %s, this fault would fire %d times in phase %q; at most %d occurrences per fault are allowed. Use a longer `every`.", f.Every, n, p.Name, maxOccurrences))
		}
	}
	return diags
}

// maxOccurrences bounds how many times one repeating fault fires in a phase.
const maxOccurrences = 1000

// occurrenceCount is how many times a fault fires in its phase: every
// occurrence starts at At + k*Every and must end within the phase.
func occurrenceCount(f *Fault, p *Phase) int64 {
	w := f.window(p)
	if f.At >= p.Duration || w > p.Duration-f.At {
		return 0
	}
	if f.Every <= 0 {
		return 1
	}
	n := int64((p.Duration-f.At-w)/f.Every) + 1
	if w == 0 {
		// An instantaneous fault must also start before the phase ends.
		if last := f.At + plan.Duration(n-1)*f.Every; last >= p.Duration {
			n--
		}
	}
	return n
}

// validateForStore checks a workload against what its cluster's store
// supports, and fills in the store's default read mode.
func validateForStore(w *Workload, c plan.ClusterSpec, drv stores.Driver) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if !w.consistSet {
		w.Spec.Consistency = drv.Modes[0]
	} else if !contains(drv.Modes, w.Spec.Consistency) {
		diags = append(diags, errorAt(w.consistRange, "Consistency mode not supported by the store",
			"%s has no %q read mode. %s", c.Store, w.Spec.Consistency, didYouMean(w.Spec.Consistency, drv.Modes)))
	}
	if limit, why := drv.ValueLimit(c); w.valueSizeSet && int64(w.Spec.ValueSize) > limit {
		diags = append(diags, errorAt(w.valueSizeRange, "Value too large for the store",
			"%s refuses a value of %s: %s. Write at most %s.", c.Store, plan.FormatBytes(int64(w.Spec.ValueSize)), why, plan.FormatBytes(limit)))
	}
	diags = append(diags, validateClient(w, c.Store, drv.ClientKnobs)...)
	for _, m := range w.Spec.Mix {
		if !contains(drv.Ops, m.Op) {
			diags = append(diags, errorAt(w.mixRanges[m.Op], "Operation not supported by the store", "%s does not support %q. Allowed: %s.", c.Store, m.Op, quoteList(drv.Ops)))
		}
	}
	return diags
}
