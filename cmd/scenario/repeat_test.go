package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coordlab/scenario/internal/results"
)

// repeated writes the results of len(factors) repetitions of compareBase,
// repetition k with every p99 and throughput scaled by factors[k], as
// scenario run --repeat writes them: rep-k/results.json beside the
// aggregate results.json. It returns the directory.
func repeated(t *testing.T, factors ...float64) string {
	t.Helper()
	dir := t.TempDir()
	var runs []*results.Results
	var reps []string
	for k, f := range factors {
		r, err := results.Read(compareBase)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range append([]*results.Phase{&r.Run}, ptrs(r.Phases)...) {
			scale(&p.Total.Latency.P99MS, f)
			scale(&p.Total.Throughput, 1/f)
			for i := range p.Ops {
				scale(&p.Ops[i].Latency.P99MS, f)
				scale(&p.Ops[i].Throughput, 1/f)
			}
		}
		rel := fmt.Sprintf("rep-%d", k+1)
		if err := results.Write(filepath.Join(dir, rel), r); err != nil {
			t.Fatal(err)
		}
		runs, reps = append(runs, r), append(reps, rel)
	}
	if err := results.WriteAggregate(dir, results.NewAggregate(runs, reps)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCompareRepetitions(t *testing.T) {
	// Five runs whose p99 and throughput spread by ±4%, five more of the
	// same, and five 20% slower.
	base := repeated(t, 0.96, 1.01, 0.98, 1.04, 1.0)
	again := repeated(t, 1.02, 0.97, 1.03, 0.99, 1.0)
	slower := repeated(t, 1.2*0.99, 1.2*1.03, 1.2*0.97, 1.2*1.01, 1.2*1.0)
	three := repeated(t, 1.2, 1.25, 1.22)
	tight := []string{"--tolerance", "*.p99=+10%", "--tolerance", "*.throughput=-10%"}
	tests := []cliCase{
		{name: "A/A passes", args: append([]string{"compare", base, again}, tight...), code: exitOK,
			stdout: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^base: .*  5 repetitions  etcd 3\.5\.17$`),
				regexp.MustCompile(`(?m)^no metric moved beyond its tolerance$`),
				regexp.MustCompile(`(?m)^0 regressed, 0 improved, \d+ within tolerance \(0 of them beyond it but not significant at alpha 0\.05\)`)}},
		{name: "a planted 20% p99 regression is flagged with its p-value and interval", args: append([]string{"compare", base, slower}, tight...), code: exitCheckFailed,
			stdout: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^metric +base +new +n +change +interval +p +tolerance +verdict$`),
				regexp.MustCompile(`(?m)^phase\.recovered\.put\.p99 +32\.6 ms +39\.1 ms +5\+5 +\+6\.52 ms \(\+20\.0%\) +\[\+\S+ ms, \+\S+ ms\] +0\.008 +\+10%  +REGRESSION$`),
				regexp.MustCompile(`(?m)^phase\.recovered\.throughput .* 0\.008 +-10% +REGRESSION$`)},
			stderr: []*regexp.Regexp{regexp.MustCompile(`metric\(s\) regressed against the baseline .*results\.json`)}},
		{name: "the default tolerances let 20% pass", args: []string{"compare", base, slower}, code: exitOK},
		{name: "a stricter alpha than 5 a side reach", args: append([]string{"compare", base, slower, "--alpha", "0.005"}, tight...), code: exitCheckFailed,
			stdout: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^warning: \d+ metric\(s\) have too few repetitions for any change to be significant at alpha 0\.005 \(5 in BASE, 5 in NEW: the smallest p-value is 0\.00794`),
				regexp.MustCompile(`(?m)^phase\.recovered\.put\.p99 .* unbounded +0\.008† .* REGRESSION$`),
				regexp.MustCompile(`(?m)^† too few repetitions`)}},
		{name: "three against five", args: append([]string{"compare", base, three}, tight...), code: exitCheckFailed,
			stdout: []*regexp.Regexp{regexp.MustCompile(`(?m)^phase\.recovered\.put\.p99 +\S+ ms +\S+ ms +5\+3 .* 0\.036 +\+10%  +REGRESSION$`)}},
		{name: "one baseline run against repetitions", args: append([]string{"compare", compareBase, slower}, tight...), code: exitCheckFailed,
			stdout: []*regexp.Regexp{regexp.MustCompile(`(?m)^warning: .* too few repetitions .* \(1 in BASE, 5 in NEW: the smallest p-value is 0\.333`)}},
		{name: "a bad alpha", args: []string{"compare", base, again, "--alpha", "1.5"}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`--alpha 1\.5: write a significance level between 0 and 1`)}},
	}
	runCLICases(t, tests)

	t.Run("--json carries n, the interval and p", func(t *testing.T) {
		code, stdout, stderr := run(t, append([]string{"compare", "--json", base, slower}, tight...)...)
		if code != exitCheckFailed {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var diff struct {
			Alpha float64 `json:"alpha"`
			Rows  []struct {
				Metric  string `json:"metric"`
				Verdict string `json:"verdict"`
				Stats   struct {
					BaseN      int   `json:"base_n"`
					NewN       int   `json:"new_n"`
					BaseValues []any `json:"base_values"`
					Test       struct {
						P           float64  `json:"p"`
						CILow       *float64 `json:"ci_low"`
						CIHigh      *float64 `json:"ci_high"`
						Confidence  float64  `json:"confidence"`
						Significant bool     `json:"significant"`
					} `json:"test"`
				} `json:"stats"`
			} `json:"rows"`
		}
		if err := json.Unmarshal([]byte(stdout), &diff); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, stdout)
		}
		found := false
		for _, r := range diff.Rows {
			if r.Metric != "phase.recovered.put.p99" {
				continue
			}
			found = true
			s := r.Stats
			if r.Verdict != "regression" || s.BaseN != 5 || s.NewN != 5 || len(s.BaseValues) != 5 || s.Test.P > 0.008 || !s.Test.Significant ||
				s.Test.CILow == nil || s.Test.CIHigh == nil || *s.Test.CILow <= 0 || s.Test.Confidence < 0.95 {
				t.Errorf("row %+v", r)
			}
		}
		if !found || diff.Alpha != 0.05 {
			t.Errorf("alpha %v, p99 row found %v:\n%s", diff.Alpha, found, stdout)
		}
	})
}

func TestNoiseOfSavedRuns(t *testing.T) {
	five := repeated(t, 0.96, 1.01, 0.98, 1.04, 1.0)
	single := filepath.Join(repeated(t, 1), "rep-1")
	tests := []cliCase{
		{name: "five repetitions", args: []string{"noise", five}, code: exitOK,
			stdout: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^noise: .*results\.json  etcd-leader-failover\.hcl  5 repetitions  etcd 3\.5\.17$`),
				regexp.MustCompile(`(?m)^5 repetitions; alpha 0\.05: an N vs N Mann-Whitney test reaches p = 0\.0079 at best$`),
				regexp.MustCompile(`(?m)^metric +n +median +IQR +min \.\. max +CV +MDE +tolerance +gate$`),
				// p99 32.6 ms x (0.96 .. 1.04): past a shift of 0.05 x 32.6
				// ms only the extreme pair is out of order.
				regexp.MustCompile(`(?m)^phase\.recovered\.put\.p99 +5 +32\.6 ms +\S+ ms +31\.3 ms \.\. 33\.9 ms +\S+% +1\.63 ms \(5%\) +\+50%,5ms +16\.3 ms \(50%\)$`)}},
		{name: "its results.json, as JSON", args: []string{"noise", "--json", "--only", "phase.recovered.put.p99", filepath.Join(five, "results.json")}, code: exitOK,
			stdout: []*regexp.Regexp{regexp.MustCompile(`"metric": "phase\.recovered\.put\.p99"`), regexp.MustCompile(`"mde": 1\.63`), regexp.MustCompile(`"min_p": 0\.0079`)}},
		{name: "a single run has no spread", args: []string{"noise", single}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`is a single run: its noise is not measured`)}},
		{name: "--repeat 1 is refused before anything runs", args: []string{"noise", "../../examples/etcd-smoke.hcl", "--repeat", "1", "--out", t.TempDir()}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`1 repetition\(s\): noise needs at least 2`)}},
		{name: "run --repeat 0", args: []string{"run", "../../examples/etcd-smoke.hcl", "--repeat", "0", "--out", t.TempDir()}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`--repeat 0: write a whole number from 1 to 100`)}},
		{name: "report of an aggregate points at the repetitions", args: []string{"report", five}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`is the aggregate of 5 repetitions, which has no page of its own: .*scenario report .*rep-1`)}},
	}
	runCLICases(t, tests)
}

// TestPlanAndValidateShowRepeat: a file's repeat is visible before a run,
// in plan's text and JSON and in validate's verdict.
func TestPlanAndValidateShowRepeat(t *testing.T) {
	src, err := os.ReadFile("../../examples/etcd-smoke.hcl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "smoke.hcl")
	if err := os.WriteFile(path, append([]byte("repeat = 4\n"), src...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "plan", path)
	if code != 0 || !strings.Contains(out, "Repeated 4 times (repeat = 4), each on a fresh cluster") {
		t.Errorf("plan: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, _ = run(t, "plan", "--json", path)
	var p struct{ Repeat int }
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil || p.Repeat != 4 {
		t.Errorf("plan --json: exit %d, repeat %d (%v)", code, p.Repeat, err)
	}
	code, out, _ = run(t, "validate", path)
	if want := path + ": valid (repeat = 4: 4 runs)\n"; code != 0 || out != want {
		t.Errorf("validate: exit %d, %q, want %q", code, out, want)
	}
	code, out, _ = run(t, "plan", "../../examples/etcd-smoke.hcl")
	if code != 0 || strings.Contains(out, "Repeated") {
		t.Errorf("plan of a file without repeat: exit %d, says Repeated:\n%s", code, out)
	}
}
