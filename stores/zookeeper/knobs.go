package zookeeper

import (
	"fmt"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

func newKnobs(c *plan.ClusterSpec) { c.ZooKeeper = &plan.ZooKeeperKnobs{} }

// knobs is the schema of the `zookeeper { ... }` block: zoo.cfg settings
// and the JVM heap.
func knobs() []stores.Knob {
	return []stores.Knob{
		{Name: "tick_time", Kind: stores.KnobDuration, Set: func(c *plan.ClusterSpec, v any) error {
			t := v.(plan.Duration)
			c.ZooKeeper.TickTime = t
			if t.D()%time.Millisecond != 0 {
				return fmt.Errorf("ZooKeeper counts tickTime in whole milliseconds: write %q.", t.D().Round(time.Millisecond).String())
			}
			return nil
		}},
		stores.IntKnob("init_limit", 1, 1000, func(c *plan.ClusterSpec) *int { return &c.ZooKeeper.InitLimit }),
		stores.IntKnob("sync_limit", 1, 1000, func(c *plan.ClusterSpec) *int { return &c.ZooKeeper.SyncLimit }),
		stores.Int64Knob("snap_count", stores.KnobInt, 1, 1<<40, func(c *plan.ClusterSpec) *int64 { return &c.ZooKeeper.SnapCount }),
		stores.IntKnob("max_client_cnxns", 0, 1<<20, func(c *plan.ClusterSpec) *int { return &c.ZooKeeper.MaxClientCnxns }),
		stores.Int64Knob("jvm_heap", stores.KnobSize, 32<<20, 64<<30, func(c *plan.ClusterSpec) *int64 { return &c.ZooKeeper.JVMHeap }),
	}
}

func checkKnobs(c plan.ClusterSpec) []stores.KnobProblem {
	if k := c.ZooKeeper; k != nil && k.SyncLimit > 0 && k.InitLimit > 0 && k.SyncLimit > k.InitLimit {
		return []stores.KnobProblem{{Knob: "sync_limit", Summary: "sync_limit above init_limit",
			Detail: fmt.Sprintf("A follower gets init_limit (%d ticks) to connect and sync_limit (%d ticks) to stay in sync: sync_limit above init_limit is almost always a mistake.", k.InitLimit, k.SyncLimit)}}
	}
	return nil
}
