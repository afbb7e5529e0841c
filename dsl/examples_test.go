package dsl_test

import (
	"path/filepath"
	"testing"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/plan"
)

// The files in examples/ teach the language: each must be valid as it
// stands, with no diagnostic at all.
func TestExamplesAreValid(t *testing.T) {
	paths, err := filepath.Glob("../examples/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, path := range paths {
		have[filepath.Base(path)] = true
		t.Run(filepath.Base(path), func(t *testing.T) {
			b := mustLoad(t, path, dsl.VarOptions{})
			for _, p := range b.Plans {
				if len(p.Events) == 0 || p.Duration <= 0 {
					t.Errorf("plan %v has no timeline", p.Point)
				}
			}
		})
	}
	// One example per fault kind, and the ones the README and Makefile name.
	want := []string{"etcd-geo.hcl", "etcd-smoke.hcl", "zookeeper-basic.hcl", "consul-basic.hcl",
		"sweep-timeouts.hcl", "consistency-modes.hcl"}
	for _, kind := range dsl.FaultKinds() {
		want = append(want, "fault-"+kind+".hcl")
	}
	for _, name := range want {
		if !have[name] {
			t.Errorf("examples/%s is missing", name)
		}
	}
}

// etcd-smoke.hcl is what `make run` runs for real on a laptop: it must stay
// short, on loopback, unshaped and free of faults.
func TestSmokeExampleStaysSmall(t *testing.T) {
	p := mustLoad(t, "../examples/etcd-smoke.hcl", dsl.VarOptions{}).Plans[0]
	if p.Duration.D().Seconds() < 15 || p.Duration.D().Seconds() > 30 {
		t.Errorf("runs %s; keep it between 15s and 30s", p.Duration)
	}
	if p.Network.Shaped() {
		t.Error("the smoke test shapes the network")
	}
	for _, c := range p.Clusters {
		for _, r := range c.Placement {
			if r != plan.DefaultRegion {
				t.Errorf("cluster %s places a node in %q", c.Name, r)
			}
		}
	}
	for _, e := range p.Events {
		if e.Fault != nil {
			t.Errorf("the smoke test injects %s", e.Fault.ID)
		}
	}
	if len(p.Checks) == 0 {
		t.Error("the smoke test checks nothing")
	}
}
