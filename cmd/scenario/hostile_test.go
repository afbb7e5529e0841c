package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHostileCommandLines holds the reproductions of issue 15 that need
// no store: each refused with exit 2 and a reason, before anything starts.
func TestHostileCommandLines(t *testing.T) {
	dir := t.TempDir()
	scenario := writeScenario(t, "s.hcl", smokeScenario(passingCheck))
	afile := filepath.Join(dir, "afile")
	if err := os.WriteFile(afile, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	earlier := filepath.Join(dir, "earlier")
	if err := os.MkdirAll(earlier, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(earlier, "results.json"), []byte(`{"schema_version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	escape := writeScenario(t, "esc.hcl", strings.Replace(smokeScenario(passingCheck), `store = "etcd"`, `store = "etcd"`+"\n  version = var.v", 1)+"variable \"v\" {\n  default = \"3.5.17\"\n}\n")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr *regexp.Regexp
		check  func(t *testing.T)
	}{
		{name: "run --out names a file", args: []string{"run", scenario, "--out", afile}, code: exitInvalid,
			stderr: regexp.MustCompile(`--out .*afile: is a regular file; name a directory`),
			check: func(t *testing.T) {
				if b, _ := os.ReadFile(afile); string(b) != "keep me" {
					t.Errorf("afile now holds %q", b)
				}
			}},
		{name: "run --out holds an earlier run", args: []string{"run", scenario, "--out", earlier}, code: exitInvalid,
			stderr: regexp.MustCompile(`holds the results of an earlier run .*pass --overwrite`)},
		{name: "run --provider bogus", args: []string{"run", scenario, "--provider", "bogus"}, code: exitInvalid,
			stderr: regexp.MustCompile(`--provider "bogus": unknown provider; write one of process, docker, kubernetes`)},
		{name: "run --network bogus", args: []string{"run", scenario, "--network", "bogus"}, code: exitInvalid,
			stderr: regexp.MustCompile(`--network "bogus": write shaper, shaper-all or kernel`)},
		{name: "stores bogus", args: []string{"stores", "bogus"}, code: exitInvalid,
			stderr: regexp.MustCompile(`unknown command "bogus" for "scenario stores"; write one of: install, list`)},
		{name: "images bogus", args: []string{"images", "bogus"}, code: exitInvalid,
			stderr: regexp.MustCompile(`unknown command "bogus" for "scenario images"; write one of: agent, build, list`)},
		{name: "stores install of a short version", args: []string{"stores", "install", "etcd@3.5", "--cache-dir", cache}, code: exitInvalid,
			stderr: regexp.MustCompile(`etcd version "3.5": want a release like 3.5.17`)},
		{name: "stores install of a path", args: []string{"stores", "install", "etcd@../../../tmp/x", "--cache-dir", cache}, code: exitInvalid,
			stderr: regexp.MustCompile(`want a release like`)},
		{name: "stores install of a shell command", args: []string{"stores", "install", "etcd@latest; rm -rf /", "--cache-dir", cache}, code: exitInvalid,
			stderr: regexp.MustCompile(`want a release like`)},
		{name: "stores install checks every argument first", args: []string{"stores", "install", "etcd", "consul@2", "--cache-dir", cache}, code: exitInvalid,
			stderr: regexp.MustCompile(`consul version "2"`)},
		{name: "stores install --benchmark of zookeeper", args: []string{"stores", "install", "etcd", "zookeeper", "--benchmark", "--cache-dir", cache}, code: exitInvalid,
			stderr: regexp.MustCompile(`--benchmark: zookeeper has no benchmark tool to build`)},
		{name: "an escape sequence in a -var is shown escaped", args: []string{"validate", escape, "--var", "v=\x1b[31mred"}, code: exitInvalid,
			stderr: regexp.MustCompile(`\\x1b\[31mred`)},
		{name: "an escape sequence in a file name is shown escaped", args: []string{"validate", filepath.Join(dir, "\x1b[2J.hcl")}, code: exitInvalid,
			stderr: regexp.MustCompile(`no such file`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, stderr)
			}
			if !tt.stderr.MatchString(stderr) {
				t.Errorf("stderr does not match %s:\n%s", tt.stderr, stderr)
			}
			if strings.Contains(stderr, "\x1b") {
				t.Errorf("raw escape sequence in the output:\n%q", stderr)
			}
			if tt.check != nil {
				tt.check(t)
			}
		})
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("refused installs left %d entries in the cache", len(entries))
	}
}

// TestHelpTexts checks what help shows: run --help once showed
// "--provider scenario images build", pflag's backquote rule at work.
func TestHelpTexts(t *testing.T) {
	code, stdout, _ := run(t, "run", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if !regexp.MustCompile(`--provider string +run every cluster`).MatchString(stdout) {
		t.Errorf("run --help shows --provider as:\n%s", stdout)
	}
	if !strings.Contains(stdout, "--overwrite") {
		t.Errorf("run --help does not show --overwrite")
	}
}

// TestStartupFailureKeepsTheLog starts a "store" that exits at once. The
// error must name the failing node, the startup phase, show the log's tail
// and point at a copy of the log that still exists after teardown (it
// pointed into the removed workspace).
func TestStartupFailureKeepsTheLog(t *testing.T) {
	if _, err := os.Stat("/bin/true"); err != nil {
		t.Skip("no /bin/true")
	}
	out, state := filepath.Join(t.TempDir(), "out"), t.TempDir()
	src := strings.Replace(smokeScenario(passingCheck), `nodes = 3`, "nodes = 3\n  binary = \"/bin/true\"", 1)
	code, _, stderr := run(t, "run", writeScenario(t, "true.hcl", src), "--out", out, "--state-dir", state)
	if code != exitInfra {
		t.Fatalf("exit %d, want %d:\n%s", code, exitInfra, stderr)
	}
	m := regexp.MustCompile(`node (n\d) \(startup\).*\n\s+log: (\S+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no node, phase and log in:\n%s", stderr)
	}
	if _, err := os.Stat(m[2]); err != nil {
		t.Errorf("the log the error names is gone: %v", err)
	}
	if !strings.Contains(stderr, "--- scenario: starting node "+m[1]) {
		t.Errorf("no log tail in:\n%s", stderr)
	}
	// The tail quotes the command line, data directory included; only a
	// pointer to a log in the workspace would mislead.
	if strings.Contains(stderr, "(log "+state) {
		t.Errorf("the error points at a log in the removed workspace %s:\n%s", state, stderr)
	}
	assertNothingLeft(t, state)
}
