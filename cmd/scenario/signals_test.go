package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/results"
)

// slowInputs makes, in dir, inputs on which each command that reads files
// works for many seconds on a quiet machine: large but legal scenarios,
// and a large results.json. They are what a signal must interrupt.
type slowInputs struct {
	scenario string // ~450 KB, 8,000 checks: validate and fmt take ~1 s each
	sweep    string // a 900-point sweep of a scenario with 300 checks
	results  string // a results.json of ~60 MB: compare takes ~4 s
}

func makeSlowInputs(t *testing.T) slowInputs {
	t.Helper()
	dir := t.TempDir()
	var checks strings.Builder
	for i := range 8000 {
		fmt.Fprintf(&checks, "check \"c%d\" {\n  condition = phase.p.put.p99 < ms(5)\n}\n", i)
	}
	in := slowInputs{
		scenario: filepath.Join(dir, "big.hcl"),
		sweep:    filepath.Join(dir, "sweep.hcl"),
		results:  filepath.Join(dir, "results.json"),
	}
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(in.scenario, signalScenario+checks.String())
	var values []string
	for i := range 30 {
		values = append(values, fmt.Sprint(i))
	}
	few := strings.Join(strings.SplitAfterN(checks.String(), "}\n", 301)[:300], "")
	write(in.sweep, signalScenario+few+`
variable "a" {
  default = 1
}
variable "b" {
  default = 1
}
sweep {
  matrix = {
    a = [`+strings.Join(values, ", ")+`]
    b = [`+strings.Join(values, ", ")+`]
  }
}
`)
	r := &results.Results{SchemaVersion: results.SchemaVersion, Scenario: "big.hcl", Phases: []results.Phase{{Name: "p"}}, Run: results.Phase{Name: "run"}}
	for s := range 20 {
		series := results.Series{Workload: "w", Op: fmt.Sprint("op", s)}
		for i := range 20_000 {
			series.Points = append(series.Points, results.SecondPoint{AtMS: float64(i) * 1000, Ops: 1000, Errors: int64(i % 7)})
		}
		r.Series = append(r.Series, series)
	}
	if err := results.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	return in
}

const signalScenario = `cluster "main" {
  store = "etcd"
}
workload "w" {
  mix = { put = 1 }
}
phase "p" {
  duration = "1s"
  load "w" {}
}
`

// startCLI runs this test binary as the scenario command, its stdout and
// stderr in one buffer.
func startCLI(t *testing.T, args ...string) (*exec.Cmd, *watchWriter) {
	t.Helper()
	return startWatched(t, "\x00never", func() {}, args...)
}

// startWatched is startCLI calling hit when the output first contains
// pattern.
func startWatched(t *testing.T, pattern string, hit func(), args ...string) (*exec.Cmd, *watchWriter) {
	t.Helper()
	cmd := cliCommand(args...)
	out := &watchWriter{pattern: pattern, hit: hit}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// waitExit waits up to limit for cmd and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration) (int, bool) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, true
		case errors.As(err, &ee):
			return ee.ExitCode(), true
		}
		t.Fatal(err)
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
	}
	return 0, false
}

// TestSignalsStopEveryCommand sends SIGINT and SIGTERM to each command
// while it works through an input that takes it many seconds, and wants
// it to stop within a second (it says "interrupted") and exit 130. Before
// the signal handling, validate ran on to the end and exited 0, and a FIFO
// blocked every command for good. The exit itself may take a little
// longer: the kernel frees the heap of a command that read 60 MB (a few
// hundred milliseconds under the race detector).
func TestSignalsStopEveryCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds inputs of ~60 MB and runs each command twice")
	}
	in := makeSlowInputs(t)
	many := func(cmd string, path string, n int) []string {
		args := []string{cmd}
		for range n {
			args = append(args, path)
		}
		return args
	}
	commands := []struct {
		name string
		args []string
	}{
		{"validate", many("validate", in.scenario, 100)},
		{"fmt", append([]string{"fmt", "--check"}, many("x", in.scenario, 100)[1:]...)},
		{"plan", []string{"plan", in.sweep}},
		{"compare", []string{"compare", in.results, in.results}},
		{"report", []string{"report", in.results, "--out", filepath.Join(t.TempDir(), "r.html")}},
	}
	for _, c := range commands {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(c.name+"/"+sig.String(), func(t *testing.T) {
				// A busy machine (CI runs this beside clusters of other
				// packages) can hold a signal's delivery past the second
				// once; a command that does not stop on it is late every
				// time, so the promise holds if one of three tries keeps it.
				var tooks []time.Duration
				for range 3 {
					took := signalledStop(t, sig, c.args)
					if took <= time.Second {
						return
					}
					tooks = append(tooks, took.Round(time.Millisecond))
				}
				t.Fatalf("stopped %v after %v in three tries, want within 1 s", tooks, sig)
			})
		}
	}
}

// signalledStop starts the command of args, sends it sig half a second
// into its work, requires exit 130 after it said "interrupted", and
// returns how long after the signal it said so.
func signalledStop(t *testing.T, sig syscall.Signal, args []string) time.Duration {
	t.Helper()
	said := make(chan time.Time, 1)
	cmd, out := startWatched(t, "Error: interrupted", func() { said <- time.Now() }, args...)
	time.Sleep(500 * time.Millisecond) // well into its work
	sent := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("the command ended before the signal: %v\n%s", err, out)
	}
	code, exited := waitExit(t, cmd, 5*time.Second)
	if !exited {
		t.Fatalf("still running 5 s after %v:\n%s", sig, out)
	}
	if code != exitInterrupted {
		t.Fatalf("exit %d after %v, want %d:\n%s", code, sig, exitInterrupted, out)
	}
	select {
	case at := <-said:
		return at.Sub(sent)
	default:
		t.Fatalf("exit %d without saying it was interrupted:\n%s", code, out)
	}
	return 0
}

// TestUnreadableInputsRefusedAtOnce gives each command a FIFO (which
// blocked every command before), /dev/zero (read until memory ran out)
// and a directory, and wants exit 2 with one clear line, at once.
func TestUnreadableInputsRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.hcl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.hcl")
	if err := os.WriteFile(big, bytes.Repeat([]byte("# padding line\n"), 50<<20/15), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, "/dev/zero", dir, big} {
		for _, args := range [][]string{
			{"validate", path}, {"plan", path}, {"fmt", path}, {"run", path, "--out", filepath.Join(t.TempDir(), "out")},
			{"compare", path, path}, {"report", path}, {"validate", "../../examples/etcd-smoke.hcl", "--var-file", path},
		} {
			name := strings.Join(args, " ")
			if args[0] == "report" && path == dir {
				continue // a directory is a results directory to report
			}
			if (args[0] == "report" || args[0] == "compare") && path == big {
				continue // results may be up to results.MaxFileBytes
			}
			t.Run(name, func(t *testing.T) {
				cmd, out := startCLI(t, args...)
				code, exited := waitExit(t, cmd, 10*time.Second)
				if !exited {
					t.Fatalf("still running after 10 s:\n%s", out)
				}
				if code != exitInvalid {
					t.Fatalf("exit %d, want %d:\n%s", code, exitInvalid, out)
				}
				text := out.String()
				if !strings.Contains(text, "not a regular file") && !strings.Contains(text, "larger than the limit") && !strings.Contains(text, "no such file") {
					t.Fatalf("no reason given:\n%s", text)
				}
			})
		}
	}
}
