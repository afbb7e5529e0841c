package runner

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/internal/kubelocal/kubetest"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// A package's tests share one local Kubernetes, brought down at the end.
func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// kubeOpts runs every cluster as pods of the local Kubernetes, with the
// images of stores loaded into it.
func kubeOpts(t *testing.T, stores ...string) Options {
	t.Helper()
	var imgs []string
	for _, s := range stores {
		imgs = append(imgs, images.Default(s, ""))
	}
	c, agent := kubetest.Cluster(t, imgs...)
	return Options{Provider: plan.ProviderKubernetes, Kube: KubeOptions{Kubeconfig: c.Kubeconfig(), AgentImage: agent}}
}

// TestKubeEtcd plays the geo cluster as pods: the fabric joins the pods'
// network namespaces, so latency follows the RTT matrix as with processes;
// then the leadership handed to two regions, a leader kill with restart, a
// paused follower, and a partition.
func TestKubeEtcd(t *testing.T) {
	needFabric(t)
	opts := kubeOpts(t, plan.StoreEtcd)
	// Two load workers share the clients and the rate.
	twoWorkers := strings.Replace(geoCluster, `timeout     = "3s"`, "timeout     = \"3s\"\n  workers     = 2", 1)
	res := runScenarioWith(t, twoWorkers+`
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

phase "pause" {
  duration = "8s"
  load "w" {
    rate = 20
  }
  fault "pause" {
    target   = "follower"
    at       = "1s"
    duration = "3s"
  }
}

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

check "both workers through the shaper" {
  condition = phase.steady.network_pair["wk-w-1"].n1.packets > 50 && phase.steady.network_pair["wk-w-2"].n1.packets > 50
}
`, opts)
	if res.Backend["provider"] != plan.ProviderKubernetes {
		t.Errorf("provider %q, want kubernetes", res.Backend["provider"])
	}
	checkGeoLatency(t, res, "steady")
	checkRegionTransfer(t, res)
	// A check reads the workers' pods' pairs by their hosts' names.
	if len(res.Checks) != 1 || !res.Checks[0].Passed {
		t.Errorf("checks %+v, want the workers' pairs' check passed", res.Checks)
	}
	// 20 puts a second for 10 s, from two workers together.
	if st := phase(t, res, "steady").Total; st.Count < 180 || st.Count > 220 {
		t.Errorf("steady phase: %d operations from two workers, want about 200", st.Count)
	}
	// Both workers' histories, on one clock, check as linearizable.
	if c := res.Correctness; c == nil || c.Linearizable == nil || !*c.Linearizable || c.LostWrites == nil || *c.LostWrites != 0 {
		t.Errorf("correctness with two workers: %+v", res.Correctness)
	}
	f := failover(t, phase(t, res, "kill"), 1)[0]
	if f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > geoElectionBound {
		t.Errorf("leader kill: new leader after %s ms, want within %.0f ms", fmtOpt(f.TimeToLeaderMS), geoElectionBound)
	}
	if f.RecoveredMS == nil {
		t.Errorf("the killed leader's pod never served again")
	}
	t.Logf("leader kill in pods: new leader after %s ms, first write after %s ms, applied %s ms late", fmtOpt(f.TimeToLeaderMS), fmtOpt(f.TimeToWriteMS), fmtOpt(f.LagMS))
	p := phase(t, res, "pause")
	if pf := failover(t, p, 1)[0]; pf.RecoveredMS == nil {
		t.Errorf("paused follower never recovered")
	}
	if p.Elections != 0 {
		t.Errorf("pausing a follower caused %d elections", p.Elections)
	}
	f = failover(t, phase(t, res, "partition"), 1)[0]
	if f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > geoElectionBound {
		t.Errorf("isolated leader: new leader after %s ms, want within %.0f ms", fmtOpt(f.TimeToLeaderMS), geoElectionBound)
	}
	t.Logf("isolated leader in pods: new leader after %s ms, first write after %s ms", fmtOpt(f.TimeToLeaderMS), fmtOpt(f.TimeToWriteMS))
}

// TestKubeStores plays a ZooKeeper and a Consul cluster in pods with two
// load workers: a leader kill, a paused follower, and the leader cut off
// by rules in the pods (--kube-network pods, the way a remote cluster is
// partitioned).
func TestKubeStores(t *testing.T) {
	for _, sc := range storeCases {
		t.Run(sc.store, func(t *testing.T) {
			opts := kubeOpts(t, sc.store)
			opts.Kube.Network = KubeNetworkPods
			workload := strings.Replace(writerWorkload(sc.store), `timeout     = "2s"`, "timeout     = \"2s\"\n  workers     = 2", 1)
			if workload == writerWorkload(sc.store) {
				t.Fatal("the writer workload changed: no place for workers")
			}
			res := runScenarioWith(t, sc.cluster+workload+steadyTransfer(sc.store)+`
phase "kill" {
  duration = "14s"
  load "writer" {}
  fault "kill" {
    target        = "leader"
    at            = "2s"
    restart_after = "8s"
  }
}

phase "pause" {
  duration = "8s"
  load "writer" {}
  fault "pause" {
    target   = "follower"
    at       = "1s"
    duration = "3s"
  }
}

phase "partition" {
  duration = "16s"
  load "writer" {}
  fault "partition" {
    target   = "leader"
    at       = "2s"
    duration = "6s"
  }
}
`, opts)
			checkSteadyTransfer(t, res, sc.store)
			f := failover(t, phase(t, res, "kill"), 1)[0]
			if f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > sc.leaderBy {
				t.Errorf("new leader after %s ms, want within %.0f; the observer saw %s", fmtOpt(f.TimeToLeaderMS), sc.leaderBy, leadersAround(res, f))
			}
			if f.RecoveredMS == nil {
				t.Errorf("the killed leader never served again")
			}
			t.Logf("%s leader kill in pods: new leader after %s ms, first write after %s ms, applied %s ms late", sc.store, fmtOpt(f.TimeToLeaderMS), fmtOpt(f.TimeToWriteMS), fmtOpt(f.LagMS))
			p := phase(t, res, "pause")
			if pf := failover(t, p, 1)[0]; pf.RecoveredMS == nil {
				t.Errorf("paused follower never recovered")
			}
			f = failover(t, phase(t, res, "partition"), 1)[0]
			if f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > sc.leaderBy {
				t.Errorf("isolated leader: new leader after %s ms, want within %.0f; the observer saw %s", fmtOpt(f.TimeToLeaderMS), sc.leaderBy, leadersAround(res, f))
			}
			t.Logf("%s leader cut off by rules in pods: new leader after %s ms, first write after %s ms", sc.store, fmtOpt(f.TimeToLeaderMS), fmtOpt(f.TimeToWriteMS))
		})
	}
}

// TestKubePodRules plays partitions and a disk fault the way they act on a
// remote cluster: netfilter rules put into each store pod by its agent
// (--kube-network pods), and competing writers the agent runs on the pod's
// data volume. The pods are local here, but nothing of the fabric is used.
func TestKubePodRules(t *testing.T) {
	opts := kubeOpts(t, plan.StoreEtcd)
	opts.Kube.Network = KubeNetworkPods
	cluster := strings.Replace(faultCluster, `timeout  = "2s"`, "timeout  = \"2s\"\n  workers  = 2", 1)
	res := runScenarioWith(t, cluster+`
phase "steady" {
  duration = "4s"
  load "w" {}
}

phase "drop" {
  duration = "14s"
  load "w" {}
  fault "partition" {
    target   = "leader"
    at       = "2s"
    duration = "6s"
  }
}

phase "reject" {
  duration = "14s"
  load "w" {}
  fault "partition" {
    target   = "leader"
    at       = "2s"
    duration = "6s"
    mode     = "reject"
  }
}

phase "disk" {
  duration = "8s"
  load "w" {}
  fault "disk" {
    target      = "leader"
    at          = "1s"
    duration    = "4s"
    parallelism = 2
    block_size  = "16KiB"
  }
}
`, opts)
	if got := res.Backend["network"]; got != "pods" {
		t.Errorf("network backend %q, want pods", got)
	}
	for _, name := range []string{"drop", "reject"} {
		f := failover(t, phase(t, res, name), 1)[0]
		if f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > 8000 {
			t.Errorf("%s: isolated leader replaced after %s ms, want within 8000 ms", name, fmtOpt(f.TimeToLeaderMS))
		}
		if f.TimeToWriteMS == nil {
			t.Errorf("%s: no write accepted after the leader was cut off", name)
		}
		t.Logf("%s partition by rules in pods: new leader after %s ms, first write after %s ms, applied %s ms late", name, fmtOpt(f.TimeToLeaderMS), fmtOpt(f.TimeToWriteMS), fmtOpt(f.LagMS))
	}
	f := failover(t, phase(t, res, "disk"), 1)[0]
	if f.Disk == nil || f.Disk.Writes == 0 || f.Disk.Bytes != f.Disk.Writes*16<<10 || f.Disk.FsyncP99MS <= 0 {
		t.Fatalf("disk fault in the pod: %+v, want writes of 16 KiB with fsync latencies", f.Disk)
	}
	t.Logf("disk fault in the pod: %d writes, fsync p50 %.2f ms, p99 %.2f ms", f.Disk.Writes, f.Disk.FsyncP50MS, f.Disk.FsyncP99MS)
	// Resource use, read by each pod's agent from /proc.
	if len(res.Resources) != 3 {
		t.Errorf("resources of %d nodes, want 3", len(res.Resources))
	}
	for _, r := range res.Resources {
		if r.Summary.Samples == 0 || r.Summary.CPUMeanPercent <= 0 || r.Summary.RSSMaxBytes <= 0 || r.Summary.CPUWaitMeanPercent == nil {
			t.Errorf("node %s resources: %+v", r.Node, r.Summary)
		}
		t.Logf("node %s in its pod: %d samples, CPU mean %.1f%%, RSS max %d MiB", r.Node, r.Summary.Samples, r.Summary.CPUMeanPercent, r.Summary.RSSMaxBytes>>20)
	}
}

// leadersAround is the leader timeline the observer recorded from a second
// before f took effect to ten after, for a failure message.
func leadersAround(res *results.Results, f results.Failover) string {
	if f.AppliedMS == nil {
		return "nothing: the fault was not applied"
	}
	var b strings.Builder
	for _, o := range res.Leader {
		if o.AtMS < *f.AppliedMS-1000 || o.AtMS > *f.AppliedMS+10000 {
			continue
		}
		switch {
		case o.Unanswered:
			fmt.Fprintf(&b, " %.0f ms: no answer;", o.AtMS)
		case o.Leader == 0:
			fmt.Fprintf(&b, " %.0f ms: no leader;", o.AtMS)
		default:
			fmt.Fprintf(&b, " %.0f ms: n%d term %d;", o.AtMS, o.Leader, o.Term)
		}
	}
	return fmt.Sprintf("(fault applied at %.0f ms)%s", *f.AppliedMS, strings.TrimSuffix(b.String(), ";"))
}
