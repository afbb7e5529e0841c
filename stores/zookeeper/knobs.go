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
		{Name: "init_limit", Kind: stores.KnobInt, Min: 1, Max: 1000, Set: func(c *plan.ClusterSpec, v any) error {
			c.ZooKeeper.InitLimit = int(v.(int64))
			return nil
		}},
		{Name: "sync_limit", Kind: stores.KnobInt, Min: 1, Max: 1000, Set: func(c *plan.ClusterSpec, v any) error {
			c.ZooKeeper.SyncLimit = int(v.(int64))
			return nil
		}},
		{Name: "snap_count", Kind: stores.KnobInt, Min: 1, Max: 1 << 40, Set: func(c *plan.ClusterSpec, v any) error {
			c.ZooKeeper.SnapCount = v.(int64)
			return nil
		}},
		{Name: "max_client_cnxns", Kind: stores.KnobInt, Min: 0, Max: 1 << 20, Set: func(c *plan.ClusterSpec, v any) error {
			c.ZooKeeper.MaxClientCnxns = int(v.(int64))
			return nil
		}},
		{Name: "jvm_heap", Kind: stores.KnobSize, Min: 32 << 20, Max: 64 << 30, Set: func(c *plan.ClusterSpec, v any) error {
			c.ZooKeeper.JVMHeap = v.(int64)
			return nil
		}},
	}
}

func checkKnobs(c plan.ClusterSpec) []stores.KnobProblem {
	if k := c.ZooKeeper; k != nil && k.SyncLimit > 0 && k.InitLimit > 0 && k.SyncLimit > k.InitLimit {
		return []stores.KnobProblem{{Knob: "sync_limit", Summary: "sync_limit above init_limit",
			Detail: fmt.Sprintf("A follower gets init_limit (%d ticks) to connect and sync_limit (%d ticks) to stay in sync: sync_limit above init_limit is almost always a mistake.", k.InitLimit, k.SyncLimit)}}
	}
	return nil
}
