package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coordlab/scenario/compare"
	"github.com/coordlab/scenario/internal/results"
)

// compareBase is a real run of scenarios/etcd-leader-failover.hcl (phases
// baseline, failover, recovered; one workload "writers" doing put and get),
// with its per-second series and resource samples dropped.
const compareBase = "testdata/compare/base.json"

// planted writes a copy of compareBase changed by change and returns its
// results.json.
func planted(t *testing.T, change func(r *results.Results)) string {
	t.Helper()
	r, err := results.Read(compareBase)
	if err != nil {
		t.Fatal(err)
	}
	change(r)
	dir := t.TempDir()
	if err := results.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, results.FileName)
}

func phaseOf(t *testing.T, r *results.Results, name string) *results.Phase {
	t.Helper()
	p, ok := r.Phase(name)
	if !ok {
		t.Fatalf("%s has no phase %q", compareBase, name)
	}
	return p
}

func scale(p *float64, f float64) { *p *= f }

func TestCompare(t *testing.T) {
	// A p99 50% slower, availability one point lower and a failover twice
	// as slow: each must be named on a REGRESSION line.
	regressed := planted(t, func(r *results.Results) {
		scale(&phaseOf(t, r, "recovered").Ops[0].Latency.P99MS, 2)
		phaseOf(t, r, "recovered").Availability = results.Ptr(0.99)
		for _, p := range []*results.Phase{phaseOf(t, r, "failover"), &r.Run} {
			scale(p.FailoverTimeMS, 2)
		}
	})
	// A rerun with noise inside the tolerances: every p99 3% slower.
	noisy := planted(t, func(r *results.Results) {
		for _, p := range append([]*results.Phase{&r.Run}, ptrs(r.Phases)...) {
			scale(&p.Total.Latency.P99MS, 1.03)
			for i := range p.Ops {
				scale(&p.Ops[i].Latency.P99MS, 1.03)
			}
		}
	})
	// The checker gave up in the new run: run.linearizable is missing.
	unchecked := planted(t, func(r *results.Results) { r.Correctness.Linearizable = nil })
	otherStore := planted(t, func(r *results.Results) { r.Backend["store"] = "etcd 3.6.16" })

	dir := t.TempDir()
	notJSON := filepath.Join(dir, "not.json")
	notResults := filepath.Join(dir, "plan.json")
	newer := filepath.Join(dir, "newer.json")
	for path, content := range map[string]string{
		notJSON:    "results: yes\n",
		notResults: `{"version": 1, "phases": []}`,
		newer:      `{"schema_version": 99}`,
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	regression := func(metric string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(metric) + ` .*REGRESSION$`)
	}
	tests := []cliCase{
		{name: "planted regressions", args: []string{"compare", compareBase, regressed}, code: exitCheckFailed,
			stdout: []*regexp.Regexp{
				regexp.MustCompile(`(?m)^metric +base +new +change +tolerance +verdict$`),
				regexp.MustCompile(`(?m)^phase\.recovered\.put\.p99 +32\.6 ms +65\.2 ms +\+32\.6 ms \(\+100\.0%\) +\+50%,5ms +REGRESSION$`),
				regexp.MustCompile(`(?m)^phase\.recovered\.availability +100\.00% +99\.00% +-1\.00pt \(-1\.0%\) +-0\.5pt +REGRESSION$`),
				regexp.MustCompile(`(?m)^phase\.failover\.failover_time +1\.10 s +2\.21 s +\+1\.10 s \(\+100\.0%\) +\+60%,250ms +REGRESSION$`),
				regression("run.failover_time"),
				regexp.MustCompile(`(?m)^4 regressed, 0 improved, \d+ within tolerance`),
			},
			stderr: []*regexp.Regexp{regexp.MustCompile(`4 metric\(s\) regressed against the baseline testdata/compare/base\.json`)},
			absent: []*regexp.Regexp{regression("phase.recovered.get.p99"), regexp.MustCompile(`workload\.writers`)}},
		{name: "noise within the tolerances", args: []string{"compare", compareBase, noisy}, code: exitOK,
			stdout: []*regexp.Regexp{regexp.MustCompile(`(?m)^no metric moved beyond its tolerance$`), regexp.MustCompile(`(?m)^0 regressed`)}},
		{name: "noise, every row listed", args: []string{"compare", "--all", compareBase, noisy}, code: exitOK,
			stdout: []*regexp.Regexp{regexp.MustCompile(`(?m)^phase\.recovered\.put\.p99 +32\.6 ms +33\.6 ms +\+979 µs \(\+3\.0%\) +\+50%,5ms +ok$`)}},
		{name: "a run against itself", args: []string{"compare", compareBase, compareBase}, code: exitOK},
		{name: "results directories", args: []string{"compare", "testdata/compare/../compare/base.json", filepath.Dir(regressed)}, code: exitCheckFailed,
			stdout: []*regexp.Regexp{regression("phase.recovered.put.p99")}},
		{name: "a looser tolerance, comma and all", args: []string{"compare", compareBase, regressed,
			"--tolerance", "*.put.p99=+120%,1ms", "--tolerance", "*.availability=ignore", "--tolerance", "*.failover_time=+150%,100ms"}, code: exitOK},
		{name: "only", args: []string{"compare", compareBase, regressed, "--only", "phase.recovered.put.*"}, code: exitCheckFailed,
			stdout: []*regexp.Regexp{regression("phase.recovered.put.p99")},
			absent: []*regexp.Regexp{regexp.MustCompile(`availability|failover_time`)}},
		{name: "missing from NEW is a warning", args: []string{"compare", compareBase, unchecked}, code: exitOK,
			stdout: []*regexp.Regexp{regexp.MustCompile(`warning: 1 metric\(s\) missing from NEW`), regexp.MustCompile(`(?m)^  run\.linearizable  base true$`)}},
		{name: "missing from NEW with --strict", args: []string{"compare", "--strict", compareBase, unchecked}, code: exitCheckFailed,
			stderr: []*regexp.Regexp{regexp.MustCompile(`1 metric\(s\) of the baseline are missing from .*results\.json \(--strict\)`)}},
		{name: "another store version", args: []string{"compare", compareBase, otherStore}, code: exitOK,
			stdout: []*regexp.Regexp{regexp.MustCompile(`(?m)^warning: different stores: base ran etcd 3\.5\.17, new ran etcd 3\.6\.16$`)}},
		{name: "not JSON", args: []string{"compare", compareBase, notJSON}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`Error: read results .*not\.json: invalid character`)}},
		{name: "not a results file", args: []string{"compare", notResults, compareBase}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`no schema_version; is this a results\.json\?`)}},
		{name: "a newer schema", args: []string{"compare", compareBase, newer}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`schema version 99 is newer`)}},
		{name: "no such file", args: []string{"compare", compareBase, filepath.Join(dir, "nope.json")}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`nope\.json: no such file`)}},
		{name: "a bad tolerance", args: []string{"compare", compareBase, noisy, "--tolerance", "*.p99=fast"}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`Error: --tolerance \*\.p99=fast: "fast" is not an amount: want a percentage`)}},
		{name: "a tolerance without a pattern", args: []string{"compare", compareBase, noisy, "--tolerance", "+10%"}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`Error: --tolerance \+10%: want PATTERN=SPEC`)}},
		{name: "only matching nothing", args: []string{"compare", compareBase, noisy, "--only", "phase.steady.*"}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`--only "phase\.steady\.\*" matches no metric of either run`)}},
		{name: "one file", args: []string{"compare", compareBase}, code: exitInvalid},
	}
	runCLICases(t, tests)
}

func TestCompareJSON(t *testing.T) {
	regressed := planted(t, func(r *results.Results) {
		scale(&phaseOf(t, r, "recovered").Ops[0].Latency.P99MS, 2)
		r.Checks[0].Passed = false
	})
	code, stdout, stderr := run(t, "compare", "--json", compareBase, regressed)
	if code != exitCheckFailed {
		t.Fatalf("exit %d, want %d: %s", code, exitCheckFailed, stderr)
	}
	var diff struct {
		Rows []struct {
			Metric  string `json:"metric"`
			Verdict string `json:"verdict"`
		} `json:"rows"`
		Summary   map[string]int `json:"summary"`
		Regressed bool           `json:"regressed"`
	}
	if err := json.Unmarshal([]byte(stdout), &diff); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, stdout)
	}
	var got []string
	for _, r := range diff.Rows {
		if r.Verdict == "regression" {
			got = append(got, r.Metric)
		}
	}
	want := "phase.recovered.put.p99 check." + firstCheck(t)
	if strings.Join(got, " ") != want || !diff.Regressed || diff.Summary["ok"] == 0 {
		t.Errorf("regressions %q (want %q), regressed %v, summary %v", got, want, diff.Regressed, diff.Summary)
	}
}

// firstCheck is the name of compareBase's first check.
func firstCheck(t *testing.T) string {
	r, err := results.Read(compareBase)
	if err != nil || len(r.Checks) == 0 {
		t.Fatalf("%s: %v", compareBase, err)
	}
	return r.Checks[0].Name
}

func ptrs(phases []results.Phase) []*results.Phase {
	out := make([]*results.Phase, len(phases))
	for i := range phases {
		out[i] = &phases[i]
	}
	return out
}

// TestCompareHelpListsDefaults keeps --help in step with the default rules.
func TestCompareHelpListsDefaults(t *testing.T) {
	code, stdout, stderr := run(t, "compare", "--help")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, r := range compare.DefaultRules() {
		line := regexp.MustCompile(`(?m)^  .*` + regexp.QuoteMeta(r.Pattern) + `( .*)?$`).FindString(stdout)
		if line == "" {
			t.Errorf("--help does not list %s", r.Pattern)
			continue
		}
		if r.Pattern == "*.linearizable" || strings.HasPrefix(r.Pattern, "check.") {
			continue // judged by their good value, not by an amount
		}
		if spec := r.Tolerance.String(); !strings.Contains(line+" ", " "+spec+" ") {
			t.Errorf("--help gives %s a tolerance other than %s:\n%s", r.Pattern, spec, line)
		}
	}
}

// cliCase is one command line and what it must print and exit with.
type cliCase struct {
	name   string
	args   []string
	code   int
	stdout []*regexp.Regexp
	stderr []*regexp.Regexp
	absent []*regexp.Regexp // must not match stdout
}

// runCLICases runs each case in-process as a subtest.
func runCLICases(t *testing.T, tests []cliCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, re := range tt.stdout {
				if !re.MatchString(stdout) {
					t.Errorf("stdout does not match %s:\n%s", re, stdout)
				}
			}
			for _, re := range tt.absent {
				if re.MatchString(stdout) {
					t.Errorf("stdout matches %s:\n%s", re, stdout)
				}
			}
			for _, re := range tt.stderr {
				if !re.MatchString(stderr) {
					t.Errorf("stderr does not match %s:\n%s", re, stderr)
				}
			}
		})
	}
}
