package runner

import (
	"os"
	"strings"
	"testing"

	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/internal/kubelocal/kubetest"
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
// then a leader kill with restart, a paused follower, and a partition.
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
`, opts)
	if res.Backend["provider"] != plan.ProviderKubernetes {
		t.Errorf("provider %q, want kubernetes", res.Backend["provider"])
	}
	checkGeoLatency(t, res, "steady")
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

// TestKubeStores kills the leader of a ZooKeeper and a Consul cluster in
// pods, as TestStores does with processes.
func TestKubeStores(t *testing.T) {
	for _, sc := range storeCases {
		t.Run(sc.store, func(t *testing.T) {
			opts := kubeOpts(t, sc.store)
			res := runScenarioWith(t, sc.cluster+writerWorkload(sc.store)+`
phase "steady" {
  duration = "4s"
  load "writer" {}
}

phase "kill" {
  duration = "14s"
  load "writer" {}
  fault "kill" {
    target        = "leader"
    at            = "2s"
    restart_after = "8s"
  }
}
`, opts)
			f := failover(t, phase(t, res, "kill"), 1)[0]
			if f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > sc.leaderBy {
				t.Errorf("new leader after %s ms, want within %.0f", fmtOpt(f.TimeToLeaderMS), sc.leaderBy)
			}
			if f.RecoveredMS == nil {
				t.Errorf("the killed leader never served again")
			}
			t.Logf("%s leader kill in pods: new leader after %s ms, first write after %s ms, applied %s ms late", sc.store, fmtOpt(f.TimeToLeaderMS), fmtOpt(f.TimeToWriteMS), fmtOpt(f.LagMS))
		})
	}
}
