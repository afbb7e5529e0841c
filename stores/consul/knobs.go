package consul

import (
	"fmt"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

func newKnobs(c *plan.ClusterSpec) { c.Consul = &plan.ConsulKnobs{} }

// knobs is the schema of the `consul { ... }` block: server performance
// and raft settings.
func knobs() []stores.Knob {
	return []stores.Knob{
		stores.IntKnob("raft_multiplier", 1, 10, func(c *plan.ClusterSpec) *int { return &c.Consul.RaftMultiplier }),
		stores.DurationKnob("heartbeat_timeout", func(c *plan.ClusterSpec) *plan.Duration { return &c.Consul.HeartbeatTimeout }),
		stores.DurationKnob("election_timeout", func(c *plan.ClusterSpec) *plan.Duration { return &c.Consul.ElectionTimeout }),
		stores.DurationKnob("leader_lease_timeout", func(c *plan.ClusterSpec) *plan.Duration { return &c.Consul.LeaderLeaseTimeout }),
		stores.Int64Knob("raft_snapshot_threshold", stores.KnobInt, 1, 1<<40, func(c *plan.ClusterSpec) *int64 { return &c.Consul.RaftSnapshotThreshold }),
		stores.DurationKnob("raft_snapshot_interval", func(c *plan.ClusterSpec) *plan.Duration { return &c.Consul.RaftSnapshotInterval }),
	}
}

// checkKnobs points at a raft timing knob Consul cannot run with. Outside
// dev mode Consul 1.20 derives heartbeat and election timeouts as
// raft_multiplier x 1s and the leader lease as raft_multiplier x 500ms
// (RaftTiming explains why), so each knob names a multiplier from 1 to 10
// and all of them must name the same one.
func checkKnobs(c plan.ClusterSpec) []stores.KnobProblem {
	k := c.Consul
	if k == nil {
		return nil
	}
	var out []stores.KnobProblem
	from, mult := "", 0
	if k.RaftMultiplier > 0 {
		from, mult = "raft_multiplier", k.RaftMultiplier
	}
	for _, knob := range []struct {
		name string
		v    plan.Duration
		base time.Duration
	}{
		{"heartbeat_timeout", k.HeartbeatTimeout, time.Second},
		{"election_timeout", k.ElectionTimeout, time.Second},
		{"leader_lease_timeout", k.LeaderLeaseTimeout, 500 * time.Millisecond},
	} {
		v := knob.v.D()
		if v == 0 {
			continue
		}
		if v%knob.base != 0 || v/knob.base < 1 || v/knob.base > 10 {
			out = append(out, stores.KnobProblem{Knob: knob.name, Summary: "Consul cannot run this raft timing",
				Detail: fmt.Sprintf("Consul scales its %s only through raft_multiplier: it is a multiple of %s from %s to %s; got %s.",
					knob.name, knob.base, knob.base, 10*knob.base, v)})
			continue
		}
		m := int(v / knob.base)
		if from != "" && m != mult {
			out = append(out, stores.KnobProblem{Knob: knob.name, Summary: "Conflicting Consul raft timing",
				Detail: fmt.Sprintf("%s %s means raft_multiplier %d, but %s means %d: Consul scales heartbeat (1s), election (1s) and leader lease (500ms) by one multiplier.",
					knob.name, v, m, from, mult)})
			continue
		}
		from, mult = knob.name, m
	}
	return out
}
