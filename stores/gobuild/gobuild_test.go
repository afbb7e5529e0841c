package gobuild

import (
	"archive/zip"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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

// A build with Upgrade links the upgraded version of a library, not the one
// the program's module requires, and is cached apart from the plain build of
// the same Name.
func TestInstallUpgradesLibraries(t *testing.T) {
	target := demoTarget(t)
	target.Upgrade = []string{"example.test/lib@v1.1.0"}
	cache := t.TempDir()
	bin, err := Install(t.Context(), cache, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, d := range info.Deps {
		if d.Path == "example.test/lib" {
			got = d.Version
		}
	}
	if got != "v1.1.0" {
		t.Errorf("built against example.test/lib %q, want the upgrade v1.1.0", got)
	}
	prints := func(bin, want string) {
		t.Helper()
		out, err := exec.Command(bin).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("%s printed %q (%v), want %s", bin, out, err, want)
		}
	}
	prints(bin, "v1.1.0")

	target.Upgrade = nil
	plain, err := Install(t.Context(), cache, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain == bin {
		t.Fatalf("the plain build and the upgraded one share %s", bin)
	}
	prints(plain, "v1.0.0")
	prints(bin, "v1.1.0")
}

// A build with Symbols keeps the symbol table a profiler names functions
// by, which the plain build strips, and is cached apart from it.
func TestInstallKeepsSymbols(t *testing.T) {
	target := demoTarget(t)
	cache := t.TempDir()
	plain, err := Install(t.Context(), cache, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	target.Symbols = true
	withSymbols, err := Install(t.Context(), cache, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain == withSymbols {
		t.Fatalf("the plain build and the one with symbols share %s", plain)
	}
	hasMain := func(bin string) bool {
		t.Helper()
		f, err := elf.Open(bin)
		if err != nil {
			t.Skipf("%s is not an ELF binary (%v): symbols are checked on Linux only", bin, err)
		}
		defer f.Close()
		syms, err := f.Symbols()
		if errors.Is(err, elf.ErrNoSymbols) {
			return false
		}
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		return slices.ContainsFunc(syms, func(s elf.Symbol) bool { return s.Name == "main.main" })
	}
	if !hasMain(withSymbols) {
		t.Errorf("%s: no main.main in its symbol table", withSymbols)
	}
	if hasMain(plain) {
		t.Errorf("%s, the plain build, kept its symbol table", plain)
	}
}

// demoTarget is a program, example.test/cmd v1.0.0, that prints the version
// of the library it links, example.test/lib (v1.0.0 by its requirements,
// v1.1.0 published too). The modules come from a file proxy written here,
// so the builds need neither the network nor the module cache's state.
func demoTarget(t *testing.T) Target {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	proxy := t.TempDir()
	lib := func(version string) map[string]string {
		return map[string]string{
			"go.mod": "module example.test/lib\n\ngo 1.21\n",
			"lib.go": "package lib\n\nconst Version = \"" + version + "\"\n",
		}
	}
	publish(t, proxy, "example.test/lib", "v1.0.0", lib("v1.0.0"))
	publish(t, proxy, "example.test/lib", "v1.1.0", lib("v1.1.0"))
	publish(t, proxy, "example.test/cmd", "v1.0.0", map[string]string{
		"go.mod":  "module example.test/cmd\n\ngo 1.21\n\nrequire example.test/lib v1.0.0\n",
		"main.go": "package main\n\nimport \"example.test/lib\"\n\nfunc main() { println(lib.Version) }\n",
	})
	// A module cache of its own, emptied by the go command itself: it
	// makes what it extracts read-only.
	modCache := "GOMODCACHE=" + t.TempDir()
	t.Cleanup(func() {
		clean := exec.Command("go", "clean", "-modcache")
		clean.Env = append(os.Environ(), modCache)
		if out, err := clean.CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache: %v\n%s", err, out)
		}
	})
	return Target{Store: "demo", Version: "v1.0.0", Name: "cmd",
		Pkg: "example.test/cmd", Module: "example.test/cmd", ModVersion: "v1.0.0",
		Env: []string{"GOPROXY=file://" + filepath.ToSlash(proxy), "GOSUMDB=off", modCache}}
}

// publish writes module path@version with files to a GOPROXY=file:// tree.
func publish(t *testing.T, proxy, path, version string, files map[string]string) {
	t.Helper()
	dir := filepath.Join(proxy, filepath.FromSlash(path), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for name, body := range files {
		w, err := zw.Create(path + "@" + version + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	list, _ := os.ReadFile(filepath.Join(dir, "list"))
	for name, body := range map[string][]byte{
		version + ".zip":  zb.Bytes(),
		version + ".mod":  []byte(files["go.mod"]),
		version + ".info": []byte(`{"Version":"` + version + `","Time":"2026-01-01T00:00:00Z"}`),
		"list":            append(list, version+"\n"...),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
