package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/coordlab/scenario/plan"
)

// updateGolden rewrites testdata/*.golden from what the commands print now:
//
//	go test ./cmd/scenario -run Golden -update
var updateGolden = flag.Bool("update", false, "rewrite golden files in testdata/")

// run executes the CLI in-process and returns its exit code and output.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = execute(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPlanGolden(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{name: "etcd-geo", args: []string{"plan", "../../examples/etcd-geo.hcl"}, golden: "etcd-geo.plan.golden"},
		{name: "sweep with skipped points", args: []string{"plan", "../../examples/sweep-timeouts.hcl"}, golden: "sweep-timeouts.plan.golden"},
		{name: "sweep pinned with -var", args: []string{"plan", "../../examples/sweep-timeouts.hcl", "--var", "heartbeat=100ms", "--var", "election=2s"}, golden: "sweep-timeouts-pinned.plan.golden"},
		{name: "every fault kind", args: []string{"plan", "../../dsl/testdata/good/all-faults.hcl"}, golden: "all-faults.plan.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			golden := filepath.Join("testdata", tt.golden)
			if *updateGolden {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/scenario -run Golden -update to create it)", err)
			}
			if stdout != string(want) {
				t.Errorf("plan output differs from %s (go test ./cmd/scenario -run Golden -update, then review the diff):\n%s",
					golden, lineDiff(string(want), stdout))
			}
		})
	}
}

// lineDiff shows the first differing line.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "want: " + wl + "\ngot:  " + gl
		}
	}
	return ""
}

func TestPlanJSON(t *testing.T) {
	code, stdout, stderr := run(t, "plan", "--json", "../../examples/etcd-geo.hcl")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		t.Fatalf("plan --json is not one Plan: %v", err)
	}
	if p.Version != plan.PlanVersion || p.Duration.String() != "1m10s" || len(p.Checks) != 3 {
		t.Fatalf("decoded plan: version %d, duration %s, %d checks", p.Version, p.Duration, len(p.Checks))
	}
	// A sweep prints a list, one plan per point.
	code, stdout, stderr = run(t, "plan", "--json", "../../examples/sweep-timeouts.hcl")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var plans []plan.Plan
	if err := json.Unmarshal([]byte(stdout), &plans); err != nil || len(plans) != 7 {
		t.Fatalf("sweep plan --json: %d plans, %v", len(plans), err)
	}
}

// location matches how a diagnostic names its place in a file: file:line:col,
// or HCL's "on file line N".
func location(file string, line int) *regexp.Regexp {
	f := regexp.QuoteMeta(file)
	l := regexp.QuoteMeta(itoa(line))
	return regexp.MustCompile(`(` + f + `:` + l + `:\d+|on ` + f + ` line ` + l + `\b)`)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	unformatted := filepath.Join(dir, "unformatted.hcl")
	if err := os.WriteFile(unformatted, []byte("cluster \"main\" {\nstore=\"etcd\"\n  nodes    = 3\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.hcl")
	if err := os.WriteFile(broken, []byte("cluster \"main\" {\n  store = \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const bad = "../../dsl/testdata/bad/many-errors.hcl"
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // substrings
		stderr     []*regexp.Regexp
		noStderr   bool
		unmodified string // a file the command must leave alone
	}{
		{name: "version", args: []string{"version"}, code: exitOK, stdout: []string{"scenario " + version}, noStderr: true},
		{name: "validate a good file", args: []string{"validate", "../../examples/etcd-geo.hcl"}, code: exitOK,
			stdout: []string{"../../examples/etcd-geo.hcl: valid"}, noStderr: true},
		{name: "validate a sweep", args: []string{"validate", "../../examples/sweep-timeouts.hcl"}, code: exitOK,
			stdout: []string{"valid (7 sweep points, 2 skipped as invalid)"}, noStderr: true},
		{name: "validate every example", args: append([]string{"validate"}, examples(t)...), code: exitOK, noStderr: true},
		{name: "validate a bad file", args: []string{"validate", bad}, code: exitInvalid,
			stderr: []*regexp.Regexp{
				location(bad, 11), location(bad, 16), location(bad, 17), location(bad, 21), location(bad, 23),
				regexp.MustCompile(`Did you mean "heartbeat_interval"\?`),
				regexp.MustCompile(`Unknown fault kind`),
			}},
		{name: "validate good and bad", args: []string{"validate", "../../examples/etcd-smoke.hcl", bad}, code: exitInvalid,
			stdout: []string{"etcd-smoke.hcl: valid"},
			stderr: []*regexp.Regexp{location(bad, 23), regexp.MustCompile(`1 of 2 file\(s\) invalid`)}},
		{name: "validate with an undeclared -var", args: []string{"validate", "../../examples/etcd-geo.hcl", "--var", "electon_timeout=2s"}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`Did you mean "election_timeout"\?`)}},
		{name: "validate with a one-dash -var", args: []string{"validate", "../../examples/etcd-geo.hcl", "-var", "election_timeout=2s", "-var=heartbeat_interval=200ms"}, code: exitOK,
			stdout: []string{"etcd-geo.hcl: valid"}, noStderr: true},
		{name: "validate a missing file", args: []string{"validate", filepath.Join(dir, "nope.hcl")}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`read scenario: open .*nope\.hcl: no such file`)}},
		{name: "plan a bad file", args: []string{"plan", bad}, code: exitInvalid,
			stderr: []*regexp.Regexp{location(bad, 21)}},
		{name: "fmt --check a formatted file", args: []string{"fmt", "--check", "../../examples/etcd-geo.hcl"}, code: exitOK},
		{name: "fmt --check an unformatted file", args: []string{"fmt", "--check", unformatted}, code: exitCheckFailed,
			stdout: []string{unformatted}, stderr: []*regexp.Regexp{regexp.MustCompile(`need formatting`)}, unmodified: unformatted},
		{name: "fmt --check a file with a syntax error", args: []string{"fmt", "--check", broken}, code: exitInvalid,
			stderr: []*regexp.Regexp{location(broken, 2)}, unmodified: broken},
		{name: "run with a negative busy-poll window", args: []string{"run", "--busy-poll", "-1ms", "../../examples/etcd-smoke.hcl"}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`--busy-poll -1ms: write a duration from 0 \(sleep, the default\) to 10ms, such as 100us`)}},
		{name: "run with too long a busy-poll window", args: []string{"run", "--busy-poll", "1s", "../../examples/etcd-smoke.hcl"}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`--busy-poll 1s: write a duration`)}},
		{name: "run with a busy-poll window that is no duration", args: []string{"run", "--busy-poll", "100", "../../examples/etcd-smoke.hcl"}, code: exitInvalid,
			stderr: []*regexp.Regexp{regexp.MustCompile(`busy-poll`)}},
		{name: "unknown command", args: []string{"frobnicate"}, code: exitInvalid},
		{name: "validate without a file", args: []string{"validate"}, code: exitInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []byte
			if tt.unmodified != "" {
				before, _ = os.ReadFile(tt.unmodified)
			}
			code, stdout, stderr := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, re := range tt.stderr {
				if !re.MatchString(stderr) {
					t.Errorf("stderr does not match %s:\n%s", re, stderr)
				}
			}
			if tt.noStderr && stderr != "" {
				t.Errorf("unexpected stderr:\n%s", stderr)
			}
			if tt.unmodified != "" {
				if after, _ := os.ReadFile(tt.unmodified); !bytes.Equal(before, after) {
					t.Errorf("%s was modified", tt.unmodified)
				}
			}
		})
	}
}

func TestFmtRewrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "messy.hcl")
	if err := os.WriteFile(path, []byte("cluster \"main\" {\nstore=\"etcd\"\n  nodes    = 3\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, "fmt", path); code != exitOK {
		t.Fatalf("fmt: exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(path)
	if want := "cluster \"main\" {\n  store = \"etcd\"\n  nodes = 3\n}\n"; string(got) != want {
		t.Fatalf("formatted:\n%s\nwant:\n%s", got, want)
	}
	if code, _, _ := run(t, "fmt", "--check", path); code != exitOK {
		t.Fatalf("fmt --check after fmt: exit %d", code)
	}
}

func examples(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("../../examples/*.hcl")
	scenarios, serr := filepath.Glob("../../scenarios/*.hcl")
	paths, err = append(paths, scenarios...), errors.Join(err, serr)
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	return paths
}
