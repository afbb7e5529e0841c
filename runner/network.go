package runner

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/fabric/shaper"
)

// observerHost is the runner's own host in a fabric: the leader poller,
// readiness checks and the read-back of acknowledged writes dial from it.
// No link of it is ever shaped or cut, so observing never disturbs, and is
// never disturbed by, the experiment.
const observerHost = "observer"

// clientHost names the host of the clients in region r.
func clientHost(r string) string { return "client-" + r }

// needsFabric reports whether a plan shapes or cuts the network.
func needsFabric(p *dsl.Plan) bool {
	if p.Network.Shaped() {
		return true
	}
	for _, e := range p.Events {
		if e.Kind == dsl.EventFaultInject && netKind(e.Fault.Kind) {
			return true
		}
	}
	return false
}

func netKind(kind string) bool { return kind == dsl.FaultNetwork || kind == dsl.FaultPartition }

// netHost is a fabric host as the link policy sees it.
type netHost struct {
	name     string
	region   string
	node     int // 1-based node index; 0 for client and observer hosts
	observer bool
}

// netFault is a network or partition fault in effect.
type netFault struct {
	spec    dsl.FaultSpec
	targets []int // resolved nodes, for faults with a target
}

// fabricHosts lists a plan's hosts: its nodes, one client host per region
// that has workloads, and the observer.
func fabricHosts(p *dsl.Plan, c dsl.ClusterSpec) []netHost {
	var hs []netHost
	for i, r := range c.Placement {
		hs = append(hs, netHost{name: dsl.NodeName(i + 1), region: r, node: i + 1})
	}
	seen := map[string]bool{}
	for _, w := range p.Workloads {
		if !seen[w.Region] {
			seen[w.Region] = true
			hs = append(hs, netHost{name: clientHost(w.Region), region: w.Region})
		}
	}
	return append(hs, netHost{name: observerHost, observer: true})
}

// linkPolicy computes every ordered pair's shaping from the plan's network
// and the faults in effect. It is pure: the same inputs give the same
// links.
func linkPolicy(hosts []netHost, n dsl.NetworkSpec, active []netFault) [][]shaper.Link {
	out := make([][]shaper.Link, len(hosts))
	for i, a := range hosts {
		out[i] = make([]shaper.Link, len(hosts))
		for j, b := range hosts {
			if i == j || a.observer || b.observer {
				continue
			}
			l := regionLink(n, a.region, b.region)
			for _, f := range active {
				if f.spec.Kind == dsl.FaultNetwork && networkFaultApplies(f, a, b) {
					l = override(l, *f.spec.Network)
				}
			}
			sl := toShaper(l)
			for _, f := range active {
				if f.spec.Kind == dsl.FaultPartition && partitionCuts(f, a, b) {
					sl.Down = true
				}
			}
			out[i][j] = sl
		}
	}
	return out
}

// regionLink is the declared link between two regions: a link block naming
// both (in either order), else the default link. Two hosts of one region
// are a pair like any other: the default applies between them unless a
// link names the region twice.
func regionLink(n dsl.NetworkSpec, a, b string) dsl.LinkSpec {
	for _, l := range n.Links {
		if (l.A == a && l.B == b) || (l.A == b && l.B == a) {
			return l
		}
	}
	return n.Default
}

// override replaces the fields a network fault sets; the others keep the
// declared link's values, so a fault adding loss keeps the RTT.
func override(l dsl.LinkSpec, e dsl.NetworkEffect) dsl.LinkSpec {
	if e.RTT > 0 {
		l.RTT = e.RTT
	}
	if e.Jitter > 0 {
		l.Jitter = e.Jitter
	}
	if e.Loss > 0 {
		l.Loss = e.Loss
	}
	if e.Bandwidth > 0 {
		l.Bandwidth = e.Bandwidth
	}
	return l
}

// toShaper turns a round-trip link into one direction's shaping: half the
// RTT each way; jitter split so that round trips vary with a standard
// deviation of the declared jitter; loss and bandwidth apply to each
// direction.
func toShaper(l dsl.LinkSpec) shaper.Link {
	return shaper.Link{
		Delay:  l.RTT.D() / 2,
		Jitter: fabric.JitterPerDirection(l.Jitter.D()),
		Loss:   l.Loss / 100,
		Rate:   l.Bandwidth,
	}
}

func networkFaultApplies(f netFault, a, b netHost) bool {
	e := f.spec.Network
	switch {
	case len(e.Between) == 2:
		return (a.region == e.Between[0] && b.region == e.Between[1]) || (a.region == e.Between[1] && b.region == e.Between[0])
	case len(f.targets) > 0:
		return slices.Contains(f.targets, a.node) || slices.Contains(f.targets, b.node)
	}
	return true
}

// partitionCuts reports whether f drops traffic from a to b. Direction is
// relative to the first group (or the targeted nodes): "to" drops traffic
// into it, "from" traffic out of it, "both" either way. Traffic between two
// other groups is cut both ways; hosts in no group keep talking to all.
func partitionCuts(f netFault, a, b netHost) bool {
	ga, gb := partitionGroup(f, a), partitionGroup(f, b)
	if ga < 0 || gb < 0 || ga == gb {
		return false
	}
	if ga != 0 && gb != 0 {
		return true
	}
	switch f.spec.Partition.Direction {
	case dsl.DirectionTo:
		return gb == 0
	case dsl.DirectionFrom:
		return ga == 0
	}
	return true
}

// partitionGroup is the index of h's group, or -1 if it is in none. With no
// groups, the targets form group 0 and every other host group 1.
func partitionGroup(f netFault, h netHost) int {
	p := f.spec.Partition
	if len(p.Groups) == 0 {
		if h.node > 0 && slices.Contains(f.targets, h.node) {
			return 0
		}
		return 1
	}
	for i, g := range p.Groups {
		for _, m := range g {
			if (m.Node > 0 && m.Node == h.node) || (m.Region != "" && m.Region == h.region) {
				return i
			}
		}
	}
	return -1
}

// network applies the link policy to a fabric as faults come and go.
type network struct {
	fab   *fabric.Fabric
	hosts []netHost
	spec  dsl.NetworkSpec

	mu     sync.Mutex
	active []netFault
	links  [][]shaper.Link // as last applied
}

func newNetwork(fab *fabric.Fabric, hosts []netHost, spec dsl.NetworkSpec) *network {
	n := &network{fab: fab, hosts: hosts, spec: spec}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.applyLocked()
	return n
}

// applyLocked recomputes every link and changes those that differ.
func (n *network) applyLocked() {
	next := linkPolicy(n.hosts, n.spec, n.active)
	fh := n.fab.Hosts()
	for i := range next {
		for j := range next[i] {
			if i == j || (n.links != nil && n.links[i][j] == next[i][j]) {
				continue
			}
			n.fab.SetLink(fh[i], fh[j], next[i][j])
		}
	}
	n.links = next
}

// inject puts f into effect and returns when every link reflects it, and
// the function that takes it out again.
func (n *network) inject(f dsl.FaultSpec, targets []int) (time.Time, func(context.Context) error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	nf := netFault{spec: f, targets: targets}
	n.active = append(n.active, nf)
	n.applyLocked()
	applied := time.Now()
	return applied, func(context.Context) error {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.active = slices.DeleteFunc(n.active, func(a netFault) bool { return a.spec.ID == f.ID })
		n.applyLocked()
		return nil
	}
}

// describe says how the plan's links were realised, for the run's notes.
func (n *network) describe() string {
	return fmt.Sprintf("%d hosts in network namespaces, shaped by %s", len(n.hosts), fabric.Backend)
}
