package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/internal/kubelocal/kubetest"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/container"
)

// asCLIEnv makes the test binary act as the scenario command, so that the
// SIGINT test can signal a real process without building another binary.
const asCLIEnv = "SCENARIO_TEST_AS_CLI"

// cliCommand is the scenario command line args in a process of its own:
// this test binary, acting as the command.
func cliCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCLIEnv+"=1")
	return cmd
}

func TestMain(m *testing.M) {
	if os.Getenv(asCLIEnv) == "1" {
		main()
		return
	}
	// A local Kubernetes, if a test started one, goes at the end.
	os.Exit(kubetest.Main(m))
}

// smokeScenario is a short real run: two phases of a few seconds against a
// 3-node etcd, with extra check blocks appended.
func smokeScenario(checks string) string {
	return `
cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "kv" {
  mix      = { put = 0.5, get = 0.5 }
  keyspace = 100
  clients  = 4
}

phase "warmup" {
  duration = "2s"
  load "kv" {
    clients = ramp(1, 4)
  }
}

phase "steady" {
  duration = "4s"
  load "kv" {}
}
` + checks
}

const passingCheck = `
check "available" {
  condition = phase.steady.availability >= 0.99
}
`

const failingCheck = `
check "impossible latency" {
  condition = phase.steady.put.p99 < ms(0.001)
  message   = "nothing commits in a microsecond"
}
`

func writeScenario(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped in -short mode: starts a real 3-node etcd (built from its Go module on first use, about two minutes)")
	}
}

// assertNothingLeft fails when the state directory still holds a run, or a
// process still runs with the state directory in its command line.
func assertNothingLeft(t *testing.T, stateDir string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(stateDir, "runs"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind in the state directory: %s", e.Name())
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(stateDir)) {
			t.Errorf("process left running: %s: %s", p, bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
}

func TestRunIntegration(t *testing.T) {
	skipShort(t)
	state := t.TempDir()

	t.Run("examples/etcd-smoke.hcl passes and writes every output", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := run(t, "run", "../../examples/etcd-smoke.hcl", "--out", out, "--state-dir", state)
		if code != exitOK {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		for _, want := range []string{"steady", "PASS   available", "PASS   put latency", "correctness: linearizable yes, lost writes 0", "results: " + out} {
			if !strings.Contains(stdout, want) {
				t.Errorf("summary lacks %q:\n%s", want, stdout)
			}
		}
		var res struct {
			SchemaVersion int `json:"schema_version"`
			Phases        []struct {
				Name string `json:"name"`
			} `json:"phases"`
			Checks []struct {
				Passed bool `json:"passed"`
			} `json:"checks"`
		}
		b, err := os.ReadFile(filepath.Join(out, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("results.json: %v", err)
		}
		if res.SchemaVersion < 1 || len(res.Checks) != 2 || !res.Checks[0].Passed || !res.Checks[1].Passed {
			t.Errorf("results.json: schema %d, checks %+v", res.SchemaVersion, res.Checks)
		}
		for _, f := range []string{"junit.xml", "report.html", "hlog/kv.put.hlog", "hlog/kv.get.hlog", "logs/n1.log", "logs/n2.log", "logs/n3.log"} {
			if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
				t.Errorf("output %s missing or empty: %v", f, err)
			}
		}
		assertNothingLeft(t, state)
	})

	t.Run("a failing check exits 1 with a JUnit failure", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		code, stdout, stderr := run(t, "run", writeScenario(t, "fail.hcl", smokeScenario(passingCheck+failingCheck)), "--out", out, "--state-dir", state)
		if code != exitCheckFailed {
			t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "FAIL   impossible latency") || !strings.Contains(stdout, "nothing commits in a microsecond") {
			t.Errorf("summary lacks the failed check:\n%s", stdout)
		}
		junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(junit), "<failure"); n != 1 {
			t.Errorf("junit.xml has %d failures, want 1:\n%s", n, junit)
		}
		assertNothingLeft(t, state)
	})

	t.Run("--repeat runs each repetition on a fresh cluster beside an aggregate", func(t *testing.T) {
		// The file asks for 3; the flag wins. One check fails in every
		// repetition: the exit is 1, naming each.
		out := filepath.Join(t.TempDir(), "out")
		path := writeScenario(t, "repeat.hcl", "repeat = 3\n"+smokeScenario(passingCheck+failingCheck))
		code, stdout, stderr := run(t, "run", path, "--repeat", "2", "--out", out, "--state-dir", state)
		if code != exitCheckFailed {
			t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		for _, want := range []string{"== repetition 1/2", "== repetition 2/2", "== 2 repetitions side by side", "aggregate of 2 repetitions: " + filepath.Join(out, "results.json")} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
		}
		if want := "2 of 2 run(s) failed a check: rep-1 (impossible latency); rep-2 (impossible latency)"; !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
		for _, f := range []string{"results.json", "comparison.txt", "junit.xml", "rep-1/results.json", "rep-1/report.html", "rep-2/results.json", "rep-2/junit.xml"} {
			if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
				t.Errorf("output %s missing or empty: %v", f, err)
			}
		}
		if junit, err := os.ReadFile(filepath.Join(out, "junit.xml")); err != nil || strings.Count(string(junit), "<failure") != 2 || !strings.Contains(string(junit), "(rep-2)") {
			t.Errorf("the repetitions' junit.xml should hold both repetitions' failed check (%v):\n%s", err, junit)
		}
		var agg struct {
			Kind        string `json:"kind"`
			Repetitions []struct {
				RunID string `json:"run_id"`
			} `json:"repetitions"`
			Metrics map[string]struct {
				Values []any    `json:"values"`
				Median *float64 `json:"median"`
			} `json:"metrics"`
		}
		b, err := os.ReadFile(filepath.Join(out, "results.json"))
		if err == nil {
			err = json.Unmarshal(b, &agg)
		}
		if err != nil {
			t.Fatal(err)
		}
		p99 := agg.Metrics["phase.steady.put.p99"]
		if agg.Kind != "repetitions" || len(agg.Repetitions) != 2 || agg.Repetitions[0].RunID == agg.Repetitions[1].RunID ||
			len(p99.Values) != 2 || p99.Median == nil {
			t.Errorf("aggregate: kind %q, %d repetitions, p99 %+v", agg.Kind, len(agg.Repetitions), p99)
		}
		// Two against two cannot be significant: compare says so and judges
		// by tolerance; noise shows the spread and no MDE.
		code, stdout, stderr = run(t, "compare", out, out)
		if code != exitOK || !strings.Contains(stdout, "too few repetitions") {
			t.Errorf("compare of the aggregate with itself: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		code, stdout, stderr = run(t, "noise", out)
		if code != exitOK || !strings.Contains(stdout, "phase.steady.put.p99") || !strings.Contains(stdout, "repeat at least 4 times") {
			t.Errorf("noise of the aggregate: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		assertNothingLeft(t, state)
	})

	t.Run("cancelled mid-run exits 130 and cleans up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Cancel once the timeline is playing: the progress line names the
		// phase.
		stderr := &watchWriter{pattern: "[steady]", hit: cancel}
		var stdout bytes.Buffer
		path := writeScenario(t, "long.hcl", strings.Replace(smokeScenario(passingCheck), `"4s"`, `"60s"`, 1))
		start := time.Now()
		code := execute(ctx, []string{"run", path, "--out", t.TempDir(), "--state-dir", state}, &stdout, stderr)
		if code != exitInterrupted {
			t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
		}
		if d := time.Since(start); d > 50*time.Second {
			t.Errorf("cancelled run took %v: it did not stop early", d)
		}
		assertNothingLeft(t, state)
	})

	t.Run("SIGINT to the process exits 130 and cleans up", func(t *testing.T) {
		cmd, stdout, stderr := startLongRun(t, state)
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
			t.Fatalf("exit %d (%v), want 130\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
		}
		if !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("stderr does not say the run was interrupted:\n%s", stderr.String())
		}
		assertNothingLeft(t, state)
	})

	t.Run("a SIGKILLed run is cleaned up by the next", func(t *testing.T) {
		cmd, _, _ := startLongRun(t, state)
		cmd.Process.Kill()
		cmd.Wait()

		code, stdout, errOut := run(t, "run", writeScenario(t, "pass.hcl", smokeScenario(passingCheck)), "--out", t.TempDir(), "--state-dir", state)
		if code != exitOK {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, errOut)
		}
		if !strings.Contains(errOut, "cleaned up 1 run(s) left behind") {
			t.Errorf("the next run did not report cleaning up the killed one:\n%s", errOut)
		}
		assertNothingLeft(t, state)
	})

	t.Run("a SIGKILLed docker run's containers are removed by the next", func(t *testing.T) {
		// Check says which is missing: the engine, or an image.
		if err := images.Check(context.Background(), images.BaseImage, images.Default(plan.StoreEtcd, "")); err != nil {
			t.Skipf("needs a Docker engine and etcd's image: %v", err)
		}
		cmd, _, _ := startLongRun(t, state, "--provider", "docker")
		owner := strconv.Itoa(cmd.Process.Pid)
		cmd.Process.Kill()
		cmd.Wait()
		// 3 store and 3 sandbox containers, 3 volumes, 1 network.
		if left := ownedBy(t, owner); len(left) != 10 {
			t.Errorf("the killed run left %d containers, volumes and networks, want 10: %v", len(left), left)
		}

		code, stdout, errOut := run(t, "run", writeScenario(t, "pass.hcl", smokeScenario(passingCheck)), "--out", t.TempDir(), "--state-dir", state, "--provider", "docker")
		if code != exitOK {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, errOut)
		}
		if !strings.Contains(errOut, "left behind by an earlier, killed scenario") {
			t.Errorf("the next run did not report removing the killed one's containers:\n%s", errOut)
		}
		if left := ownedBy(t, owner); len(left) > 0 {
			t.Errorf("left after the next run: %v", left)
		}
		if left := ownedBy(t, strconv.Itoa(os.Getpid())); len(left) > 0 {
			t.Errorf("the next run left: %v", left)
		}
		assertNothingLeft(t, state)
	})
}

// ownedBy lists the containers, volumes and networks the runner with pid
// owner created and the engine still has.
func ownedBy(t *testing.T, owner string) []string {
	t.Helper()
	left, err := container.Labelled(context.Background(), container.LabelOwner+"="+owner)
	if err != nil {
		t.Fatal(err)
	}
	return left
}

// startLongRun starts `scenario run` on a minute-long scenario in a child
// process and returns once its timeline is playing.
func startLongRun(t *testing.T, state string, extra ...string) (*exec.Cmd, *bytes.Buffer, *watchWriter) {
	t.Helper()
	path := writeScenario(t, "long.hcl", strings.Replace(smokeScenario(passingCheck), `"4s"`, `"60s"`, 1))
	cmd := cliCommand(append([]string{"run", path, "--out", t.TempDir(), "--state-dir", state}, extra...)...)
	started := make(chan struct{})
	stderr := &watchWriter{pattern: "[steady]", hit: func() { close(started) }}
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the run never started its timeline:\n%s", stderr.String())
	}
	return cmd, &stdout, stderr
}

// TestRunRefusals covers what run refuses before it starts anything; no
// store binary is needed.
func TestRunRefusals(t *testing.T) {
	state := t.TempDir()
	tests := []struct {
		name   string
		src    string
		code   int
		stderr *regexp.Regexp
	}{
		{
			// With or without a Docker engine here: either the image or
			// the engine is missing, and the message says what to do.
			name:   "a docker image that is not built is an infrastructure failure",
			src:    strings.Replace(smokeScenario(passingCheck), `nodes = 3`, "nodes = 3\n  provider = \"docker\"\n  image = \"scenario-test/absent:0\"", 1),
			code:   exitInfra,
			stderr: regexp.MustCompile(`(?s)(scenario-test/absent:0.*scenario images build|Docker)`),
		},
		{
			// Installed or not, ZooKeeper 3.9.9 is not what Debian ships:
			// the message names the version asked for and, when a
			// ZooKeeper is installed, the one found instead.
			name:   "a zookeeper version that is not installed is an infrastructure failure",
			src:    strings.Replace(strings.Replace(smokeScenario(passingCheck), `store = "etcd"`, `store = "zookeeper"`, 1), `nodes = 3`, "nodes = 3\n  version = \"3.9.9\"", 1),
			code:   exitInfra,
			stderr: regexp.MustCompile(`(?s)zookeeper 3\.9\.9.*(3\.9\.9|apt-get install zookeeper)`),
		},
		{
			name:   "a missing store binary is an infrastructure failure",
			src:    strings.Replace(smokeScenario(passingCheck), `nodes = 3`, "nodes = 3\n  binary = \"/nonexistent/etcd\"", 1),
			code:   exitInfra,
			stderr: regexp.MustCompile(`/nonexistent/etcd`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "run", writeScenario(t, "s.hcl", tt.src), "--out", t.TempDir(), "--state-dir", state)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if !tt.stderr.MatchString(stderr) {
				t.Errorf("stderr does not match %s:\n%s", tt.stderr, stderr)
			}
			assertNothingLeft(t, state)
		})
	}
}

// watchWriter collects output and calls hit once, the first time the
// output contains pattern.
type watchWriter struct {
	pattern string
	hit     func()

	mu   sync.Mutex
	buf  bytes.Buffer
	done bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), w.pattern) {
		w.done = true
		w.hit()
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
