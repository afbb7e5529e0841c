package faults

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/coordlab/scenario/plan"
)

// ErrNoLeader is wrapped by Resolve when a target needs the leader and the
// view has none, e.g. during an election. The caller may look again later.
var ErrNoLeader = errors.New("no leader known")

// View is what the runner knows about a cluster when a fault fires.
type View struct {
	Nodes     int
	Placement []string // region of node i+1
	Leader    int      // 1-based, 0 unknown
	// Up[i] says whether node i+1 is running. Nil means unknown: every node
	// then counts as up.
	Up []bool
}

func (v View) up(node int) bool { return len(v.Up) == 0 || v.Up[node-1] }

func (v View) check() error {
	if v.Nodes < 1 {
		return fmt.Errorf("view has %d nodes", v.Nodes)
	}
	if len(v.Placement) != 0 && len(v.Placement) != v.Nodes {
		return fmt.Errorf("view places %d nodes of %d", len(v.Placement), v.Nodes)
	}
	if len(v.Up) != 0 && len(v.Up) != v.Nodes {
		return fmt.Errorf("view has %d up flags for %d nodes", len(v.Up), v.Nodes)
	}
	if v.Leader < 0 || v.Leader > v.Nodes {
		return fmt.Errorf("view names leader %d of %d nodes", v.Leader, v.Nodes)
	}
	return nil
}

// Resolve picks the nodes a target names in the cluster v describes, as
// sorted 1-based indexes. It is pure: the same target, view and occurrence
// give the same nodes. Choices between nodes draw from a PCG seeded with
// t.Seed and occurrence, so a repeated fault that passes its occurrence
// number draws again each time yet a rerun of the plan draws the same.
//
// Semantics by kind:
//   - nodes: t.Nodes.
//   - region: every node placed in t.Region.
//   - leader: the leader; ErrNoLeader if unknown.
//   - follower: one up node other than the leader; ErrNoLeader if unknown,
//     because any node might then be the leader.
//   - minority: (n-1)/2 nodes, drawn from the non-leaders. Up is not
//     consulted: the minority is a share of the membership, so the fault by
//     itself never takes more than a minority down.
//   - majority: n/2+1 nodes, the leader (if known) and non-leaders drawn.
//   - random: one up node, leader included.
//   - all: every node.
func Resolve(t plan.TargetSpec, v View, occurrence int) ([]int, error) {
	nodes, err := resolve(t, v, occurrence)
	if err != nil {
		return nil, fmt.Errorf("resolve target %q: %w", t.Kind, err)
	}
	slices.Sort(nodes)
	return nodes, nil
}

func resolve(t plan.TargetSpec, v View, occurrence int) ([]int, error) {
	if err := v.check(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(t.Seed), uint64(occurrence)))
	switch t.Kind {
	case plan.TargetNodes:
		if len(t.Nodes) == 0 {
			return nil, errors.New("no nodes listed")
		}
		var out []int
		for _, n := range t.Nodes {
			if n < 1 || n > v.Nodes {
				return nil, fmt.Errorf("node %d out of range 1..%d", n, v.Nodes)
			}
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		return out, nil
	case plan.TargetRegion:
		var out []int
		for i, r := range v.Placement {
			if r == t.Region {
				out = append(out, i+1)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no node placed in region %q", t.Region)
		}
		return out, nil
	case plan.TargetLeader:
		if v.Leader == 0 {
			return nil, ErrNoLeader
		}
		return []int{v.Leader}, nil
	case plan.TargetFollower:
		if v.Leader == 0 {
			return nil, ErrNoLeader
		}
		var cands []int
		for n := 1; n <= v.Nodes; n++ {
			if n != v.Leader && v.up(n) {
				cands = append(cands, n)
			}
		}
		if len(cands) == 0 {
			return nil, fmt.Errorf("no follower of %d nodes is up", v.Nodes)
		}
		return []int{cands[rng.IntN(len(cands))]}, nil
	case plan.TargetMinority:
		k := (v.Nodes - 1) / 2
		if k == 0 {
			return nil, fmt.Errorf("a %d-node cluster has no minority to fault", v.Nodes)
		}
		return leaderLast(v, rng)[:k], nil
	case plan.TargetMajority:
		k := v.Nodes/2 + 1
		order := leaderLast(v, rng)
		if v.Leader != 0 {
			// Move the leader to the front: a majority fault that spares the
			// leader would test something else.
			order = append([]int{v.Leader}, order[:len(order)-1]...)
		}
		return order[:k], nil
	case plan.TargetRandom:
		var cands []int
		for n := 1; n <= v.Nodes; n++ {
			if v.up(n) {
				cands = append(cands, n)
			}
		}
		if len(cands) == 0 {
			return nil, fmt.Errorf("none of %d nodes is up", v.Nodes)
		}
		return []int{cands[rng.IntN(len(cands))]}, nil
	case plan.TargetAll:
		out := make([]int, v.Nodes)
		for i := range out {
			out[i] = i + 1
		}
		return out, nil
	case "":
		return nil, errors.New("no target kind given")
	default:
		return nil, fmt.Errorf("unknown target kind %q", t.Kind)
	}
}

// leaderLast is every node in an order drawn from rng, the leader (if
// known) moved to the end.
func leaderLast(v View, rng *rand.Rand) []int {
	order := make([]int, 0, v.Nodes)
	for n := 1; n <= v.Nodes; n++ {
		if n != v.Leader {
			order = append(order, n)
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	if v.Leader != 0 {
		order = append(order, v.Leader)
	}
	return order
}

// ToLead picks, of the nodes a leadership transfer may go to, the one to
// hand it to: the leader when it is one of them (nothing moves), else the
// lowest-numbered one that is up. A region's nodes are resolved in order,
// so the pick is the same on every run with the same leader.
func ToLead(nodes []int, v View) (int, error) {
	if v.Leader != 0 && slices.Contains(nodes, v.Leader) {
		return v.Leader, nil
	}
	for _, n := range nodes {
		if v.up(n) {
			return n, nil
		}
	}
	return 0, fmt.Errorf("none of %d nodes is up to take the leadership", len(nodes))
}
