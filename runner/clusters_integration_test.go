package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// TestManyClusters runs an etcd and a ZooKeeper cluster on one timeline in
// one network fabric, and cuts one etcd follower off: the fault must act on
// the etcd cluster alone, and every figure must come out per cluster.
func TestManyClusters(t *testing.T) {
	needFabric(t)
	needStore(t, plan.StoreZooKeeper)
	res := runScenario(t, `
cluster "etcd" {
  store = "etcd"
  nodes = 3
}
cluster "zk" {
  store = "zookeeper"
  nodes = 3
}
workload "e" {
  cluster  = cluster.etcd
  mix      = { put = 0.5, get = 0.5 }
  keyspace = 100
  clients  = 4
  timeout  = "2s"
}
workload "z" {
  cluster     = cluster.zk
  mix         = { put = 0.5, get = 0.5 }
  consistency = "sync"
  keyspace    = 100
  clients     = 4
  timeout     = "2s"
}
phase "p" {
  duration = "12s"
  load "e" {}
  load "z" {}
  fault "partition" {
    cluster  = cluster.etcd
    target   = "follower"
    at       = "3s"
    duration = "4s"
  }
}
check "zookeeper untouched" {
  condition = cluster.zk.phase.p.elections == 0 && phase.p.workload.z.availability > 0.99
}
check "etcd kept its leader" {
  condition = cluster.etcd.phase.p.elections == 0 && cluster.etcd.run.linearizable
}
`)
	if len(res.Clusters) != 2 || res.Clusters[0].Name != "etcd" || res.Clusters[1].Name != "zk" {
		t.Fatalf("clusters: %+v", res.Clusters)
	}
	// The shared network's pairs are the run's, named by cluster, and
	// checks read them there: the partition cut links of etcd's only (the
	// shaper carries only the pairs a fault touches, so which pairs are
	// present depends on the follower it picked).
	var cut int64
	for _, pr := range phase(t, res, "p").NetworkPairs {
		if pr.Cut == 0 {
			continue
		}
		cut += pr.Cut
		// A follower cut off is cut from its clients too.
		etcd := strings.HasPrefix(pr.From, "etcd-n") || strings.HasPrefix(pr.To, "etcd-n")
		if zk := strings.HasPrefix(pr.From, "zk-n") || strings.HasPrefix(pr.To, "zk-n"); !etcd || zk {
			t.Errorf("pair %s>%s had %d packets cut; the partition was etcd's", pr.From, pr.To, pr.Cut)
		}
		if v, ok := res.Lookup("phase.p.network_pair." + pr.From + "." + pr.To + ".cut"); !ok || v != float64(pr.Cut) {
			t.Errorf("phase.p.network_pair.%s.%s.cut = %v (%v), want %d", pr.From, pr.To, v, ok, pr.Cut)
		}
	}
	if cut == 0 {
		t.Errorf("no packet cut in the partition's phase: %+v", phase(t, res, "p").NetworkPairs)
	}
	for _, c := range res.Clusters {
		if !strings.HasPrefix(c.Store, map[string]string{"etcd": "etcd ", "zk": "zookeeper "}[c.Name]) {
			t.Errorf("cluster %s: store %q", c.Name, c.Store)
		}
		if len(c.Leader) == 0 || len(c.Resources) != 3 {
			t.Errorf("cluster %s: %d leader observations, %d nodes", c.Name, len(c.Leader), len(c.Resources))
		}
		for _, n := range c.Resources {
			if !strings.HasPrefix(n.Node, c.Name+"-n") {
				t.Errorf("cluster %s has node %s", c.Name, n.Node)
			}
			// A process node's threads' wait for a CPU, from schedstat.
			if n.Summary.Samples > 0 && n.Summary.CPUWaitMeanPercent == nil {
				t.Errorf("cluster %s, node %s: no CPU wait in %+v", c.Name, n.Node, n.Summary)
			}
		}
		if cc := c.Correctness; cc == nil || cc.Linearizable == nil || !*cc.Linearizable {
			t.Errorf("cluster %s: correctness %+v", c.Name, cc)
		}
		if len(c.Phases) != 1 || c.Phases[0].Total.Latency == nil {
			t.Errorf("cluster %s: phases %+v", c.Name, c.Phases)
		}
	}
	fs := failover(t, phase(t, res, "p"), 1)
	if f := fs[0]; f.Cluster != "etcd" || len(f.Targets) != 1 || !strings.HasPrefix(f.Targets[0], "etcd-n") {
		t.Errorf("the partition: cluster %q, targets %v", f.Cluster, f.Targets)
	}
	if ws := phase(t, res, "p").Workloads; len(ws) != 2 || !slices.ContainsFunc(ws, func(w results.WorkloadStats) bool { return w.Name == "z" }) {
		t.Errorf("run-wide phase workloads: %+v", ws)
	}
	for _, c := range res.Checks {
		if !c.Passed {
			t.Errorf("check %q: %s (observed %v)", c.Name, c.Error, c.Observed)
		}
	}
	// One runner serves both clusters: its wait for a CPU is the run's.
	if v, ok := res.Lookup("phase.p.runner_wait_share"); !ok {
		t.Error("no phase.p.runner_wait_share over both clusters")
	} else if w, _ := v.(float64); w < 0 || w > 1 {
		t.Errorf("phase.p.runner_wait_share = %v, want a share", v)
	}
}
