package etcd

import (
	"fmt"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// etcd's own limits (server/embed/config.go): it refuses to start outside them.
const (
	defaultHeartbeat = 100 * time.Millisecond
	defaultElection  = 1000 * time.Millisecond
	maxElection      = 50 * time.Second
)

func newKnobs(c *plan.ClusterSpec) { c.Etcd = &plan.EtcdKnobs{} }

// knobs is the schema of the `etcd { ... }` block: server flags.
func knobs() []stores.Knob {
	return []stores.Knob{
		stores.DurationKnob("heartbeat_interval", func(c *plan.ClusterSpec) *plan.Duration { return &c.Etcd.HeartbeatInterval }),
		stores.DurationKnob("election_timeout", func(c *plan.ClusterSpec) *plan.Duration { return &c.Etcd.ElectionTimeout }),
		stores.Int64Knob("snapshot_count", stores.KnobInt, 1, 1<<40, func(c *plan.ClusterSpec) *int64 { return &c.Etcd.SnapshotCount }),
		stores.Int64Knob("quota_backend_bytes", stores.KnobSize, 1, 1<<40, func(c *plan.ClusterSpec) *int64 { return &c.Etcd.QuotaBackendBytes }),
		stores.Int64Knob("max_request_bytes", stores.KnobSize, 1, 1<<31, func(c *plan.ClusterSpec) *int64 { return &c.Etcd.MaxRequestBytes }),
		// A duration keeps that much history (periodic mode); a number
		// keeps that many revisions (revision mode).
		{Name: "auto_compaction", Kind: stores.KnobDurationOrInt, Min: 1, Max: 1 << 40, Set: func(c *plan.ClusterSpec, v any) error {
			switch v := v.(type) {
			case int64:
				c.Etcd.AutoCompactionMode, c.Etcd.AutoCompactionRetention = "revision", fmt.Sprint(v)
			case plan.Duration:
				c.Etcd.AutoCompactionMode, c.Etcd.AutoCompactionRetention = "periodic", v.String()
			}
			return nil
		}},
	}
}

// electionWindow is twice the election timeout: raft draws each
// follower's from [timeout, 2 x timeout), and a heartbeat more for the
// last one it missed.
func electionWindow(c plan.ClusterSpec) time.Duration {
	hb, el := timing(c)
	return 2*el + hb
}

// timing is cluster c's heartbeat interval and election timeout, etcd's
// defaults where it sets none.
func timing(c plan.ClusterSpec) (heartbeat, election time.Duration) {
	heartbeat, election = defaultHeartbeat, defaultElection
	if k := c.Etcd; k != nil && k.HeartbeatInterval > 0 {
		heartbeat = k.HeartbeatInterval.D()
	}
	if k := c.Etcd; k != nil && k.ElectionTimeout > 0 {
		election = k.ElectionTimeout.D()
	}
	return heartbeat, election
}

// checkKnobs reports the timing etcd refuses to start with.
func checkKnobs(c plan.ClusterSpec) []stores.KnobProblem {
	k := c.Etcd
	if k == nil {
		return nil
	}
	var out []stores.KnobProblem
	hb, el := k.HeartbeatInterval.D(), k.ElectionTimeout.D()
	if hb == 0 {
		hb = defaultHeartbeat
	}
	if el == 0 {
		el = defaultElection
	}
	if (k.HeartbeatInterval > 0 || k.ElectionTimeout > 0) && el < 5*hb {
		// Point at the knob that was written: with only a heartbeat set,
		// it is what pushed past etcd's default election timeout.
		at, elText := "election_timeout", el.String()
		if k.ElectionTimeout == 0 {
			at, elText = "heartbeat_interval", el.String()+", the default"
		}
		out = append(out, stores.KnobProblem{Knob: at, Summary: "Election timeout too short for the heartbeat",
			Detail: fmt.Sprintf("etcd refuses an election_timeout (%s) below 5 x heartbeat_interval (%s): set election_timeout to at least %s, or lower heartbeat_interval. The etcd tuning guide suggests about 10 x the heartbeat.",
				elText, hb, 5*hb)})
	}
	if el > maxElection {
		out = append(out, stores.KnobProblem{Knob: "election_timeout", Summary: "Election timeout too long",
			Detail: fmt.Sprintf("etcd refuses an election_timeout above %s; got %s.", maxElection, el)})
	}
	for _, kv := range []struct {
		name string
		v    plan.Duration
	}{{"heartbeat_interval", k.HeartbeatInterval}, {"election_timeout", k.ElectionTimeout}} {
		if kv.v.D()%time.Millisecond != 0 {
			out = append(out, stores.KnobProblem{Knob: kv.name, Summary: "Sub-millisecond etcd timing",
				Detail: fmt.Sprintf("etcd takes %s in whole milliseconds: write %q.", kv.name, kv.v.D().Round(time.Millisecond).String())})
		}
	}
	return out
}
