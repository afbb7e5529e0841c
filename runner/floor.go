package runner

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// floorResults puts in each phase the write-latency floor that the
// declared links imply for the leader in office (see writeFloor), beside
// the measured put p50 and the store's own fsync: what a tuning user
// reads to see how much of a write's latency is the network's.
func (c *clusterRun) floorResults(res *results.Results) {
	for i := range res.Phases {
		if f, ok := phaseFloor(c.plan, c.spec, res.Leader, &res.Phases[i]); ok {
			res.Phases[i].WriteFloor = f
		}
	}
}

// phaseFloor is writeFloor for one phase, measured against its put p50.
// It has none when the network is unshaped, when a network fault or
// partition acts in the phase, when the leader changed in it (or none was
// seen), or when the writing workloads' clients sit in different places.
func phaseFloor(pl *plan.Plan, spec plan.ClusterSpec, leaders []results.LeaderObservation, p *results.Phase) (*results.WriteFloor, bool) {
	if !pl.Network.Shaped() {
		return nil, false
	}
	leader, ok := leaderOver(leaders, p.StartMS, p.StartMS+p.DurationMS)
	if !ok {
		return nil, false
	}
	var writers []plan.WorkloadSpec
	for _, ev := range pl.Events {
		if ev.Phase != p.Name {
			continue
		}
		if ev.Kind == plan.EventFaultInject && ev.Fault != nil && (ev.Fault.Kind == plan.FaultNetwork || ev.Fault.Kind == plan.FaultPartition) {
			return nil, false
		}
		if ev.Kind == plan.EventLoad && ev.Load != nil {
			if w, ok := workloadNamed(pl, ev.Load.Workload); ok && writesPuts(w) {
				writers = append(writers, w)
			}
		}
	}
	if len(writers) == 0 {
		return nil, false
	}
	for _, w := range writers[1:] {
		if w.Region != writers[0].Region || w.Endpoints != writers[0].Endpoints {
			return nil, false
		}
	}
	path := writeFloor(pl.Network, spec, writers[0], leader)
	floor := path.ms
	f := &results.WriteFloor{Leader: leader, FloorMS: floor,
		Path: fmt.Sprintf("clients in %s to their members, on to n%d, and n%d's quorum", writers[0].Region, leader, leader)}
	if path.jitterMS > 0 {
		f.JitterMS = results.Ptr(path.jitterMS)
	}
	for _, o := range p.Ops {
		if o.Op == plan.OpPut && o.Latency != nil {
			f.PutP50MS = results.Ptr(o.Latency.P50MS)
			f.ExcessMS = results.Ptr(o.Latency.P50MS - floor)
			if floor > 0 {
				f.ExcessPct = results.Ptr(100 * (o.Latency.P50MS/floor - 1))
			}
		}
	}
	if st, ok := p.Server["fsync"]; ok {
		if v, ok := st.Values["p50"]; ok {
			f.FsyncP50MS = results.Ptr(v)
		}
	}
	return f, true
}

// leaderOver is the one leader in office over [from, to) ms: the last one
// observed before from, and no other observed in the window. Polls no node
// answered say nothing either way and are passed over.
func leaderOver(obs []results.LeaderObservation, from, to float64) (int, bool) {
	leader := 0
	for _, o := range obs {
		switch {
		case o.Unanswered && o.AtMS < to:
		case o.AtMS >= to:
			return leader, leader != 0
		case o.AtMS <= from:
			leader = o.Leader
		case o.Leader != leader:
			if leader != 0 || o.Leader == 0 {
				return 0, false
			}
			leader = o.Leader
		}
	}
	return leader, leader != 0
}

func workloadNamed(pl *plan.Plan, name string) (plan.WorkloadSpec, bool) {
	for _, w := range pl.Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return plan.WorkloadSpec{}, false
}

func writesPuts(w plan.WorkloadSpec) bool {
	return slices.ContainsFunc(w.Mix, func(o plan.OpWeight) bool { return o.Op == plan.OpPut && o.Weight > 0 })
}

// writeFloor is the least time, in ms, that the declared links allow a put
// from w's clients while node leader leads: every store here (etcd,
// ZooKeeper, Consul) takes a write at the member the client talks to,
// forwards it to the leader, commits it once a majority holds it and
// tells the member, which answers. So a write through member m crosses
// RTT(clients, m) + RTT(m, leader) (none when m leads) + the leader's
// quorum RTT, the (nodes/2)-th smallest RTT from the leader to the
// others. The clients spread over their members evenly, so the floor of
// their p50 is the lower median of that over the members; fsync and
// processing come on top. The jitter declared on the round trips of that
// path is summed beside it: the floor leaves it out, though it raises a
// link's median (a link never reorders, so a packet drawn early waits for
// the one before it).
func writeFloor(n plan.NetworkSpec, spec plan.ClusterSpec, w plan.WorkloadSpec, leader int) floorPath {
	link := func(a, b string) floorPath {
		l := regionLink(n, a, b)
		return floorPath{ms: float64(l.RTT.D()) / 1e6, jitterMS: float64(l.Jitter.D()) / 1e6}
	}
	region := func(node int) string { return spec.Placement[node-1] }
	var peers []floorPath
	for m := 1; m <= spec.Nodes; m++ {
		if m != leader {
			peers = append(peers, link(region(leader), region(m)))
		}
	}
	byMS := func(a, b floorPath) int { return cmp.Compare(a.ms, b.ms) }
	slices.SortStableFunc(peers, byMS)
	var quorum floorPath
	if k := spec.Nodes / 2; k > 0 && k <= len(peers) {
		quorum = peers[k-1]
	}
	var members []int
	if w.Endpoints == plan.EndpointsLocal {
		for m := 1; m <= spec.Nodes; m++ {
			if region(m) == w.Region {
				members = append(members, m)
			}
		}
	}
	if len(members) == 0 {
		for m := 1; m <= spec.Nodes; m++ {
			members = append(members, m)
		}
	}
	floors := make([]floorPath, len(members))
	for i, m := range members {
		floors[i] = link(w.Region, region(m)).plus(quorum)
		if m != leader {
			floors[i] = floors[i].plus(link(region(m), region(leader)))
		}
	}
	slices.SortStableFunc(floors, byMS)
	return floors[(len(floors)-1)/2]
}

// floorPath is a write's path's declared RTTs, summed, and the jitter
// declared on them, summed, in ms.
type floorPath struct{ ms, jitterMS float64 }

func (a floorPath) plus(b floorPath) floorPath {
	return floorPath{a.ms + b.ms, a.jitterMS + b.jitterMS}
}
