package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/container"
)

// These tests run the same scenarios as the process tests with every node
// in a container. They need a Docker engine and the images `scenario images
// build` makes (or pulled official ones), and skip saying which is missing.

// needDocker skips the test unless the engine is reachable and the image of
// store at its default version, and the sandbox image, are here.
func needDocker(t *testing.T, store string) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped in -short mode: starts a real 3-node cluster in containers")
	}
	// Check says which is missing: the engine, or an image.
	if err := images.Check(context.Background(), images.BaseImage, images.Default(store, "")); err != nil {
		t.Skipf("needs a Docker engine and the store's image: %v", err)
	}
}

var dockerOpts = Options{Provider: plan.ProviderDocker}

// leftContainers lists what of res's run the engine still has: every
// container, volume and network carrying its label (other tests' runs may
// be under way beside it).
func leftContainers(t *testing.T, res *results.Results) []string {
	t.Helper()
	if res.RunID == "" {
		t.Fatal("the results name no run")
	}
	left, err := container.Labelled(context.Background(), container.LabelRun+"="+res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return left
}

func checkDockerRun(t *testing.T, res *results.Results) {
	t.Helper()
	if res.Backend["provider"] != plan.ProviderDocker {
		t.Errorf("provider %q, want docker", res.Backend["provider"])
	}
	// Resource use comes from the engine's stats of each store container.
	if len(res.Resources) != 3 {
		t.Errorf("resources of %d nodes, want 3", len(res.Resources))
	}
	for _, r := range res.Resources {
		// The wait for a CPU of the container's threads, as its control
		// group lists them.
		if r.Summary.Samples == 0 || r.Summary.CPUMeanPercent <= 0 || r.Summary.RSSMaxBytes <= 0 || r.Summary.CPUWaitMeanPercent == nil {
			t.Errorf("node %s resources: %+v", r.Node, r.Summary)
		}
	}
	if left := leftContainers(t, res); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestDockerEtcd plays the geo cluster in containers: the put latency
// follows the RTT matrix, the leadership is handed to two regions, then the
// leader is killed and restarted, a
// follower paused and another stopped and restarted, the leader's disk
// contended, and the leader cut off by a partition.
func TestDockerEtcd(t *testing.T) {
	needDocker(t, plan.StoreEtcd)
	needFabric(t)
	res := runScenarioWith(t, geoCluster+`
phase "steady" {
  duration = "10s"
  load "w" {
    rate = 20
  }
}
`+regionTransferPhase+`
phase "kill" {
  duration = "14s"
  load "w" {
    rate = 20
  }
  fault "kill" {
    target        = "leader"
    at            = "2s"
    restart_after = "6s"
  }
}

phase "nodes" {
  duration = "12s"
  load "w" {
    rate = 20
  }
  fault "pause" {
    target   = "follower"
    at       = "1s"
    duration = "3s"
  }
  fault "stop" {
    target        = "follower"
    at            = "5s"
    restart_after = "3s"
  }
}

phase "disk" {
  duration = "6s"
  load "w" {
    rate = 20
  }
  fault "disk" {
    target      = "leader"
    block_size  = "1MiB"
    fsync       = true
    parallelism = 2
    at          = "1s"
    duration    = "4s"
  }
}
`+throttledPhase(t)+`
phase "partition" {
  duration = "14s"
  load "w" {
    rate = 20
  }
  fault "partition" {
    target   = "leader"
    at       = "2s"
    duration = "7s"
  }
}
`, dockerOpts)
	checkGeoLatency(t, res, "steady")
	checkRegionTransfer(t, res)

	kill := phase(t, res, "kill")
	f := failover(t, kill, 1)[0]
	if f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > geoElectionBound {
		t.Errorf("leader kill: new leader after %s ms, want within %.0f ms", fmtOpt(f.TimeToLeaderMS), geoElectionBound)
	}
	t.Logf("leader kill in containers: new leader after %s ms, first write after %s ms", fmtOpt(f.TimeToLeaderMS), fmtOpt(f.TimeToWriteMS))

	nodes := phase(t, res, "nodes")
	for _, f := range failover(t, nodes, 2) {
		if f.RecoveredMS == nil {
			t.Errorf("fault %s never recovered", f.FaultID)
		}
	}
	if nodes.Elections != 0 {
		t.Errorf("pausing and stopping followers caused %d elections", nodes.Elections)
	}
	if f := failover(t, phase(t, res, "disk"), 1)[0]; f.Disk == nil || f.Disk.Writes == 0 {
		t.Errorf("disk contender wrote nothing beside the container's data: %+v", f.Disk)
	}

	if faults.ThrottleAvailable() == nil {
		// The container's process moved into a blkio group and back.
		tf := failover(t, phase(t, res, "throttled"), 1)[0]
		if tf.Disk == nil || tf.Disk.ThrottledBytes == 0 || tf.Disk.ThrottleNote != "" {
			t.Errorf("the throttle was not effective on etcd's WAL in a container: %+v", tf.Disk)
		}
	}

	part := phase(t, res, "partition")
	f = failover(t, part, 1)[0]
	if f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > geoElectionBound {
		t.Errorf("isolated leader: new leader after %s ms, want within %.0f ms", fmtOpt(f.TimeToLeaderMS), geoElectionBound)
	}
	if f.LagMS == nil || *f.LagMS > 100 {
		t.Errorf("partition applied %s ms late, want within 100 ms", fmtOpt(f.LagMS))
	}
	t.Logf("isolated leader in containers: new leader after %s ms, first write after %s ms", fmtOpt(f.TimeToLeaderMS), fmtOpt(f.TimeToWriteMS))
	checkDockerRun(t, res)
}

// TestDockerStores kills the leader of a ZooKeeper and a Consul cluster in
// containers, as TestStores does with processes.
func TestDockerStores(t *testing.T) {
	for _, sc := range storeCases {
		t.Run(sc.store, func(t *testing.T) {
			t.Parallel() // see storeCases
			needDocker(t, sc.store)
			res := runScenarioWith(t, sc.cluster+writerWorkload(sc.store)+steadyTransfer(sc.store)+`
phase "kill" {
  duration = "14s"
  load "writer" {}
  fault "kill" {
    target        = "leader"
    at            = "2s"
    restart_after = "8s"
  }
}
`, dockerOpts)
			f := failover(t, phase(t, res, "kill"), 1)[0]
			if f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > sc.leaderBy {
				t.Errorf("new leader after %s ms, want within %.0f", fmtOpt(f.TimeToLeaderMS), sc.leaderBy)
			}
			if f.TimeToWriteMS == nil || *f.TimeToWriteMS > sc.writeGapBy {
				t.Errorf("first write after %s ms, want within %.0f", fmtOpt(f.TimeToWriteMS), sc.writeGapBy)
			}
			t.Logf("%s leader kill in containers: new leader after %s ms, first write after %s ms", sc.store, fmtOpt(f.TimeToLeaderMS), fmtOpt(f.TimeToWriteMS))
			checkSteadyTransfer(t, res, sc.store)
			checkDockerRun(t, res)
		})
	}
}

// TestDockerManyClusters runs an etcd and a ZooKeeper cluster in containers
// on one Docker network of the run, kills etcd's leader, and leaves
// nothing behind.
func TestDockerManyClusters(t *testing.T) {
	needDocker(t, plan.StoreEtcd)
	needDocker(t, plan.StoreZooKeeper)
	res := runScenarioWith(t, `
cluster "e" {
  store = "etcd"
  nodes = 3
}
cluster "z" {
  store = "zookeeper"
  nodes = 3
}
workload "we" {
  cluster  = cluster.e
  mix      = { put = 0.5, get = 0.5 }
  keyspace = 100
  clients  = 4
  timeout  = "2s"
}
workload "wz" {
  cluster     = cluster.z
  mix         = { put = 0.5, get = 0.5 }
  consistency = "sync"
  keyspace    = 100
  clients     = 4
  timeout     = "2s"
}
phase "p" {
  duration = "12s"
  load "we" {}
  load "wz" {}
  fault "kill" {
    cluster       = cluster.e
    target        = "leader"
    at            = "3s"
    restart_after = "4s"
  }
}
check "only etcd elected" {
  condition = cluster.e.phase.p.elections >= 1 && cluster.z.phase.p.elections == 0
}
`, dockerOpts)
	if len(res.Clusters) != 2 {
		t.Fatalf("%d clusters in the results", len(res.Clusters))
	}
	for _, c := range res.Clusters {
		if c.Provider != plan.ProviderDocker || len(c.Resources) != 3 {
			t.Errorf("cluster %s: provider %q, %d nodes", c.Name, c.Provider, len(c.Resources))
		}
		for _, r := range c.Resources {
			if !strings.HasPrefix(r.Node, c.Name+"-n") || r.Summary.Samples == 0 {
				t.Errorf("cluster %s: node %s, %d samples", c.Name, r.Node, r.Summary.Samples)
			}
		}
	}
	if f := failover(t, phase(t, res, "p"), 1)[0]; f.Cluster != "e" || f.TimeToLeaderMS == nil {
		t.Errorf("the kill: cluster %q, new leader after %v", f.Cluster, f.TimeToLeaderMS)
	}
	for _, c := range res.Checks {
		if !c.Passed {
			t.Errorf("check %q: %s (observed %v)", c.Name, c.Error, c.Observed)
		}
	}
	if left := leftContainers(t, res); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
