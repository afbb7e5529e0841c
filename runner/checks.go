package runner

import (
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// evalChecks evaluates every check of the plan against res and records the
// outcomes in res.Checks.
func evalChecks(pl *plan.Plan, res *results.Results) {
	at := metricsLookup(res)
	res.Checks = make([]results.Check, 0, len(pl.Checks))
	for _, c := range pl.Checks {
		res.Checks = append(res.Checks, checkResult(pl, c, at, res))
	}
}

// metricsLookup returns a metric getter over res for dsl.EvalCheck.
func metricsLookup(res *results.Results) func([]string) cty.Value {
	m := res.Metrics()
	return func(path []string) cty.Value {
		switch v := m[strings.Join(path, ".")].(type) {
		case float64:
			return cty.NumberFloatVal(v)
		case bool:
			return cty.BoolVal(v)
		}
		return cty.NilVal
	}
}

func checkResult(pl *plan.Plan, c plan.CheckSpec, at func([]string) cty.Value, res *results.Results) results.Check {
	out := dsl.EvalCheck(pl, c, at)
	rc := results.Check{
		Name:       c.Name,
		Condition:  c.Condition,
		Message:    c.Message,
		Pos:        c.Pos.String(),
		Passed:     out.Passed && out.Err == nil,
		Observed:   map[string]any{},
		DurationMS: checkSpan(pl, c, res),
	}
	if out.Err != nil {
		rc.Error = out.Err.Error()
	}
	for _, o := range out.Observed {
		rc.Observed[o.Path] = ctyToAny(o.Value)
	}
	return rc
}

func ctyToAny(v cty.Value) any {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	switch v.Type() {
	case cty.Bool:
		return v.True()
	case cty.Number:
		f, _ := v.AsBigFloat().Float64()
		return f
	}
	return nil
}

// checkSpan is the stretch of the run a check covers: the phases it reads,
// or the whole run.
func checkSpan(pl *plan.Plan, c plan.CheckSpec, res *results.Results) float64 {
	var d time.Duration
	seen := map[string]bool{}
	for _, ref := range c.Refs {
		name, ok := refPhase(ref)
		if !ok {
			return res.DurationMS
		}
		for _, p := range pl.Phases {
			if p.Name == name && !seen[name] {
				seen[name] = true
				d += p.Duration.D()
			}
		}
	}
	return results.MS(d)
}

// refPhase returns the phase a metric path reads ("phase.<name>..." or
// "cluster.<c>.phase.<name>...").
func refPhase(ref string) (string, bool) {
	parts := strings.SplitN(ref, ".", 5)
	if len(parts) >= 4 && parts[0] == "cluster" {
		parts = parts[2:]
	}
	if len(parts) < 2 || parts[0] != "phase" {
		return "", false
	}
	return parts[1], true
}

// abortingCheck returns the name of the first check marked abort_on_fail
// that reads only phases in ended and fails on the measurements so far, or
// "" when there is none.
func (x *execution) abortingCheck(ended []string) string {
	var due []plan.CheckSpec
	for _, c := range x.plan.Checks {
		if c.AbortOnFail && readsOnly(c, ended) {
			due = append(due, c)
		}
	}
	if len(due) == 0 {
		return ""
	}
	at := metricsLookup(x.snapshot())
	for _, c := range due {
		if out := dsl.EvalCheck(x.plan, c, at); !out.Passed || out.Err != nil {
			return c.Name
		}
	}
	return ""
}

func readsOnly(c plan.CheckSpec, phases []string) bool {
	for _, ref := range c.Refs {
		name, ok := refPhase(ref)
		if !ok {
			return false
		}
		found := false
		for _, p := range phases {
			found = found || p == name
		}
		if !found {
			return false
		}
	}
	return len(c.Refs) > 0
}
