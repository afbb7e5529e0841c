package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzCLI runs the real command line in-process on arbitrary arguments and
// an arbitrary file, which the arguments name as FILE. Whatever they are,
// the CLI must return an exit code it documents, never panic, and never
// take long. Commands that would build stores, images or start clusters
// (run, stores install, images build) are left out: they are not parsers.
//
//	go test ./cmd/scenario -run '^$' -fuzz FuzzCLI -fuzztime 10m
func FuzzCLI(f *testing.F) {
	examples, _ := filepath.Glob("../../examples/*.hcl")
	for _, e := range examples {
		src, err := os.ReadFile(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add("validate FILE", src)
		f.Add("plan FILE --json", src)
		f.Add("fmt --check FILE", src)
	}
	f.Add("validate FILE --var nodes=5 --var-file FILE", []byte("nodes = 5\n"))
	f.Add("compare FILE FILE --tolerance *.p99=-10%", []byte(`{"schema_version": 1, "run": {}, "phases": []}`))
	f.Add("report FILE --out FILE", []byte(`{"schema_version": 1, "run": null}`))
	f.Add("stores list", []byte{})
	f.Add("images bogus", []byte{})
	f.Add("validate FILE", []byte("check \"x\" { condition = ((((1)))) }\x00"))
	// Relative paths the mutator invents (report --out x.go) must land in
	// a scratch directory, never in the source tree. t.Chdir is not
	// allowed in fuzz targets; every worker runs this line once.
	scratch := f.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		f.Fatal(err)
	}
	if err := os.Chdir(scratch); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.Chdir(wd) })
	f.Fuzz(func(t *testing.T, line string, src []byte) {
		dir := t.TempDir()
		file := filepath.Join(dir, "f.hcl")
		if err := os.WriteFile(file, src, 0o644); err != nil {
			t.Fatal(err)
		}
		args := strings.Fields(line)
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "FILE", file)
		}
		if !safeToFuzz(args) {
			return
		}
		watchdog := time.AfterFunc(20*time.Second, func() {
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("scenario %q took over 20s\n%s", args, buf[:runtime.Stack(buf, true)]))
		})
		defer watchdog.Stop()
		code := execute(context.Background(), args, io.Discard, io.Discard)
		if !slices.Contains([]int{exitOK, exitCheckFailed, exitInvalid, exitInfra, exitInterrupted}, code) {
			t.Fatalf("scenario %q: exit %d is not a documented code", args, code)
		}
	})
}

// safeToFuzz leaves out what starts processes or builds, or waits for a
// Docker engine: run and noise, stores install, images build and list, and the
// in-pod agent (it supervises and waits; it parses nothing a user writes).
// reap is left out too: whatever its flags, it removes the containers,
// blkio groups and network namespaces of dead runners on the whole host,
// and without --state-dir it reaps the real state directory's runs; with
// --kubernetes it would connect to a cluster.
func safeToFuzz(args []string) bool {
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	if len(words) == 0 {
		return true
	}
	switch words[0] {
	case "run", "noise", "images", "completion", "agent", "worker", "reap":
		// noise runs its scenario argument as run --repeat does.
		return false
	case "stores":
		return len(words) < 2 || words[1] != "install"
	}
	return true
}
