package runner

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/fabric/shaper"
	"github.com/coordlab/scenario/plan"
)

// observerHost is the runner's own host in a fabric: the leader poller,
// readiness checks and the read-back of acknowledged writes dial from it.
// No link of it is ever shaped or cut, so observing never disturbs, and is
// never disturbed by, the experiment.
const observerHost = "observer"

// needsFabric reports whether a plan shapes or cuts the network.
func needsFabric(p *plan.Plan) bool {
	if p.Network.Shaped() {
		return true
	}
	for _, e := range p.Events {
		if e.Kind == plan.EventFaultInject && injectors()[e.Fault.Kind].needsFabric {
			return true
		}
	}
	return false
}

// netHost is a fabric host as the link policy sees it.
type netHost struct {
	name     string
	region   string
	cluster  string // the node's cluster; "" for client and observer hosts
	node     int    // 1-based node index in its cluster; 0 for client and observer hosts
	observer bool
	attach   int        // a process whose network namespace is the host's (a load worker's pod); 0 for one of the fabric's
	pod      netip.Addr // a load worker pod's IP, for rules in pods
}

// netFault is a network or partition fault in effect.
type netFault struct {
	spec    plan.FaultSpec
	targets []int // resolved nodes, for faults with a target
}

// fabricHosts lists a run's hosts: every cluster's nodes, one client host
// per region that has workloads (shared by the clusters), and the
// observer.
func (x *execution) fabricHosts() []netHost {
	var hs []netHost
	for _, c := range x.clusters {
		for i, r := range c.spec.Placement {
			hs = append(hs, netHost{name: c.nodeName(i + 1), region: r, cluster: c.spec.Name, node: i + 1})
		}
	}
	for _, r := range x.plan.ClientRegions() {
		hs = append(hs, netHost{name: plan.ClientHost(r), region: r})
	}
	for _, c := range x.clusters {
		if k, ok := c.prov.(*kubeProvider); ok {
			hs = append(hs, k.workerHosts()...)
		}
	}
	return append(hs, netHost{name: observerHost, observer: true})
}

// linkPolicy computes every ordered pair's shaping from the plan's network
// and the faults in effect. It is pure: the same inputs give the same
// links.
func linkPolicy(hosts []netHost, n plan.NetworkSpec, active []netFault) [][]shaper.Link {
	out := make([][]shaper.Link, len(hosts))
	for i, a := range hosts {
		out[i] = make([]shaper.Link, len(hosts))
		for j, b := range hosts {
			if i == j || a.observer || b.observer {
				continue
			}
			l := regionLink(n, a.region, b.region)
			for _, f := range active {
				if f.spec.Kind == plan.FaultNetwork && networkFaultApplies(f, a, b) {
					l.Shaping = l.Over(f.spec.Network.Shaping)
				}
			}
			sl := fabric.OneWay(l.RTT.D(), l.Jitter.D(), l.Loss, l.Bandwidth)
			for _, f := range active {
				if f.spec.Kind == plan.FaultPartition && partitionCuts(f, a, b) {
					sl.Down = true
					// A drop anywhere makes the pair silent; reject only
					// when every cut on it rejects.
					sl.Reject = f.spec.Partition.Mode == plan.PartitionReject && (sl.Reject || !cutBefore(active, f, a, b))
				}
			}
			out[i][j] = sl
		}
	}
	return out
}

// regionLink is the declared link between two regions: a link block naming
// both (in either order), else the default link. Two hosts of one region
// (a client and the member beside it) get a link naming the region twice,
// else the within link, which is unshaped unless declared: "default" reads
// as "between regions", so it never puts its RTT between neighbours.
func regionLink(n plan.NetworkSpec, a, b string) plan.LinkSpec {
	for _, l := range n.Links {
		if (l.A == a && l.B == b) || (l.A == b && l.B == a) {
			return l
		}
	}
	if a == b {
		return n.Within
	}
	return n.Default
}

func networkFaultApplies(f netFault, a, b netHost) bool {
	e := f.spec.Network
	switch {
	case len(e.Between) == 2:
		return (a.region == e.Between[0] && b.region == e.Between[1]) || (a.region == e.Between[1] && b.region == e.Between[0])
	case len(f.targets) > 0:
		return f.targeted(a) || f.targeted(b)
	}
	return true
}

// targeted reports whether h is one of the nodes the fault resolved to.
func (f netFault) targeted(h netHost) bool {
	return h.node > 0 && h.cluster == f.spec.Cluster && slices.Contains(f.targets, h.node)
}

// cutBefore reports whether a partition listed before f in active also
// cuts a from b.
func cutBefore(active []netFault, f netFault, a, b netHost) bool {
	for _, g := range active {
		if g.spec.ID == f.spec.ID {
			return false
		}
		if g.spec.Kind == plan.FaultPartition && partitionCuts(g, a, b) {
			return true
		}
	}
	return false
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
	case plan.DirectionTo:
		return gb == 0
	case plan.DirectionFrom:
		return ga == 0
	}
	return true
}

// partitionGroup is the index of h's group, or -1 if it is in none. With no
// groups, the targets form group 0 and every other host group 1.
func partitionGroup(f netFault, h netHost) int {
	p := f.spec.Partition
	if len(p.Groups) == 0 {
		if f.targeted(h) {
			return 0
		}
		return 1
	}
	for i, g := range p.Groups {
		for _, m := range g {
			if (m.Node > 0 && m.Node == h.node && h.cluster == f.spec.Cluster) || (m.Region != "" && m.Region == h.region) {
				return i
			}
		}
	}
	return -1
}

// network applies the link policy to a backend as faults come and go.
type network struct {
	links linkBackend
	hosts []netHost
	spec  plan.NetworkSpec

	mu      sync.Mutex
	active  []netFault
	applied [][]shaper.Link // as last applied
}

// linkBackend puts links into force: the fabric between namespaces on this
// machine, or rules in each pod of a remote cluster.
type linkBackend interface {
	// setLinks changes the links between hosts (indices into the
	// network's hosts) all at once.
	setLinks(ctx context.Context, changes []linkChange) error
	describe(hosts int) string
}

// linkChange is one ordered pair's new link.
type linkChange struct {
	from, to int
	link     shaper.Link
}

// fabricLinks is the fabric as a link backend; its hosts are the
// network's, in the same order.
type fabricLinks struct{ fab *fabric.Fabric }

func (f fabricLinks) setLinks(ctx context.Context, changes []linkChange) error {
	fh := f.fab.Hosts()
	out := make([]fabric.LinkChange, len(changes))
	for i, c := range changes {
		out[i] = fabric.LinkChange{From: fh[c.from], To: fh[c.to], Link: c.link}
	}
	return f.fab.SetLinks(ctx, out)
}

func (f fabricLinks) describe(hosts int) string {
	return fmt.Sprintf("%d hosts in network namespaces, shaped by %s", hosts, f.fab.Backend())
}

func newNetwork(ctx context.Context, links linkBackend, hosts []netHost, spec plan.NetworkSpec) (*network, error) {
	n := &network{links: links, hosts: hosts, spec: spec}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n, n.applyLocked(ctx)
}

// applyLocked recomputes every link and changes those that differ, all at
// once.
func (n *network) applyLocked(ctx context.Context) error {
	next := linkPolicy(n.hosts, n.spec, n.active)
	var changes []linkChange
	for i := range next {
		for j := range next[i] {
			if i == j || (n.applied != nil && n.applied[i][j] == next[i][j]) {
				continue
			}
			changes = append(changes, linkChange{from: i, to: j, link: next[i][j]})
		}
	}
	if err := n.links.setLinks(ctx, changes); err != nil {
		return err
	}
	n.applied = next
	return nil
}

// inject puts f into effect and returns when every link reflects it, and
// the function that takes it out again.
func (n *network) inject(ctx context.Context, f plan.FaultSpec, targets []int) (time.Time, func(context.Context) error, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	nf := netFault{spec: f, targets: targets}
	n.active = append(n.active, nf)
	if err := n.applyLocked(ctx); err != nil {
		return time.Time{}, nil, err
	}
	applied := time.Now()
	return applied, func(ctx context.Context) error {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.active = slices.DeleteFunc(n.active, func(a netFault) bool { return a.spec.ID == f.ID })
		return n.applyLocked(ctx)
	}, nil
}

// describe says how the plan's links were realised, for the run's notes.
func (n *network) describe() string { return n.links.describe(len(n.hosts)) }
