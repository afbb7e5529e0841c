package dsl

import (
	"sort"
	"strings"

	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// targetRule says whether a fault kind acts on nodes chosen by a target.
type targetRule int

const (
	targetNone     targetRule = iota
	targetOptional            // network: a target narrows the shaping to those nodes
	targetRequired
)

// faultKind describes one kind of fault: its own attributes and how it is
// decoded. Kinds are listed in one table so that an unknown kind's diagnostic
// can name every allowed one.
type faultKind struct {
	attrs    []string
	target   targetRule
	windowed bool // lasts for `duration` (default: to the end of its phase)
	decode   func(f *Fault, a hcl.Attributes, d *decoder)
}

var faultKinds = map[string]faultKind{
	plan.FaultNetwork: {
		attrs: append([]string{"between"}, plan.ShapingParams...), target: targetOptional, windowed: true,
		decode: decodeNetworkFault,
	},
	plan.FaultPartition: {
		attrs: []string{"groups", "direction", "mode"}, target: targetOptional, windowed: true,
		decode: decodePartitionFault,
	},
	plan.FaultKill:           {attrs: []string{"restart_after"}, target: targetRequired, decode: decodeRestartAfter},
	plan.FaultStop:           {attrs: []string{"restart_after"}, target: targetRequired, decode: decodeRestartAfter},
	plan.FaultRestart:        {attrs: []string{"restart_after"}, target: targetRequired, decode: decodeRestartAfter},
	plan.FaultPause:          {attrs: []string{"workload"}, target: targetRequired, windowed: true, decode: decodePauseWorkload},
	plan.FaultVanish:         {attrs: []string{"workload", "count", "fraction"}, windowed: true, decode: decodeVanishFault},
	plan.FaultTransferLeader: {target: targetRequired, decode: decodeTransferTarget},
	plan.FaultDisk: {
		attrs: []string{"rate", "block_size", "fsync", "parallelism", "throttle"}, target: targetRequired, windowed: true,
		decode: decodeDiskFault,
	},
}

// FaultKinds lists every fault kind, sorted.
func FaultKinds() []string { return sortedKeys(faultKinds) }

var commonFaultAttrs = []string{"name", "cluster", "at", "duration", "every", "target", "region", "seed"}

// Fault is a decoded fault block. Offsets are relative to its phase.
type Fault struct {
	Kind      string
	Name      string
	DeclRange hcl.Range
	kindRange hcl.Range

	Cluster      string
	clusterRange hcl.Range
	clusterSet   bool

	At            plan.Duration
	atRange       hcl.Range
	Duration      plan.Duration // 0: to the end of the phase, for windowed kinds
	durationRange hcl.Range
	durationSet   bool
	Every         plan.Duration
	everyRange    hcl.Range

	Target      plan.TargetSpec
	targetRange hcl.Range
	targetSet   bool
	nodeRanges  []hcl.Range // per Target.Nodes entry
	seedSet     bool

	Network       *plan.NetworkEffect
	betweenRanges []hcl.Range
	Partition     *plan.PartitionSpec
	memberRanges  [][]hcl.Range
	RestartAfter  plan.Duration
	restartRange  hcl.Range
	Disk          *plan.DiskSpec
	Vanish        *plan.VanishSpec
	// Workload, on a pause, names the lock workload whose holder freezes.
	Workload      string
	workloadRange hcl.Range
}

func decodeFault(block *hcl.Block, d *decoder) *Fault {
	f := &Fault{Kind: block.Labels[0], Name: block.Labels[0], DeclRange: block.DefRange, kindRange: block.LabelRanges[0]}
	kind, ok := faultKinds[f.Kind]
	if !ok {
		d.errorf(block.LabelRanges[0], "Unknown fault kind", "%q is not a fault kind. %s", f.Kind, didYouMean(f.Kind, FaultKinds()))
		return nil
	}
	schema := &hcl.BodySchema{}
	for _, n := range append(append([]string{}, commonFaultAttrs...), kind.attrs...) {
		if kind.target == targetNone && (n == "target" || n == "region" || n == "seed") {
			continue
		}
		if !kind.windowed && n == "duration" {
			continue
		}
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: n})
	}
	content, diags := decodeBody(block.Body, schema)
	if !kind.windowed {
		diags = instantaneousDuration(diags, block, f.Kind)
	}
	d.diags = append(d.diags, diags...)
	a := content.Attributes
	f.atRange, f.durationRange, f.targetRange = block.DefRange, block.DefRange, block.DefRange
	if attr, ok := a["name"]; ok {
		if s, ok := d.str(attr); ok && s != "" {
			f.Name = s
		}
	}
	if attr, ok := a["cluster"]; ok {
		f.clusterSet = true
		f.Cluster, f.clusterRange = clusterRef(attr, d)
	}
	if attr, ok := a["at"]; ok {
		f.atRange = attr.Expr.Range()
		f.At, _ = d.duration(attr, true)
	}
	if attr, ok := a["duration"]; ok {
		f.durationRange, f.durationSet = attr.Expr.Range(), true
		f.Duration, _ = d.duration(attr, false)
	}
	if attr, ok := a["every"]; ok {
		f.everyRange = attr.Expr.Range()
		f.Every, _ = d.duration(attr, false)
	}
	decodeTarget(f, a, d)
	if _, holder := a["workload"]; holder && f.Kind == plan.FaultPause {
		if f.targetSet {
			d.errorf(f.targetRange, "Both target and workload", "A pause freezes either nodes (`target`) or a lock workload's holder (`workload`), not both.")
		}
	} else if f.Kind == plan.FaultTransferLeader && !f.targetSet {
		d.errorf(block.DefRange, "Missing fault target", "Say which node is to lead: %s", transferTargets)
	} else if kind.target == targetRequired && !f.targetSet {
		d.errorf(block.DefRange, "Missing fault target",
			"Say which nodes the %s fault acts on: `target = \"leader\"` (or \"follower\", \"minority\", \"majority\", \"random\", \"all\"), `target = 2` for node n2, `target = [1, 3]`, or `region = \"eu-west\"`.", f.Kind)
	}
	if kind.decode != nil {
		kind.decode(f, a, d)
	}
	return f
}

// instantaneousDuration replaces the generic "Unsupported argument" for a
// `duration` on a kill, stop or restart, which happen at one instant: how
// long the node stays down is restart_after.
func instantaneousDuration(diags hcl.Diagnostics, block *hcl.Block, kind string) hcl.Diagnostics {
	sb, ok := block.Body.(*hclsyntax.Body)
	if !ok {
		return diags
	}
	attr, ok := sb.Attributes["duration"]
	if !ok {
		return diags
	}
	out := hcl.Diagnostics{errorAt(attr.NameRange, "Unsupported argument",
		"A %s fault happens at one instant and has no duration: to bring the node back after a while, write `restart_after = \"10s\"`.", kind)}
	for _, d := range diags {
		if d.Subject != nil && *d.Subject == attr.NameRange {
			continue
		}
		out = append(out, d)
	}
	return out
}

var targetKeywords = []string{plan.TargetLeader, plan.TargetFollower, plan.TargetMinority, plan.TargetMajority, plan.TargetRandom, plan.TargetAll}

func decodeTarget(f *Fault, a hcl.Attributes, d *decoder) {
	attr, hasTarget := a["target"]
	region, hasRegion := a["region"]
	if seed, ok := a["seed"]; ok {
		f.Target.Seed, _ = d.integer(seed, -1<<62, 1<<62)
		f.seedSet = true
	}
	if hasTarget && hasRegion {
		d.errorf(region.Range, "Both target and region", "Choose nodes either with `target` or with `region`, not both.")
		// A target was given, just twice: do not also report it missing.
		f.targetSet = true
		return
	}
	if hasRegion {
		f.targetRange, f.targetSet = region.Expr.Range(), true
		f.Target.Kind = plan.TargetRegion
		f.Target.Region, _ = d.str(region)
		return
	}
	if !hasTarget {
		return
	}
	f.targetRange, f.targetSet = attr.Expr.Range(), true
	if exprs, diags := hcl.ExprList(attr.Expr); !diags.HasErrors() {
		f.Target.Kind = plan.TargetNodes
		if len(exprs) == 0 {
			d.errorf(attr.Expr.Range(), "Empty target", "List at least one node, such as `target = [1]`.")
		}
		seen := map[int64]hcl.Range{}
		for _, e := range exprs {
			n, ok := d.integer(&hcl.Attribute{Name: "target", Expr: e, Range: e.Range()}, 1, maxNodes)
			if prev, dup := seen[n]; ok && dup {
				d.errorf(e.Range(), "Node listed twice", "%s is already in this target at %s; list each node once.", plan.NodeName(int(n)), prev)
				continue
			}
			seen[n] = e.Range()
			if ok {
				f.Target.Nodes = append(f.Target.Nodes, int(n))
				f.nodeRanges = append(f.nodeRanges, e.Range())
			}
		}
		return
	}
	v, ok := d.value(attr)
	if !ok {
		return
	}
	switch v.Type() {
	case cty.Number:
		if n, ok := d.integer(attr, 1, maxNodes); ok {
			f.Target.Kind, f.Target.Nodes = plan.TargetNodes, []int{int(n)}
			f.nodeRanges = []hcl.Range{attr.Expr.Range()}
		}
	case cty.String:
		s := v.AsString()
		if !contains(targetKeywords, s) {
			d.errorf(attr.Expr.Range(), "Unknown target", "%q is not a target. %s Use a number for one node (`target = 2`), a list for several, or `region = \"...\"`.", s, didYouMean(s, targetKeywords))
			return
		}
		f.Target.Kind = s
	default:
		d.errorf(attr.Expr.Range(), "Invalid target", "Write a keyword (\"leader\", \"follower\", \"minority\", \"majority\", \"random\", \"all\"), a node number, or a list of node numbers.")
	}
}

func decodeRestartAfter(f *Fault, a hcl.Attributes, d *decoder) {
	if attr, ok := a["restart_after"]; ok {
		f.restartRange = attr.Expr.Range()
		f.RestartAfter, _ = d.duration(attr, f.Kind == plan.FaultRestart)
	}
}

func decodeNetworkFault(f *Fault, a hcl.Attributes, d *decoder) {
	e := &plan.NetworkEffect{}
	f.Network = e
	if attr, ok := a["between"]; ok {
		regions, rngs, ok := d.stringList(attr)
		if ok && len(regions) != 2 {
			d.errorf(attr.Expr.Range(), "Invalid between", "Name the two regions whose link changes, such as `between = [\"us-east\", \"eu-west\"]`.")
		} else if ok {
			e.Between, f.betweenRanges = regions, rngs
		}
		if f.targetSet {
			d.errorf(attr.Range, "Both between and target", "Shape either one link (`between`) or every path of some nodes (`target`/`region`), not both.")
		}
	}
	var set int
	e.Shaping, set = decodeShaping(a, d)
	if attr, ok := a["jitter"]; ok && e.RTT > 0 {
		// Without rtt the fault keeps the declared link's, checked there.
		checkJitter(d, attr, e.RTT, e.Jitter)
	}
	if set == 0 {
		d.errorf(f.DeclRange, "Network fault changes nothing", "Set at least one of rtt, jitter, loss or bandwidth, such as `rtt = \"200ms\"`.")
	}
}

func decodePartitionFault(f *Fault, a hcl.Attributes, d *decoder) {
	p := &plan.PartitionSpec{Direction: plan.DirectionBoth, Mode: plan.PartitionDrop}
	f.Partition = p
	if attr, ok := a["direction"]; ok {
		p.Direction, _ = d.oneOf(attr, []string{plan.DirectionBoth, plan.DirectionTo, plan.DirectionFrom})
	}
	if attr, ok := a["mode"]; ok {
		p.Mode, _ = d.oneOf(attr, []string{plan.PartitionDrop, plan.PartitionReject})
	}
	attr, hasGroups := a["groups"]
	switch {
	case hasGroups && f.targetSet:
		d.errorf(attr.Range, "Both groups and target", "Either cut between `groups`, or isolate the `target` from everything else; not both.")
		return
	case !hasGroups && !f.targetSet:
		d.errorf(f.DeclRange, "Partition of nothing",
			"Say what to cut: `groups = [[\"us-east\"], [\"eu-west\", \"ap-south\"]]` (regions or node numbers), or `target = \"leader\"` to isolate the leader.")
		return
	case !hasGroups:
		return
	}
	outer, diags := hcl.ExprList(attr.Expr)
	if diags.HasErrors() || len(outer) < 2 {
		d.errorf(attr.Expr.Range(), "Invalid groups", "List at least two groups, each a list of regions or node numbers, such as `groups = [[1], [2, 3]]`.")
		return
	}
	for _, g := range outer {
		inner, diags := hcl.ExprList(g)
		if diags.HasErrors() || len(inner) == 0 {
			d.errorf(g.Range(), "Invalid group", "Each group is a non-empty list of regions or node numbers, such as `[\"eu-west\"]` or `[2, 3]`.")
			continue
		}
		var group []plan.Member
		var rngs []hcl.Range
		for _, e := range inner {
			el := &hcl.Attribute{Name: "groups element", Expr: e, Range: e.Range()}
			v, ok := d.value(el)
			if !ok {
				continue
			}
			switch v.Type() {
			case cty.String:
				group = append(group, plan.Member{Region: v.AsString()})
			case cty.Number:
				if n, ok := d.integer(el, 1, maxNodes); ok {
					group = append(group, plan.Member{Node: int(n)})
				} else {
					continue
				}
			default:
				d.errorf(e.Range(), "Invalid group member", "A group member is a region name (\"eu-west\") or a node number (2).")
				continue
			}
			rngs = append(rngs, e.Range())
		}
		p.Groups = append(p.Groups, group)
		f.memberRanges = append(f.memberRanges, rngs)
	}
}

const (
	defaultDiskBlock = 64 << 10
)

func decodeDiskFault(f *Fault, a hcl.Attributes, d *decoder) {
	disk := &plan.DiskSpec{BlockSize: defaultDiskBlock, Fsync: true, Parallelism: 1}
	f.Disk = disk
	if attr, ok := a["rate"]; ok {
		if s, ok := d.str(attr); ok && s != "unlimited" {
			n, err := plan.ParseSize(strings.TrimSuffix(strings.TrimSpace(s), "/s"))
			if err != nil || !strings.HasSuffix(strings.TrimSpace(s), "/s") || n <= 0 {
				d.errorf(attr.Expr.Range(), "Invalid disk rate", "Write bytes per second, such as \"50MiB/s\", or \"unlimited\".")
			} else {
				disk.Rate = n
			}
		}
	}
	if attr, ok := a["block_size"]; ok {
		disk.BlockSize, _ = d.size(attr, 512, 64<<20)
	}
	if attr, ok := a["fsync"]; ok {
		disk.Fsync, _ = d.boolean(attr)
	}
	if attr, ok := a["throttle"]; ok {
		if s, ok := d.str(attr); ok {
			n, err := plan.ParseSize(strings.TrimSuffix(strings.TrimSpace(s), "/s"))
			if err != nil || !strings.HasSuffix(strings.TrimSpace(s), "/s") || n <= 0 {
				d.errorf(attr.Expr.Range(), "Invalid disk throttle", "Limit the node's own writes to bytes per second, such as \"1MiB/s\".")
			} else {
				disk.Throttle = n
			}
		}
	}
	if attr, ok := a["parallelism"]; ok {
		// 0 writers makes sense only when the fault throttles the node.
		n, ok := d.integer(attr, 0, 64)
		disk.Parallelism = int(n)
		if ok && n == 0 && disk.Throttle == 0 {
			d.errorf(attr.Expr.Range(), "Disk fault does nothing",
				"parallelism = 0 starts no competing writer; set throttle = \"1MiB/s\" to limit the node's own writes instead, or use parallelism >= 1.")
		}
	}
}

func sortedInts(in []int) []int {
	out := append([]int(nil), in...)
	sort.Ints(out)
	return out
}

// decodeVanishFault reads a vanish fault: which registry, and how many of
// its instances (count, or fraction of those registered; default one).
func decodeVanishFault(f *Fault, a hcl.Attributes, d *decoder) {
	v := &plan.VanishSpec{}
	f.Vanish = v
	f.workloadRange = f.DeclRange
	if attr, ok := a["workload"]; ok {
		f.workloadRange = attr.Expr.Range()
		v.Workload, _ = d.str(attr)
	} else {
		d.errorf(f.DeclRange, "Missing workload", "Say whose instances vanish: `workload = \"services\"`, the name of a workload with a registry block.")
	}
	count, hasCount := a["count"]
	fraction, hasFraction := a["fraction"]
	switch {
	case hasCount && hasFraction:
		d.errorf(fraction.Range, "Both count and fraction", "Say how many instances vanish either with `count` or with `fraction`, not both.")
	case hasCount:
		n, _ := d.integer(count, 1, maxInstances)
		v.Count = int(n)
	case hasFraction:
		if x, ok := d.number(fraction); ok {
			if x <= 0 || x > 1 {
				d.errorf(fraction.Expr.Range(), "Invalid fraction", "fraction is the share of registered instances that vanish, above 0 and at most 1, such as 0.1.")
			}
			v.Fraction = x
		}
	default:
		v.Count = 1
	}
}

// transferTargets is what a leadership transfer's target may be.
const transferTargets = "`target = 2` for node n2, `target = \"follower\"` for one drawn from the nodes that do not lead when the fault fires, or `region = \"eu-west\"` for a node placed there (the leader if it is one of them, else the lowest-numbered one running)."

// decodeTransferTarget refuses a leadership transfer to anything but one
// node, or a region's nodes (one of which is picked when it fires).
func decodeTransferTarget(f *Fault, _ hcl.Attributes, d *decoder) {
	t := f.Target
	if !f.targetSet || t.Kind == "" || t.Kind == plan.TargetFollower || t.Kind == plan.TargetRegion || t.Kind == plan.TargetNodes && len(t.Nodes) == 1 {
		// Unset or invalid targets are reported already.
		return
	}
	detail := "Leadership goes to one node: " + transferTargets
	if t.Kind == plan.TargetLeader {
		detail = "The leader leads already. " + detail
	}
	d.errorf(f.targetRange, "Transfer to one node", "%s", detail)
}

// decodePauseWorkload reads the workload of a pause that freezes a lock
// workload's holder instead of nodes.
func decodePauseWorkload(f *Fault, a hcl.Attributes, d *decoder) {
	if attr, ok := a["workload"]; ok {
		f.workloadRange = attr.Expr.Range()
		f.Workload, _ = d.str(attr)
	}
}
