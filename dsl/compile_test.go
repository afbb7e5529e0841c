package dsl_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/plan"
)

// Plans are pure functions of the file: these tests pin whole timelines as
// literals, with no clock and no processes.

const oneCluster = `
cluster "main" {
  store = "etcd"
}
workload "w" {
  mix = { put = 1 }
}
`

func sec(n float64) plan.Duration { return plan.Duration(n * float64(time.Second)) }

func closed(clients int, d plan.Duration) *plan.LoadSpec {
	return &plan.LoadSpec{Workload: "w", Mode: plan.LoadClosed, ClientsFrom: clients, ClientsTo: clients, Duration: d}
}

func loadPlan(t *testing.T, src string, opts dsl.VarOptions) *plan.Plan {
	t.Helper()
	b := mustLoadSource(t, "test.hcl", []byte(src), opts)
	if len(b.Plans) != 1 {
		t.Fatalf("got %d plans, want 1", len(b.Plans))
	}
	return b.Plans[0]
}

func assertEvents(t *testing.T, got, want []plan.Event) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	t.Fatalf("events differ: %s\ngot:\n%s\nwant:\n%s", firstDifference(string(w), string(g)), g, w)
}

func TestCompilePhaseBoundaries(t *testing.T) {
	// A phase's end comes before the next phase's start at the same offset;
	// a fault that lasts to the end of its phase recovers before that end.
	p := loadPlan(t, oneCluster+`
phase "a" {
  duration = "10s"
  load "w" {}
  fault "network" {
    rtt = "50ms"
    at  = "4s"
  }
}
phase "b" {
  duration = "5s"
  load "w" {
    clients = ramp(2, 6)
  }
}
phase "c" {
  duration = "1s"
  load "w" {
    rate = ramp(10, 20)
  }
}
`, dsl.VarOptions{})
	net := &plan.FaultSpec{
		ID: "a/network", Name: "network", Kind: plan.FaultNetwork, Cluster: "main",
		Start: sec(4), Duration: sec(6), Network: &plan.NetworkEffect{Shaping: plan.Shaping{RTT: plan.Duration(50 * time.Millisecond)}},
	}
	assertEvents(t, p.Events, []plan.Event{
		{At: 0, Phase: "a", Kind: plan.EventPhaseStart},
		{At: 0, Phase: "a", Kind: plan.EventLoad, Load: closed(10, sec(10))},
		{At: sec(4), Phase: "a", Kind: plan.EventFaultInject, Fault: net},
		{At: sec(10), Phase: "a", Kind: plan.EventFaultRecover, Fault: net},
		{At: sec(10), Phase: "a", Kind: plan.EventPhaseEnd},
		{At: sec(10), Phase: "b", Kind: plan.EventPhaseStart},
		{At: sec(10), Phase: "b", Kind: plan.EventLoad, Load: &plan.LoadSpec{Workload: "w", Mode: plan.LoadClosed, ClientsFrom: 2, ClientsTo: 6, Duration: sec(5)}},
		{At: sec(15), Phase: "b", Kind: plan.EventPhaseEnd},
		{At: sec(15), Phase: "c", Kind: plan.EventPhaseStart},
		{At: sec(15), Phase: "c", Kind: plan.EventLoad, Load: &plan.LoadSpec{Workload: "w", Mode: plan.LoadOpen, RateFrom: 10, RateTo: 20, Duration: sec(1)}},
		{At: sec(16), Phase: "c", Kind: plan.EventPhaseEnd},
	})
	wantPhases := []plan.PhaseSpan{
		{Name: "a", Start: 0, Duration: sec(10)},
		{Name: "b", Start: sec(10), Duration: sec(5)},
		{Name: "c", Start: sec(15), Duration: sec(1)},
	}
	if !reflect.DeepEqual(p.Phases, wantPhases) {
		t.Errorf("phases = %+v, want %+v", p.Phases, wantPhases)
	}
	if p.Duration != sec(16) {
		t.Errorf("duration = %s, want 16s", p.Duration)
	}
}

func TestCompileRepeatingFault(t *testing.T) {
	// every expands into #1..#k, each with its own recover event; the last
	// occurrence is the last one that still ends within the phase.
	p := loadPlan(t, oneCluster+`
phase "chaos" {
  duration = "20s"
  load "w" {}
  fault "pause" {
    target   = 2
    at       = "1s"
    duration = "3s"
    every    = "5s"
  }
}
`, dsl.VarOptions{})
	occ := func(k int, start float64) *plan.FaultSpec {
		return &plan.FaultSpec{
			ID: "chaos/pause#" + string(rune('0'+k)), Name: "pause", Kind: plan.FaultPause, Cluster: "main",
			Target: plan.TargetSpec{Kind: plan.TargetNodes, Nodes: []int{2}}, Start: sec(start), Duration: sec(3),
		}
	}
	o1, o2, o3, o4 := occ(1, 1), occ(2, 6), occ(3, 11), occ(4, 16)
	assertEvents(t, p.Events, []plan.Event{
		{At: 0, Phase: "chaos", Kind: plan.EventPhaseStart},
		{At: 0, Phase: "chaos", Kind: plan.EventLoad, Load: closed(10, sec(20))},
		{At: sec(1), Phase: "chaos", Kind: plan.EventFaultInject, Fault: o1},
		{At: sec(4), Phase: "chaos", Kind: plan.EventFaultRecover, Fault: o1},
		{At: sec(6), Phase: "chaos", Kind: plan.EventFaultInject, Fault: o2},
		{At: sec(9), Phase: "chaos", Kind: plan.EventFaultRecover, Fault: o2},
		{At: sec(11), Phase: "chaos", Kind: plan.EventFaultInject, Fault: o3},
		{At: sec(14), Phase: "chaos", Kind: plan.EventFaultRecover, Fault: o3},
		{At: sec(16), Phase: "chaos", Kind: plan.EventFaultInject, Fault: o4},
		{At: sec(19), Phase: "chaos", Kind: plan.EventFaultRecover, Fault: o4},
		{At: sec(20), Phase: "chaos", Kind: plan.EventPhaseEnd},
	})
}

func TestCompileRepeatingKill(t *testing.T) {
	// A kill with restart_after repeats like a windowed fault; one without
	// is instantaneous, and its last occurrence must start before the end.
	p := loadPlan(t, oneCluster+`
phase "p" {
  duration = "10s"
  load "w" {}
  fault "kill" {
    name          = "bounce"
    target        = 1
    every         = "4s"
    restart_after = "1s"
  }
  fault "kill" {
    name   = "shoot"
    target = 3
    at     = "2s"
    every  = "4s"
  }
}
`, dsl.VarOptions{})
	var ids []string
	for _, e := range p.Events {
		if e.Fault != nil {
			ids = append(ids, e.At.String()+" "+e.Kind+" "+e.Fault.ID)
		}
	}
	want := []string{
		"0s fault_inject p/bounce#1",
		"1s fault_recover p/bounce#1",
		"2s fault_inject p/shoot#1",
		"4s fault_inject p/bounce#2",
		"5s fault_recover p/bounce#2",
		"6s fault_inject p/shoot#2",
		"8s fault_inject p/bounce#3",
		"9s fault_recover p/bounce#3",
	}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("fault events:\n  %s\nwant:\n  %s", strings.Join(ids, "\n  "), strings.Join(want, "\n  "))
	}
	// 10s would be the end of the phase: no shoot#3 at 10s.
}

func TestCompileRestartWithoutDelay(t *testing.T) {
	// restart_after = 0: stop and start at one offset, inject first.
	p := loadPlan(t, oneCluster+`
phase "p" {
  duration = "10s"
  load "w" {}
  fault "restart" {
    target        = "leader"
    at            = "3s"
    restart_after = "0s"
  }
  fault "restart" {
    name   = "later"
    target = [3, 1]
    at     = "6s"
  }
}
`, dsl.VarOptions{})
	r1 := &plan.FaultSpec{ID: "p/restart", Name: "restart", Kind: plan.FaultRestart, Cluster: "main",
		Target: plan.TargetSpec{Kind: plan.TargetLeader}, Start: sec(3)}
	r2 := &plan.FaultSpec{ID: "p/later", Name: "later", Kind: plan.FaultRestart, Cluster: "main",
		Target: plan.TargetSpec{Kind: plan.TargetNodes, Nodes: []int{1, 3}}, Start: sec(6)}
	assertEvents(t, p.Events, []plan.Event{
		{At: 0, Phase: "p", Kind: plan.EventPhaseStart},
		{At: 0, Phase: "p", Kind: plan.EventLoad, Load: closed(10, sec(10))},
		{At: sec(3), Phase: "p", Kind: plan.EventFaultInject, Fault: r1},
		{At: sec(3), Phase: "p", Kind: plan.EventFaultRecover, Fault: r1},
		{At: sec(6), Phase: "p", Kind: plan.EventFaultInject, Fault: r2},
		{At: sec(6), Phase: "p", Kind: plan.EventFaultRecover, Fault: r2},
		{At: sec(10), Phase: "p", Kind: plan.EventPhaseEnd},
	})
}

func TestCompileFaultIDs(t *testing.T) {
	// Unnamed faults of one kind are numbered; named ones keep their name.
	p := loadPlan(t, oneCluster+`
phase "p" {
  duration = "10s"
  load "w" {}
  fault "kill" {
    target = 1
  }
  fault "kill" {
    target = 2
    at     = "1s"
  }
  fault "kill" {
    name   = "third"
    target = 3
    at     = "2s"
  }
}
`, dsl.VarOptions{})
	var ids []string
	for _, e := range p.Events {
		if e.Fault != nil {
			ids = append(ids, e.Fault.ID)
		}
	}
	if want := []string{"p/kill.1", "p/kill.2", "p/third"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("IDs = %q, want %q", ids, want)
	}
}

func TestCompileDerivedSeeds(t *testing.T) {
	src := `
seed = 42
cluster "main" {
  store = "etcd"
}
workload "a" {
  mix = { put = 1 }
}
workload "b" {
  mix = { put = 1 }
}
workload "pinned" {
  mix  = { put = 1 }
  seed = 7
}
phase "p" {
  duration = "30s"
  load "a" {}
  load "b" {}
  load "pinned" {}
  fault "pause" {
    target   = "random"
    duration = "1s"
    every    = "10s"
  }
  fault "kill" {
    target = "follower"
    at     = "5s"
  }
  fault "stop" {
    target = "random"
    seed   = 5
    at     = "6s"
  }
}
`
	seeds := func(p *plan.Plan) map[string]int64 {
		out := map[string]int64{}
		for _, w := range p.Workloads {
			out["workload "+w.Name] = w.Seed
		}
		for _, e := range p.Events {
			if e.Kind == plan.EventFaultInject {
				out["fault "+e.Fault.ID] = e.Fault.Target.Seed
			}
		}
		return out
	}
	first := seeds(loadPlan(t, src, dsl.VarOptions{}))
	// Stable: the same file gives the same seeds, run after run. These
	// numbers are in results; changing how seeds derive changes every
	// recorded run, so this list only changes on purpose.
	want := map[string]int64{
		"workload a":      first["workload a"],
		"workload b":      first["workload b"],
		"workload pinned": 7,
		"fault p/pause#1": first["fault p/pause#1"],
		"fault p/pause#2": first["fault p/pause#2"],
		"fault p/pause#3": first["fault p/pause#3"],
		"fault p/kill":    first["fault p/kill"],
		"fault p/stop":    5,
	}
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("seeds = %v, want %v", first, want)
	}
	for i := 0; i < 3; i++ {
		if again := seeds(loadPlan(t, src, dsl.VarOptions{})); !reflect.DeepEqual(again, first) {
			t.Fatalf("seeds changed between loads: %v then %v", first, again)
		}
	}
	distinct := map[int64]string{}
	for name, s := range first {
		if s == 0 {
			t.Errorf("%s has seed 0", name)
		}
		if other, ok := distinct[s]; ok {
			t.Errorf("%s and %s share seed %d", name, other, s)
		}
		distinct[s] = name
	}
	// The scenario's seed feeds every derived seed, and only derived ones.
	other := seeds(loadPlan(t, strings.Replace(src, "seed = 42", "seed = 43", 1), dsl.VarOptions{}))
	for name, s := range other {
		pinned := name == "workload pinned" || name == "fault p/stop"
		if changed := s != first[name]; changed == pinned {
			t.Errorf("%s: seed %d with seed = 42, %d with seed = 43", name, first[name], s)
		}
	}
}

func TestCompileDerivedSeedValues(t *testing.T) {
	// Pinned values: a change here means every earlier run's recorded seeds
	// no longer reproduce it.
	p := loadPlan(t, oneCluster+`
phase "a" {
  duration = "10s"
  load "w" {}
  fault "pause" {
    target = "random"
    at     = "4s"
  }
}
`, dsl.VarOptions{})
	if got, want := p.Workloads[0].Seed, int64(3624239639362437730); got != want {
		t.Errorf("workload seed = %d, want %d", got, want)
	}
	if got, want := p.Events[2].Fault.Target.Seed, int64(2429619655982871506); got != want {
		t.Errorf("fault seed = %d, want %d", got, want)
	}
}

func TestCompileKubernetesBlock(t *testing.T) {
	p := loadPlan(t, `
cluster "main" {
  store     = "etcd"
  provider  = "kubernetes"
  placement = ["us-east", "eu-west", "eu-west"]
  kubernetes {
    storage_class = "fast-ssd"
    storage_size  = "10Gi"
    region_label  = "topology.kubernetes.io/zone"
    regions       = { us-east = "us-east-1a", eu-west = "eu-west-1b" }
  }
}

workload "w" {
  mix    = { put = 1 }
  region = "us-east"
}

phase "p" {
  duration = "10s"
  load "w" {}
}
`, dsl.VarOptions{})
	want := &plan.KubernetesSpec{StorageClass: "fast-ssd", StorageSize: "10Gi", RegionLabel: "topology.kubernetes.io/zone",
		Regions: map[string]string{"us-east": "us-east-1a", "eu-west": "eu-west-1b"}}
	if got := p.Clusters[0].Kubernetes; !reflect.DeepEqual(got, want) {
		t.Errorf("kubernetes block: %+v, want %+v", got, want)
	}
	// A region map alone matches the standard region label.
	p = loadPlan(t, `
cluster "main" {
  store = "etcd"
  kubernetes {
    regions = { local = "r1" }
  }
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "10s"
  load "w" {}
}
`, dsl.VarOptions{})
	if got := p.Clusters[0].Kubernetes.RegionLabel; got != plan.DefaultRegionLabel {
		t.Errorf("region label %q, want the default %q", got, plan.DefaultRegionLabel)
	}
}
