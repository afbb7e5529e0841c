package gobuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A version that cannot be fetched leaves nothing in the cache: no lock
// file, no empty version directory. An existing directory (another
// binary's, say) stays.
func TestFailedInstallLeavesNothing(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	cache := t.TempDir()
	target := Target{Store: "etcd", Version: "v9.9.9", Name: "etcd",
		Pkg: "example.invalid/nope", Module: "example.invalid/nope", ModVersion: "v9.9.9",
		Env: []string{"GOPROXY=off"}} // fails at once, without the network
	if _, err := Install(context.Background(), cache, target, nil); err == nil {
		t.Fatal("Install of a missing module succeeded")
	}
	if _, err := os.Stat(filepath.Join(cache, "etcd", "v9.9.9")); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(filepath.Join(cache, "etcd", "v9.9.9"))
		t.Fatalf("version directory left behind (%v): %v", err, entries)
	}

	keep := filepath.Join(cache, "etcd", "v9.9.8")
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(keep, "benchmark")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	target.Version, target.ModVersion = "v9.9.8", "v9.9.8"
	if _, err := Install(context.Background(), cache, target, nil); err == nil {
		t.Fatal("Install of a missing module succeeded")
	}
	entries, err := os.ReadDir(keep)
	if err != nil || len(entries) != 1 || entries[0].Name() != "benchmark" { // the lock file went too
		t.Fatalf("directory with another binary: %v, %v", entries, err)
	}
}
