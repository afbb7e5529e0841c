package dsl_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/plan"
	"github.com/zclconf/go-cty/cty"
)

const checkSource = `
variable "budget_ms" {
  type    = number
  default = 100
}
cluster "main" {
  store = "etcd"
}
workload "w" {
  mix = { put = 0.5, get = 0.5 }
}
phase "steady" {
  duration = "10s"
  load "w" {}
}
check "latency" {
  condition = phase.steady.put.p99 < ms(var.budget_ms)
}
check "availability and gap" {
  condition = phase.steady.availability >= 0.99 && phase.steady.max_gap < seconds(1)
}
check "correct" {
  condition = run.linearizable && run.lost_writes == 0
}
check "per workload, by index" {
  condition = phase["steady"].workload.w.get.errors_by.timeout == 0
}
check "quiet machine" {
  condition = phase.steady.steal_share < 0.01 && run.cpu_wait_share < 0.5 && run.runner_wait_share < 0.2
}
check "links as declared" {
  condition = phase.steady.network_pair.n1.n2.lost_share < 0.01 && run.network_pair["client-local"].n3.late_p99_ms < 1
}
`

// metrics answers metric lookups from a map; a path not in it was not
// measured.
func metrics(m map[string]cty.Value) func([]string) cty.Value {
	return func(path []string) cty.Value {
		if v, ok := m[strings.Join(path, ".")]; ok {
			return v
		}
		return cty.NilVal
	}
}

func TestCompiledCheckRefs(t *testing.T) {
	p := loadPlan(t, checkSource, dsl.VarOptions{})
	want := map[string][]string{
		"latency":                {"phase.steady.put.p99"},
		"availability and gap":   {"phase.steady.availability", "phase.steady.max_gap"},
		"correct":                {"run.linearizable", "run.lost_writes"},
		"per workload, by index": {"phase.steady.workload.w.get.errors_by.timeout"},
		"quiet machine":          {"phase.steady.steal_share", "run.cpu_wait_share", "run.runner_wait_share"},
		"links as declared":      {"phase.steady.network_pair.n1.n2.lost_share", "run.network_pair.client-local.n3.late_p99_ms"},
	}
	for _, c := range p.Checks {
		if !reflect.DeepEqual(c.Refs, want[c.Name]) {
			t.Errorf("check %q reads %q, want %q", c.Name, c.Refs, want[c.Name])
		}
	}
	if c := p.Checks[0]; c.Condition != "phase.steady.put.p99 < ms(var.budget_ms)" || c.Pos.Line != 17 || c.Pos.Column != 15 {
		t.Errorf("check source %q at %s", c.Condition, c.Pos)
	}
}

func TestEvalCheck(t *testing.T) {
	healthy := map[string]cty.Value{
		"phase.steady.put.p99":                          cty.NumberFloatVal(42.5),
		"phase.steady.availability":                     cty.NumberFloatVal(0.999),
		"phase.steady.max_gap":                          cty.NumberIntVal(120),
		"run.linearizable":                              cty.True,
		"run.lost_writes":                               cty.NumberIntVal(0),
		"phase.steady.workload.w.get.errors_by.timeout": cty.NumberIntVal(0),
	}
	with := func(kv map[string]cty.Value) map[string]cty.Value {
		out := map[string]cty.Value{}
		for k, v := range healthy {
			out[k] = v
		}
		for k, v := range kv {
			if v == cty.NilVal {
				delete(out, k)
				continue
			}
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name    string
		check   string
		vars    []string
		metrics map[string]cty.Value
		passed  bool
		errSub  string // "" when the condition evaluates
	}{
		{name: "latency passes", check: "latency", metrics: healthy, passed: true},
		{name: "latency fails", check: "latency", metrics: with(map[string]cty.Value{"phase.steady.put.p99": cty.NumberIntVal(150)})},
		{name: "variable in the check", check: "latency", vars: []string{"budget_ms=200"},
			metrics: with(map[string]cty.Value{"phase.steady.put.p99": cty.NumberIntVal(150)}), passed: true},
		{name: "variable tightens the check", check: "latency", vars: []string{"budget_ms=40"}, metrics: healthy},
		{name: "conjunction passes", check: "availability and gap", metrics: healthy, passed: true},
		{name: "one side of a conjunction fails", check: "availability and gap",
			metrics: with(map[string]cty.Value{"phase.steady.max_gap": cty.NumberIntVal(1000)})},
		{name: "boolean metric", check: "correct", metrics: healthy, passed: true},
		{name: "not linearizable", check: "correct", metrics: with(map[string]cty.Value{"run.linearizable": cty.False})},
		{name: "index syntax", check: "per workload, by index", metrics: healthy, passed: true},
		{name: "unmeasured metric fails with an error", check: "latency",
			metrics: with(map[string]cty.Value{"phase.steady.put.p99": cty.NilVal}), errSub: "not measured: phase.steady.put.p99"},
		{name: "unmeasured boolean fails with an error", check: "correct",
			metrics: with(map[string]cty.Value{"run.linearizable": cty.NilVal}), errSub: "not measured: run.linearizable"},
		{name: "nothing measured", check: "availability and gap", metrics: map[string]cty.Value{}, errSub: "not measured: phase.steady.availability, phase.steady.max_gap"},
		{name: "a metric measured as null", check: "latency",
			metrics: with(map[string]cty.Value{"phase.steady.put.p99": cty.NullVal(cty.Number)}), errSub: "not measured: phase.steady.put.p99"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := loadPlan(t, checkSource, dsl.VarOptions{Vars: tt.vars})
			var spec *plan.CheckSpec
			for i := range p.Checks {
				if p.Checks[i].Name == tt.check {
					spec = &p.Checks[i]
				}
			}
			if spec == nil {
				t.Fatalf("no check %q", tt.check)
			}
			out := dsl.EvalCheck(p, *spec, metrics(tt.metrics))
			switch {
			case tt.errSub != "" && (out.Err == nil || !strings.Contains(out.Err.Error(), tt.errSub)):
				t.Fatalf("Err = %v, want one containing %q", out.Err, tt.errSub)
			case tt.errSub == "" && out.Err != nil:
				t.Fatalf("unexpected Err %v", out.Err)
			case out.Passed != tt.passed:
				t.Fatalf("Passed = %t, want %t", out.Passed, tt.passed)
			case out.Err != nil && out.Passed:
				t.Fatal("a check that could not be evaluated passed")
			}
			// Every metric the check reads is reported, measured or not.
			if len(out.Observed) != len(spec.Refs) {
				t.Fatalf("observed %v for refs %v", out.Observed, spec.Refs)
			}
			for i, o := range out.Observed {
				if o.Path != spec.Refs[i] {
					t.Errorf("observed %q, want %q", o.Path, spec.Refs[i])
				}
				if want, ok := tt.metrics[o.Path]; ok && !o.Value.RawEquals(want) {
					t.Errorf("observed %s = %#v, want %#v", o.Path, o.Value, want)
				}
				if _, ok := tt.metrics[o.Path]; !ok && !o.Value.IsNull() {
					t.Errorf("unmeasured %s observed as %#v, want null", o.Path, o.Value)
				}
			}
		})
	}
}

func TestEvalCheckFromSavedPlan(t *testing.T) {
	// A check is re-evaluated from the plan alone (as results.json keeps
	// it): the condition source and the variables as literals.
	p := loadPlan(t, checkSource, dsl.VarOptions{Vars: []string{"budget_ms=50"}})
	saved := *p
	saved.Variables = map[string]string{"budget_ms": "50"}
	out := dsl.EvalCheck(&saved, saved.Checks[0], metrics(map[string]cty.Value{"phase.steady.put.p99": cty.NumberIntVal(60)}))
	if out.Err != nil || out.Passed {
		t.Fatalf("p99 60 against a 50ms budget: passed %t, err %v", out.Passed, out.Err)
	}
}
