package faults_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/plan"
)

func TestResolve(t *testing.T) {
	five := faults.View{
		Nodes:     5,
		Placement: []string{"us", "us", "eu", "eu", "ap"},
		Leader:    3,
		Up:        []bool{true, true, true, true, true},
	}
	with := func(v faults.View, edit func(*faults.View)) faults.View {
		v.Placement = slices.Clone(v.Placement)
		v.Up = slices.Clone(v.Up)
		edit(&v)
		return v
	}
	tests := []struct {
		name   string
		target plan.TargetSpec
		view   faults.View
		want   []int                         // exact result, when the seed cannot matter
		check  func(t *testing.T, got []int) // otherwise
		err    string                        // substring of the error
		errIs  error
	}{
		{name: "nodes sorted and deduplicated", target: plan.TargetSpec{Kind: plan.TargetNodes, Nodes: []int{4, 1, 4}}, view: five, want: []int{1, 4}},
		{name: "nodes out of range", target: plan.TargetSpec{Kind: plan.TargetNodes, Nodes: []int{1, 6}}, view: five, err: `target "nodes": node 6 out of range 1..5`},
		{name: "nodes zero", target: plan.TargetSpec{Kind: plan.TargetNodes, Nodes: []int{0}}, view: five, err: "node 0 out of range"},
		{name: "nodes empty", target: plan.TargetSpec{Kind: plan.TargetNodes}, view: five, err: "no nodes listed"},
		{name: "region", target: plan.TargetSpec{Kind: plan.TargetRegion, Region: "eu"}, view: five, want: []int{3, 4}},
		{name: "region empty", target: plan.TargetSpec{Kind: plan.TargetRegion, Region: "sa"}, view: five, err: `target "region": no node placed in region "sa"`},
		{name: "leader", target: plan.TargetSpec{Kind: plan.TargetLeader}, view: five, want: []int{3}},
		{name: "leader unknown", target: plan.TargetSpec{Kind: plan.TargetLeader}, view: with(five, func(v *faults.View) { v.Leader = 0 }), err: `target "leader": no leader known`, errIs: faults.ErrNoLeader},
		{
			name: "follower is an up non-leader", target: plan.TargetSpec{Kind: plan.TargetFollower, Seed: 7}, view: five,
			check: func(t *testing.T, got []int) {
				if len(got) != 1 || got[0] == 3 {
					t.Errorf("got %v, want one node other than the leader 3", got)
				}
			},
		},
		{
			name:   "follower skips down nodes",
			target: plan.TargetSpec{Kind: plan.TargetFollower, Seed: 7},
			view:   with(five, func(v *faults.View) { v.Up = []bool{false, true, true, false, false} }),
			want:   []int{2},
		},
		{name: "follower none up", target: plan.TargetSpec{Kind: plan.TargetFollower}, view: with(five, func(v *faults.View) { v.Up = []bool{false, false, true, false, false} }), err: `target "follower": no follower of 5 nodes is up`},
		{name: "follower leader unknown", target: plan.TargetSpec{Kind: plan.TargetFollower}, view: with(five, func(v *faults.View) { v.Leader = 0 }), errIs: faults.ErrNoLeader},
		{
			name: "minority spares the leader", target: plan.TargetSpec{Kind: plan.TargetMinority, Seed: 1}, view: five,
			check: func(t *testing.T, got []int) {
				if len(got) != 2 || slices.Contains(got, 3) {
					t.Errorf("got %v, want 2 nodes without the leader 3", got)
				}
			},
		},
		{
			name: "minority of an even cluster", target: plan.TargetSpec{Kind: plan.TargetMinority}, view: faults.View{Nodes: 4, Leader: 1},
			check: func(t *testing.T, got []int) {
				if len(got) != 1 || got[0] == 1 {
					t.Errorf("got %v, want 1 node other than the leader 1", got)
				}
			},
		},
		{name: "minority of two", target: plan.TargetSpec{Kind: plan.TargetMinority}, view: faults.View{Nodes: 2, Leader: 1}, err: `target "minority": a 2-node cluster has no minority`},
		{
			name: "majority has the leader", target: plan.TargetSpec{Kind: plan.TargetMajority, Seed: 1}, view: five,
			check: func(t *testing.T, got []int) {
				if len(got) != 3 || !slices.Contains(got, 3) {
					t.Errorf("got %v, want 3 nodes with the leader 3", got)
				}
			},
		},
		{
			name: "majority leader unknown", target: plan.TargetSpec{Kind: plan.TargetMajority}, view: faults.View{Nodes: 4},
			check: func(t *testing.T, got []int) {
				if len(got) != 3 {
					t.Errorf("got %v, want 3 nodes", got)
				}
			},
		},
		{name: "majority of one", target: plan.TargetSpec{Kind: plan.TargetMajority}, view: faults.View{Nodes: 1}, want: []int{1}},
		{
			name: "random is up", target: plan.TargetSpec{Kind: plan.TargetRandom, Seed: 3},
			view: with(five, func(v *faults.View) { v.Up = []bool{false, false, false, true, false} }),
			want: []int{4},
		},
		{name: "random none up", target: plan.TargetSpec{Kind: plan.TargetRandom}, view: with(five, func(v *faults.View) { v.Up = make([]bool, 5) }), err: `target "random": none of 5 nodes is up`},
		{
			name: "random with liveness unknown", target: plan.TargetSpec{Kind: plan.TargetRandom, Seed: 3}, view: faults.View{Nodes: 3},
			check: func(t *testing.T, got []int) {
				if len(got) != 1 || got[0] < 1 || got[0] > 3 {
					t.Errorf("got %v, want one node of 1..3", got)
				}
			},
		},
		{name: "all", target: plan.TargetSpec{Kind: plan.TargetAll}, view: five, want: []int{1, 2, 3, 4, 5}},
		{name: "unknown kind", target: plan.TargetSpec{Kind: "quorum"}, view: five, err: `unknown target kind "quorum"`},
		{name: "no kind", target: plan.TargetSpec{}, view: five, err: "no target kind given"},
		{name: "empty view", target: plan.TargetSpec{Kind: plan.TargetAll}, view: faults.View{}, err: "view has 0 nodes"},
		{name: "short up flags", target: plan.TargetSpec{Kind: plan.TargetAll}, view: faults.View{Nodes: 3, Up: []bool{true}}, err: "1 up flags for 3 nodes"},
		{name: "short placement", target: plan.TargetSpec{Kind: plan.TargetAll}, view: faults.View{Nodes: 3, Placement: []string{"us"}}, err: "places 1 nodes of 3"},
		{name: "leader out of range", target: plan.TargetSpec{Kind: plan.TargetLeader}, view: faults.View{Nodes: 3, Leader: 4}, err: "leader 4 of 3 nodes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := faults.Resolve(tc.target, tc.view, 0)
			if tc.err != "" || tc.errIs != nil {
				if err == nil {
					t.Fatalf("Resolve = %v, want an error", got)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %q does not contain %q", err, tc.err)
				}
				if tc.errIs != nil && !errors.Is(err, tc.errIs) {
					t.Errorf("error %q is not %v", err, tc.errIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if !slices.IsSorted(got) {
				t.Errorf("result %v not sorted", got)
			}
			if tc.check != nil {
				tc.check(t, got)
			} else if !slices.Equal(got, tc.want) {
				t.Errorf("Resolve = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestResolveDeterministic checks that every seeded kind draws the same for
// the same seed and occurrence, and that seeds and occurrences do change the
// draw.
func TestResolveDeterministic(t *testing.T) {
	view := faults.View{Nodes: 7, Leader: 2}
	for _, kind := range []string{plan.TargetFollower, plan.TargetMinority, plan.TargetMajority, plan.TargetRandom} {
		t.Run(kind, func(t *testing.T) {
			seen := map[string]bool{}
			for seed := range int64(20) {
				for occ := range 3 {
					target := plan.TargetSpec{Kind: kind, Seed: seed}
					a, err := faults.Resolve(target, view, occ)
					if err != nil {
						t.Fatal(err)
					}
					b, err := faults.Resolve(target, view, occ)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(a, b) {
						t.Fatalf("seed %d occurrence %d: %v then %v", seed, occ, a, b)
					}
					seen[fmt.Sprint(a)] = true
				}
			}
			if len(seen) < 2 {
				t.Errorf("60 seed and occurrence pairs all drew %v", seen)
			}
		})
	}
}

func TestToLead(t *testing.T) {
	tests := []struct {
		name    string
		nodes   []int
		v       faults.View
		want    int
		wantErr bool
	}{
		{"the leader is in the region: nothing moves", []int{2, 4}, faults.View{Nodes: 5, Leader: 4}, 4, false},
		{"the lowest-numbered node otherwise", []int{2, 4}, faults.View{Nodes: 5, Leader: 1}, 2, false},
		{"a node that is down is passed over", []int{2, 4}, faults.View{Nodes: 5, Leader: 1, Up: []bool{true, false, true, true, true}}, 4, false},
		{"every node of the region down", []int{2, 4}, faults.View{Nodes: 5, Leader: 1, Up: []bool{true, false, true, false, true}}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := faults.ToLead(tc.nodes, tc.v)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("ToLead(%v, %+v) = %d, %v; want %d, error %t", tc.nodes, tc.v, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
