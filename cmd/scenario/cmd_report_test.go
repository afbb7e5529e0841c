package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/results"
)

// savedRun writes a small results.json, as a run leaves it, into a new
// directory and returns the directory.
func savedRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	p99 := 4.5
	r := &results.Results{
		SchemaVersion: results.SchemaVersion,
		RunID:         "20261123T101500Z-abc123",
		Scenario:      "saved",
		Started:       time.Date(2026, 11, 23, 10, 15, 0, 0, time.UTC),
		DurationMS:    2000,
		Phases:        []results.Phase{{Name: "steady", DurationMS: 2000}},
		Series: []results.Series{{Workload: "kv", Op: "put", Points: []results.SecondPoint{
			{AtMS: 0, Ops: 10, P50MS: &p99, P99MS: &p99}, {AtMS: 1000, Ops: 10, P50MS: &p99, P99MS: &p99}}}},
		Checks: []results.Check{{Name: "fast", Condition: "phase.steady.put.p99 < ms(10)", Passed: true,
			Observed: map[string]any{"phase.steady.put.p99": p99}}},
	}
	if err := results.Write(dir, r); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReportCommand(t *testing.T) {
	dir := savedRun(t)
	other := filepath.Join(t.TempDir(), "elsewhere.html")
	notJSON := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(notJSON, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	noSchema := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(noSchema, []byte(`{"scenario": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		code    int
		written string // the page the command must write
		stdout  string
		stderr  string
	}{
		{name: "results file", args: []string{"report", filepath.Join(dir, "results.json")}, code: exitOK,
			written: filepath.Join(dir, "report.html"), stdout: "report: " + filepath.Join(dir, "report.html")},
		{name: "results directory", args: []string{"report", dir}, code: exitOK,
			written: filepath.Join(dir, "report.html")},
		{name: "--out", args: []string{"report", dir, "--out", other}, code: exitOK, written: other},
		{name: "missing file", args: []string{"report", filepath.Join(dir, "nope.json")}, code: exitInvalid,
			stderr: "no such file or directory"},
		{name: "not JSON", args: []string{"report", notJSON}, code: exitInvalid, stderr: "read results " + notJSON},
		{name: "not a results file", args: []string{"report", noSchema}, code: exitInvalid, stderr: "is this a results.json?"},
		{name: "no argument", args: []string{"report"}, code: exitInvalid, stderr: "accepts 1 arg"},
		{name: "--out is the input", args: []string{"report", filepath.Join(dir, "results.json"), "--out", filepath.Join(dir, "results.json")}, code: exitInvalid,
			stderr: "would overwrite its input"},
		{name: "--out is the input, named otherwise", args: []string{"report", dir, "--out", filepath.Join(dir, ".", "results.json")}, code: exitInvalid,
			stderr: "would overwrite its input"},
		{name: "--out is another run's results", args: []string{"report", dir, "--out", noSchema}, code: exitInvalid,
			stderr: "would overwrite a run's results"},
		{name: "unwritable output", args: []string{"report", dir, "--out", filepath.Join(dir, "missing", "r.html")}, code: exitInfra,
			stderr: "write report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.written != "" {
				os.Remove(tt.written)
			}
			code, stdout, stderr := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stdout %q (want %q), stderr %q (want %q)", stdout, tt.stdout, stderr, tt.stderr)
			}
			if tt.written == "" {
				return
			}
			page, err := os.ReadFile(tt.written)
			if err != nil {
				t.Fatalf("no page: %v", err)
			}
			for _, want := range []string{"<!DOCTYPE html>", `<figure id="latency"`, `<table id="checks">`, "phase.steady.put.p99 &lt; ms(10)"} {
				if !strings.Contains(string(page), want) {
					t.Errorf("page lacks %q", want)
				}
			}
		})
	}
}

func TestWriteSweepReport(t *testing.T) {
	dir := savedRun(t)
	r, err := results.Read(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	writeSweepReport(&out, dir, []*results.Results{r, r})
	if _, err := os.Stat(filepath.Join(dir, "sweep.html")); err != nil || !strings.Contains(out.String(), "sweep report: ") {
		t.Errorf("sweep.html: %v; printed %q", err, out.String())
	}
	// A failure is printed, never returned: the sweep's exit code is its
	// checks'.
	out.Reset()
	writeSweepReport(&out, filepath.Join(dir, "missing"), []*results.Results{r})
	if !strings.Contains(out.String(), "sweep report not written") {
		t.Errorf("printed %q", out.String())
	}
}
