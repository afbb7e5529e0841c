package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWithoutRunner builds the command as it builds off Linux (the tag
// scenario_norun stands in for macOS, whose binaries this machine cannot
// run) and runs it: validate works, run checks the file and then refuses
// without touching --out, and reap refuses, each saying why.
func TestWithoutRunner(t *testing.T) {
	// go test puts its own toolchain first on the test's PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build the command with (%v)", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "scenario")
	// -race: the race-built packages of make test's command are in the
	// cache, so this compiles only the command's own package.
	build := exec.CommandContext(t.Context(), goTool, "build", "-race", "-tags", "scenario_norun", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags scenario_norun: %v\n%s", err, out)
	}
	bad := filepath.Join(dir, "bad.hcl")
	if err := os.WriteFile(bad, []byte("cluster \"main\" {\n  store = \"etcd\"\n  nodes = \"three\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	smoke := filepath.Join("..", "..", "examples", "etcd-smoke.hcl")
	out := filepath.Join(dir, "results")
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"validate", []string{"validate", smoke}, exitOK, ""},
		{"run refuses", []string{"run", smoke, "--out", out}, exitInfra, "running a scenario needs Linux"},
		{"run checks the file first", []string{"run", bad, "--out", out}, exitInvalid, "bad.hcl:3:"},
		{"noise refuses", []string{"noise", smoke, "--out", out}, exitInfra, "running a scenario needs Linux"},
		{"reap refuses", []string{"reap", "--kubernetes"}, exitInfra, "scenario reap needs Linux"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), bin, tt.args...)
			stderr, err := cmd.Output()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				stderr = ee.Stderr
			}
			if got := cmd.ProcessState.ExitCode(); got != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", got, tt.code, stderr)
			}
			if !strings.Contains(string(stderr), tt.want) {
				t.Errorf("stderr does not say %q:\n%s", tt.want, stderr)
			}
		})
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--out %s: %v; a run that cannot start must not make it", out, err)
	}
}
