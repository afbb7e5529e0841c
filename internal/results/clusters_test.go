package results

import (
	"bytes"
	"strings"
	"testing"
)

func f64p(v float64) *float64 { return &v }

// oneCluster is what a one-cluster run of store reports: one phase, one
// workload w, a leader, a node and a correctness verdict.
func oneCluster(store, w string, count int64, p99 float64, lin *bool, lost *int64) *Results {
	op := OpStats{Op: "put", Count: count, OK: count - 1, Errors: 1, ErrorsBy: map[string]int64{"timeout": 1}, Throughput: float64(count) / 10,
		Latency: &Latency{P99MS: p99}}
	ph := Phase{Name: "p", DurationMS: 10000, Total: op, Ops: []OpStats{op}, Availability: f64p(0.99), Elections: 1,
		Workloads: []WorkloadStats{{Name: w, Total: op, Ops: []OpStats{op}, Availability: f64p(0.99)}},
		Failovers: []Failover{{FaultID: "p/cut", Kind: "partition", Targets: []string{w + "-n2"}}},
		Resources: map[string]ResourceSummary{RunnerNode: {Samples: 10, CPUMeanPercent: 30, CPUWaitMeanPercent: f64p(10)}}}
	return &Results{
		Scenario: "s", RunID: "r1", DurationMS: 10000,
		Phases: []Phase{ph}, Run: ph,
		Series:      []Series{{Workload: w, Op: "put"}},
		Leader:      []LeaderObservation{{Leader: 1, Term: 2}},
		Resources:   []NodeResources{{Node: w + "-n1"}},
		Clients:     map[string]map[string]string{w: {"balancing": "x"}},
		Seeds:       map[string]int64{"workload." + w: 7},
		Backend:     map[string]string{"store": store, "provider": "process", "network": "loopback"},
		Notes:       map[string]string{"node." + w + "-n1": "exited"},
		Correctness: &Correctness{Linearizable: lin, LostWrites: lost, Operations: 10, Detail: "checked."},
	}
}

func TestCombine(t *testing.T) {
	yes, no := true, false
	zero, two := int64(0), int64(2)
	tests := []struct {
		name     string
		a, b     *Results
		wantLin  *bool
		wantLost *int64
	}{
		{name: "both linearizable", a: oneCluster("etcd 3.5.17", "e", 100, 5, &yes, &zero), b: oneCluster("zookeeper 3.8.0", "z", 50, 9, &yes, &two), wantLin: &yes, wantLost: new(int64(2))},
		{name: "a violation anywhere is one", a: oneCluster("etcd 3.5.17", "e", 100, 5, &yes, &zero), b: oneCluster("zookeeper 3.8.0", "z", 50, 9, &no, nil), wantLin: &no},
		{name: "an unchecked cluster leaves the run unchecked", a: oneCluster("etcd 3.5.17", "e", 100, 5, nil, &zero), b: oneCluster("zookeeper 3.8.0", "z", 50, 9, &yes, &zero), wantLost: new(int64(0))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Combine([]string{"etcd", "zk"}, []*Results{tt.a, tt.b})
			if len(r.Clusters) != 2 || r.Clusters[1].Name != "zk" || r.Clusters[1].Store != "zookeeper 3.8.0" {
				t.Fatalf("clusters: %+v", r.Clusters)
			}
			if got := r.Correctness.Linearizable; (got == nil) != (tt.wantLin == nil) || (got != nil && *got != *tt.wantLin) {
				t.Errorf("linearizable %v, want %v", got, tt.wantLin)
			}
			if got := r.Correctness.LostWrites; (got == nil) != (tt.wantLost == nil) || (got != nil && *got != *tt.wantLost) {
				t.Errorf("lost writes %v, want %v", got, tt.wantLost)
			}
			p := r.Phases[0]
			if len(p.Workloads) != 2 || p.Total.Count != 150 || p.Total.ErrorsBy["timeout"] != 2 || p.Elections != 2 {
				t.Errorf("combined phase: %d workloads, count %d, errors %v, elections %d", len(p.Workloads), p.Total.Count, p.Total.ErrorsBy, p.Elections)
			}
			if p.Total.Latency != nil || p.Availability != nil || len(p.Ops) != 0 {
				t.Error("the combined phase mixes stores' latencies or availability")
			}
			if p.Failovers[1].Cluster != "zk" {
				t.Errorf("second failover names cluster %q", p.Failovers[1].Cluster)
			}
			if r.Backend["store"] != "etcd 3.5.17, zookeeper 3.8.0" || r.Backend["provider"] != "process" {
				t.Errorf("backend %v", r.Backend)
			}
			if len(r.Series) != 2 || len(r.Resources) != 2 || len(r.Clients) != 2 || r.Notes["zk.node.z-n1"] != "exited" {
				t.Errorf("series %d, resources %d, clients %d, notes %v", len(r.Series), len(r.Resources), len(r.Clients), r.Notes)
			}
			m := r.Metrics()
			for path, want := range map[string]float64{
				"cluster.etcd.phase.p.put.p99":      5,
				"cluster.zk.run.p99":                9,
				"cluster.zk.phase.p.elections":      1,
				"phase.p.workload.z.put.p99":        9,
				"cluster.etcd.phase.p.availability": 0.99,
				// One runner serves every cluster.
				"phase.p.runner_wait_share": 0.25,
			} {
				if got, ok := m[path].(float64); !ok || got != want {
					t.Errorf("%s = %v, want %v", path, m[path], want)
				}
			}
			if _, ok := m["phase.p.put.p99"]; ok {
				t.Error("phase.p.put.p99 is set across stores")
			}
			var b bytes.Buffer
			if err := WriteSummary(&b, r, false); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"cluster etcd (etcd 3.5.17, process)", "cluster zk (zookeeper 3.8.0, process)", "fault p/cut (partition z-n2)"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("summary lacks %q:\n%s", want, b.String())
				}
			}
		})
	}
}

func TestCombineOneIsItself(t *testing.T) {
	yes, zero := true, int64(0)
	r := oneCluster("etcd 3.5.17", "e", 100, 5, &yes, &zero)
	if got := Combine([]string{"main"}, []*Results{r}); got != r || got.Clusters != nil {
		t.Error("one cluster's results are not returned as they are")
	}
}
