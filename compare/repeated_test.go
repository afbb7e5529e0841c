package compare

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/coordlab/scenario/internal/results"
)

// aggregate makes the aggregate of len(values) repetitions of
// etcd-smoke.hcl with the given metrics.
func aggregate(metrics map[string][]any) *results.Aggregate {
	a := &results.Aggregate{SchemaVersion: results.SchemaVersion, Kind: results.KindRepetitions, Scenario: "etcd-smoke.hcl",
		Backend: map[string]string{"store": "etcd 3.5.17"}, Phases: []string{"warmup", "steady"}, Metrics: map[string]*results.MetricSample{}}
	n := 0
	for p, vs := range metrics {
		a.Metrics[p] = &results.MetricSample{Values: vs}
		n = max(n, len(vs))
	}
	for i := range n {
		a.Repetitions = append(a.Repetitions, results.Repetition{Dir: "rep-" + string(rune('1'+i)), RunID: "r" + string(rune('1'+i)), Passed: true})
	}
	return a
}

// around returns center scaled by 1+offset for each offset, as []any.
func around(center float64, offsets ...float64) []any {
	out := make([]any, len(offsets))
	for i, o := range offsets {
		out[i] = center * (1 + o)
	}
	return out
}

func TestCompareRepeated(t *testing.T) {
	const p99 = "phase.steady.put.p99"
	const tput = "phase.steady.throughput"
	// Five runs spread by about ±5%, as p99 and throughput on a quiet
	// machine, and five more of the same.
	baseP99 := around(40, -0.05, -0.02, 0, 0.03, 0.05)
	aaP99 := around(40, -0.04, -0.01, 0.01, 0.02, 0.06)
	baseTput := around(1000, 0.04, -0.03, 0.01, -0.05, 0.02)
	aaTput := around(1000, -0.02, 0.05, -0.04, 0.01, 0.03)
	tests := []struct {
		name       string
		base, next map[string][]any
		opts       Options
		want       map[string]Verdict
		beyond     []string // within tolerance only for want of significance
		untestable bool
	}{
		{name: "A/A passes",
			base: map[string][]any{p99: baseP99, tput: baseTput},
			next: map[string][]any{p99: aaP99, tput: aaTput},
			want: map[string]Verdict{p99: OK, tput: OK}},
		{name: "a planted 20% p99 regression is flagged under a 10% tolerance",
			base: map[string][]any{p99: baseP99},
			next: map[string][]any{p99: around(48, 0.02, -0.05, 0.04, -0.01, 0.03)},
			opts: Options{Rules: []Rule{mustRule(t, "*.p99=+10%")}},
			want: map[string]Verdict{p99: Regression}},
		{name: "a planted 10% throughput drop is flagged under a 5% tolerance",
			base: map[string][]any{tput: baseTput},
			next: map[string][]any{tput: around(900, 0.01, -0.02, 0.03, -0.01, 0.02)},
			opts: Options{Rules: []Rule{mustRule(t, "*.throughput=-5%")}},
			want: map[string]Verdict{tput: Regression}},
		{name: "beyond the tolerance but within the noise",
			// Medians 40 and 70 ms (+75%), but the runs overlap: p = 0.69.
			base: map[string][]any{p99: {20.0, 30.0, 40.0, 90.0, 100.0}},
			next: map[string][]any{p99: {25.0, 35.0, 70.0, 95.0, 110.0}},
			want: map[string]Verdict{p99: OK}, beyond: []string{p99}},
		{name: "one baseline run against five cannot be tested",
			base:       map[string][]any{p99: {40.0}},
			next:       map[string][]any{p99: around(80, -0.05, -0.02, 0, 0.03, 0.05)},
			want:       map[string]Verdict{p99: Regression},
			untestable: true},
		{name: "a boolean lost in one repetition",
			base: map[string][]any{"run.linearizable": {true, true, true, true, true}},
			next: map[string][]any{"run.linearizable": {true, true, false, true, true}},
			want: map[string]Verdict{"run.linearizable": Regression}},
		{name: "a check failing in one repetition",
			base: map[string][]any{"check.available": {"pass", "pass", "pass", "pass", "pass"}},
			next: map[string][]any{"check.available": {"pass", "fail", "pass", "pass", "pass"}},
			want: map[string]Verdict{"check.available": Regression}},
		{name: "a metric missing from some repetitions is compared on the rest",
			base: map[string][]any{p99: append(baseP99, nil)},
			next: map[string][]any{p99: append(aaP99, nil)},
			want: map[string]Verdict{p99: OK}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := CompareSides(FromAggregate(aggregate(tt.base)), FromAggregate(aggregate(tt.next)), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if d.Alpha != DefaultAlpha {
				t.Errorf("alpha %v, want %v", d.Alpha, DefaultAlpha)
			}
			got := map[string]Verdict{}
			for _, r := range d.Rows {
				got[r.Metric] = r.Verdict
				if r.Stats == nil {
					t.Errorf("%s: no stats", r.Metric)
					continue
				}
				if tt.want[r.Metric] == Regression && r.Stats.Test != nil && r.Stats.Test.Testable && !r.Stats.Test.Significant {
					t.Errorf("%s regressed without being significant", r.Metric)
				}
			}
			for m, v := range tt.want {
				if got[m] != v {
					t.Errorf("%s: %s, want %s", m, got[m], v)
				}
			}
			if n := d.notSignificant(); n != len(tt.beyond) {
				t.Errorf("%d row(s) beyond tolerance but not significant, want %d", n, len(tt.beyond))
			}
			warned := strings.Contains(strings.Join(d.Warnings, "\n"), "too few repetitions")
			if warned != tt.untestable {
				t.Errorf("warned of too few repetitions: %v, want %v (%q)", warned, tt.untestable, d.Warnings)
			}
		})
	}
}

// TestCompareRepeatedOutput checks what a reader and a tool see of a
// comparison with repetitions: n per side, the interval and the p-value.
func TestCompareRepeatedOutput(t *testing.T) {
	base := aggregate(map[string][]any{
		"phase.steady.put.p99":      around(40, -0.05, -0.02, 0, 0.03, 0.05),
		"phase.steady.availability": {1.0, 1.0, 1.0, 1.0, 1.0},
		"run.linearizable":          {true, true, true, true, true},
	})
	next := aggregate(map[string][]any{
		"phase.steady.put.p99":      around(80, 0.02, -0.05, 0.04, -0.01, 0.03),
		"phase.steady.availability": {1.0, 1.0, 1.0, 1.0, 1.0},
		"run.linearizable":          {true, true, false, true, true},
	})
	d, err := CompareSides(FromAggregate(base), FromAggregate(next), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := d.WriteText(&text, false); err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^base: etcd-smoke\.hcl  5 repetitions  etcd 3\.5\.17$`,
		`(?m)^metric +base +new +n +change +interval +p +tolerance +verdict$`,
		`(?m)^phase\.steady\.put\.p99 +40\.0 ms +81\.6 ms +5\+5 +\+41\.6 ms \(\+104\.0%\) +\[\+36\.0 ms, \+44\.0 ms\] +0\.008 +\+50%,5ms +REGRESSION$`,
		`(?m)^run\.linearizable +5/5 true +4/5 true +5\+5 +- +- +- +stays true +REGRESSION$`,
		`96\.8% confidence`,
		`(?m)^2 regressed, 0 improved, 1 within tolerance \(0 of them beyond it but not significant at alpha 0\.05\)`,
	} {
		if !regexp.MustCompile(re).MatchString(text.String()) {
			t.Errorf("output lacks %s:\n%s", re, text.String())
		}
	}
	var js bytes.Buffer
	if err := d.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Alpha float64 `json:"alpha"`
		Rows  []struct {
			Metric string `json:"metric"`
			Stats  *struct {
				BaseN int        `json:"base_n"`
				NewN  int        `json:"new_n"`
				Test  *ShiftTest `json:"test"`
			} `json:"stats"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed.Alpha != 0.05 || len(parsed.Rows) != 3 {
		t.Fatalf("alpha %v, %d rows:\n%s", parsed.Alpha, len(parsed.Rows), js.String())
	}
	r := parsed.Rows[0]
	if r.Metric != "phase.steady.put.p99" || r.Stats == nil || r.Stats.BaseN != 5 || r.Stats.NewN != 5 || r.Stats.Test == nil ||
		r.Stats.Test.CILow == nil || r.Stats.Test.CIHigh == nil || r.Stats.Test.P > 0.008 || !r.Stats.Test.Significant {
		t.Errorf("first row %+v lacks n, interval or p:\n%s", r, js.String())
	}
}

// TestCompareSingleRunsUnchanged: one run a side compares as before, with
// no statistics in the rows.
func TestCompareSingleRunsUnchanged(t *testing.T) {
	one := func(p99 float64) *results.Aggregate {
		return aggregate(map[string][]any{"phase.steady.put.p99": {p99}})
	}
	d, err := CompareSides(FromAggregate(one(10)), FromAggregate(one(30)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Alpha != 0 || len(d.Rows) != 1 || d.Rows[0].Stats != nil || d.Rows[0].Verdict != Regression {
		t.Errorf("single runs: alpha %v, rows %+v", d.Alpha, d.Rows)
	}
}

func TestSoleFromPaths(t *testing.T) {
	values := map[string][]any{
		"phase.steady.workload.w.count":     {1.0},
		"phase.steady.workload.w.put.count": {1.0},
		"phase.warmup.workload.a.count":     {1.0},
		"phase.warmup.workload.b.count":     {1.0},
		"run.workload.w.count":              {1.0},
		"run.workload.r.registered":         {1.0},
	}
	got := soleFromPaths([]string{"warmup", "steady"}, values)
	want := []string{"run.workload.w.", "phase.steady.workload.w."}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("soleFromPaths = %q, want %q", got, want)
	}
}
