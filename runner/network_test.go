package runner

import (
	"testing"
	"time"

	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/fabric/shaper"
	"github.com/coordlab/scenario/plan"
)

func TestLinkPolicy(t *testing.T) {
	ms := func(n int) plan.Duration { return plan.Duration(time.Duration(n) * time.Millisecond) }
	hosts := []netHost{
		{name: "n1", region: "east", cluster: "main", node: 1},
		{name: "n2", region: "east", cluster: "main", node: 2},
		{name: "n3", region: "west", cluster: "main", node: 3},
		{name: "client-east", region: "east"},
		{name: observerHost, observer: true},
		// Node 1 of a second cluster: faults of "main" target its nodes only.
		{name: "other-n1", region: "east", cluster: "other", node: 1},
	}
	const n1, n2, n3, ce, obs, o1 = 0, 1, 2, 3, 4, 5
	network := plan.NetworkSpec{
		Default: plan.LinkSpec{Shaping: plan.Shaping{RTT: ms(100)}},
		Within:  plan.LinkSpec{Shaping: plan.Shaping{RTT: ms(2)}},
		Links:   []plan.LinkSpec{{A: "west", B: "east", Shaping: plan.Shaping{RTT: ms(40), Jitter: ms(10), Loss: 1, Bandwidth: 10e6}}},
	}
	local := shaper.Link{Delay: time.Millisecond}
	eastWest := shaper.Link{Delay: 20 * time.Millisecond, Jitter: fabric.JitterPerDirection(10 * time.Millisecond), Loss: 0.01, Rate: 10e6}
	fault := func(kind string, mod func(*plan.FaultSpec), targets ...int) netFault {
		f := plan.FaultSpec{ID: kind, Kind: kind, Cluster: "main"}
		switch kind {
		case plan.FaultNetwork:
			f.Network = &plan.NetworkEffect{}
		case plan.FaultPartition:
			f.Partition = &plan.PartitionSpec{Direction: plan.DirectionBoth}
		}
		mod(&f)
		return netFault{spec: f, targets: targets}
	}
	type pair struct{ from, to int }
	tests := []struct {
		name   string
		active []netFault
		want   map[pair]shaper.Link // pairs not listed are not checked
	}{
		{
			name: "declared links both ways, the default within a region, never the observer",
			want: map[pair]shaper.Link{
				{n1, n3}: eastWest, {n3, n1}: eastWest, {ce, n3}: eastWest,
				{n1, n2}: local, {ce, n1}: local, {obs, n3}: {}, {n3, obs}: {},
			},
		},
		{
			name: "a network fault between regions overrides only what it sets",
			active: []netFault{fault(plan.FaultNetwork, func(f *plan.FaultSpec) {
				f.Network.Between, f.Network.Loss = []string{"east", "west"}, 50
			})},
			want: map[pair]shaper.Link{
				{n1, n3}: {Delay: 20 * time.Millisecond, Jitter: fabric.JitterPerDirection(10 * time.Millisecond), Loss: 0.5, Rate: 10e6},
				{n1, n2}: local, {obs, n3}: {},
			},
		},
		{
			name: "a network fault on a node shapes every path of that node, in its cluster only",
			active: []netFault{fault(plan.FaultNetwork, func(f *plan.FaultSpec) {
				f.Network.RTT = ms(200)
			}, 2)},
			want: map[pair]shaper.Link{
				{n1, n2}: {Delay: 100 * time.Millisecond}, {n2, ce}: {Delay: 100 * time.Millisecond},
				{n1, n3}: eastWest, {obs, n2}: {}, {o1, n1}: local,
			},
		},
		{
			name:   "isolating a node cuts it from nodes and clients, not from the observer",
			active: []netFault{fault(plan.FaultPartition, func(*plan.FaultSpec) {}, 1)},
			want: map[pair]shaper.Link{
				{n1, n2}: withDown(local), {n2, n1}: withDown(local), {ce, n1}: withDown(local),
				{n3, n1}: withDown(eastWest), {n2, n3}: eastWest, {obs, n1}: {}, {n1, obs}: {},
				// Node 1 of the other cluster is not node 1 of main.
				{o1, n2}: local, {ce, o1}: local, {n1, o1}: withDown(local),
			},
		},
		{
			name: "a rejecting partition answers; a drop on the same pair keeps it silent",
			active: []netFault{
				fault(plan.FaultPartition, func(f *plan.FaultSpec) { f.Partition.Mode = plan.PartitionReject }, 1),
				fault(plan.FaultPartition, func(f *plan.FaultSpec) { f.ID = "second"; f.Partition.Mode = plan.PartitionDrop }, 3),
			},
			want: map[pair]shaper.Link{
				{n2, n1}: withReject(local), {ce, n1}: withReject(local), {n2, n3}: withDown(eastWest),
				{n1, n3}: withDown(eastWest),
			},
		},
		{
			name: "region groups, direction to: only traffic into the first group is dropped",
			active: []netFault{fault(plan.FaultPartition, func(f *plan.FaultSpec) {
				f.Partition.Groups = [][]plan.Member{{{Region: "west"}}, {{Region: "east"}}}
				f.Partition.Direction = plan.DirectionTo
			})},
			want: map[pair]shaper.Link{
				{n1, n3}: withDown(eastWest), {ce, n3}: withDown(eastWest), {n3, n1}: eastWest, {n1, n2}: local,
			},
		},
		{
			name: "node groups, direction from; hosts in no group keep talking",
			active: []netFault{fault(plan.FaultPartition, func(f *plan.FaultSpec) {
				f.Partition.Groups = [][]plan.Member{{{Node: 1}}, {{Node: 2}}}
				f.Partition.Direction = plan.DirectionFrom
			})},
			want: map[pair]shaper.Link{
				{n1, n2}: withDown(local), {n2, n1}: local, {n1, n3}: eastWest, {ce, n1}: local,
				{o1, n2}: local, {n2, o1}: local,
			},
		},
	}
	t.Run("the default is between regions only; within one, unshaped unless declared", func(t *testing.T) {
		only := plan.NetworkSpec{Default: plan.LinkSpec{Shaping: plan.Shaping{RTT: ms(100)}}}
		got := linkPolicy(hosts, only, nil)
		if g := got[ce][n1]; g != (shaper.Link{}) {
			t.Errorf("client-east -> n1 (both east): %+v, want unshaped", g)
		}
		if g := got[ce][n3]; g != (shaper.Link{Delay: 50 * time.Millisecond}) {
			t.Errorf("client-east -> n3 (west): %+v, want the default", g)
		}
		only.Links = []plan.LinkSpec{{A: "east", B: "east", Shaping: plan.Shaping{RTT: ms(6)}}}
		if g := linkPolicy(hosts, only, nil)[n1][n2]; g != (shaper.Link{Delay: 3 * time.Millisecond}) {
			t.Errorf("n1 -> n2 with link east-east: %+v, want it", g)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := linkPolicy(hosts, network, tt.active)
			for p, want := range tt.want {
				if g := got[p.from][p.to]; g != want {
					t.Errorf("%s -> %s: %+v, want %+v", hosts[p.from].name, hosts[p.to].name, g, want)
				}
			}
		})
	}
}

func withDown(l shaper.Link) shaper.Link {
	l.Down = true
	return l
}

func withReject(l shaper.Link) shaper.Link {
	l.Down, l.Reject = true, true
	return l
}
