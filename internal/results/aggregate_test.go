package results

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestAggregateRoundTrip gathers three repetitions, writes the aggregate
// and reads it back: every value per repetition, nulls where a repetition
// lacks a metric, medians of the numbers, check statuses.
func TestAggregateRoundTrip(t *testing.T) {
	runs := []*Results{sample(), sample(), sample()}
	for i, r := range runs {
		r.RunID = "run" + string(rune('1'+i))
		r.Phases[0].Total.Count = int64(100 * (i + 1)) // 100, 200, 300
	}
	runs[1].Checks[1].Passed = true
	runs[2].Correctness.Linearizable = nil // the checker gave up
	a := NewAggregate(runs, []string{"rep-1", "rep-2", "rep-3"})

	dir := t.TempDir()
	if err := WriteAggregate(dir, a); err != nil {
		t.Fatal(err)
	}
	r, back, err := ReadAny(filepath.Join(dir, FileName))
	if err != nil || r != nil || back == nil {
		t.Fatalf("ReadAny: %v, %v, %v", r, back, err)
	}
	if !reflect.DeepEqual(a, back) {
		t.Errorf("aggregate changed in the round trip:\n%+v\n%+v", a, back)
	}
	tests := []struct {
		metric string
		values []any
		median *float64
	}{
		{metric: "phase.steady.count", values: []any{100.0, 200.0, 300.0}, median: f64(200)},
		{metric: "phase.failover.availability", values: []any{0.98, 0.98, 0.98}, median: f64(0.98)},
		{metric: "run.linearizable", values: []any{false, false, nil}},
		{metric: "check.fast failover", values: []any{StatusFail, StatusPass, StatusFail}},
		{metric: "check.ok", values: []any{StatusPass, StatusPass, StatusPass}},
	}
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			m := back.Metrics[tt.metric]
			if m == nil {
				t.Fatalf("no %s in the aggregate", tt.metric)
			}
			if !reflect.DeepEqual(m.Values, tt.values) || !sameOpt(m.Median, tt.median) {
				t.Errorf("%v median %v, want %v median %v", m.Values, m.Median, tt.values, tt.median)
			}
		})
	}
	wantReps := []Repetition{
		{Dir: "rep-1", RunID: "run1", Failed: []string{"fast failover"}},
		{Dir: "rep-2", RunID: "run2", Passed: true},
		{Dir: "rep-3", RunID: "run3", Failed: []string{"fast failover"}},
	}
	if !reflect.DeepEqual(back.Repetitions, wantReps) {
		t.Errorf("repetitions %+v, want %+v", back.Repetitions, wantReps)
	}
	if back.Kind != KindRepetitions || !reflect.DeepEqual(back.Phases, []string{"steady", "failover"}) || back.Scenario != "sample" {
		t.Errorf("header: kind %q phases %q scenario %q", back.Kind, back.Phases, back.Scenario)
	}
}

func TestReadAny(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if err := Write(run, sample()); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name      string
		path      string
		aggregate bool
		err       string
	}{
		{name: "a run", path: filepath.Join(run, FileName)},
		{name: "an aggregate", aggregate: true, path: write("agg.json",
			`{"schema_version": 1, "kind": "repetitions", "repetitions": [{"dir": "rep-1"}], "metrics": {"run.count": {"values": [3]}}}`)},
		{name: "an unknown kind", path: write("kind.json", `{"schema_version": 1, "kind": "bogus"}`), err: `kind "bogus" is not one this build knows`},
		{name: "values short of the repetitions", path: write("short.json",
			`{"schema_version": 1, "kind": "repetitions", "repetitions": [{"dir": "rep-1"}, {"dir": "rep-2"}], "metrics": {"run.count": {"values": [3]}}}`),
			err: "does not hold one value per repetition"},
		{name: "no repetitions", path: write("none.json", `{"schema_version": 1, "kind": "repetitions", "metrics": {}}`), err: "no repetitions"},
		{name: "a newer aggregate", path: write("newer.json", `{"schema_version": 99, "kind": "repetitions"}`), err: "newer than this build"},
		{name: "a run's file refused as Read refuses it", path: write("plan.json", `{"version": 1}`), err: "is this a results.json?"},
		{name: "missing", path: filepath.Join(dir, "nope.json"), err: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, a, err := ReadAny(tt.path)
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %v, want %q", err, tt.err)
				}
			case err != nil:
				t.Error(err)
			case tt.aggregate != (a != nil) || tt.aggregate == (r != nil):
				t.Errorf("run %v aggregate %v, want an aggregate: %v", r != nil, a != nil, tt.aggregate)
			}
		})
	}
}
