// Package etcd drives etcd for scenario runs: it builds and caches the etcd
// server and its benchmark tool, turns a cluster spec into server flags,
// sends workload operations, classifies their failures and polls each
// member for its view of the leader.
package etcd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// InstallOptions say which etcd to install and where to cache it.
type InstallOptions struct {
	// Version is an etcd release such as "3.5.17" or "v3.5.17".
	Version string
	// CacheDir is the root of the store binary cache; "" means
	// DefaultCacheDir().
	CacheDir string
	// Progress receives one-line progress messages; it may be nil.
	Progress io.Writer
}

// tool is one binary built from etcd's Go modules.
type tool struct {
	name string // file name in the cache and in messages
	// pkg returns the main package to build and the module to fetch it
	// from for version v, or an error when v cannot be built that way.
	pkg  func(v version) (pkgPath, modPath string, err error)
	hint string // how long a build takes, for the progress message
}

var serverTool = tool{
	name: "etcd",
	pkg: func(v version) (string, string, error) {
		switch {
		case v.atLeast(3, 5):
			// Since 3.5 the server is its own module whose root is
			// package main.
			return "go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/server/v3", nil
		case v.major == 3 && v.minor == 4:
			// 3.4 predates Go modules: it is only addressable as an
			// +incompatible version of the repository root module.
			return "go.etcd.io/etcd", "go.etcd.io/etcd", nil
		}
		return "", "", fmt.Errorf("etcd %s is not supported: use 3.4 or later", v)
	},
	hint: "about a minute",
}

var benchmarkTool = tool{
	name: "benchmark",
	pkg: func(v version) (string, string, error) {
		switch {
		case v.atLeast(3, 5):
			return "go.etcd.io/etcd/v3/tools/benchmark", "go.etcd.io/etcd/v3", nil
		case v.major == 3 && v.minor == 4:
			return "go.etcd.io/etcd/tools/benchmark", "go.etcd.io/etcd", nil
		}
		return "", "", fmt.Errorf("etcd benchmark %s is not supported: use 3.4 or later", v)
	},
	hint: "about a minute, less if etcd was just built",
}

// Install returns the path of an etcd server binary of opts.Version,
// building it from etcd's Go module on first use and reusing the cached
// binary afterwards. Concurrent installs of one version, in this process or
// others, build it once.
func Install(ctx context.Context, opts InstallOptions) (string, error) {
	return install(ctx, opts, serverTool)
}

// InstallBenchmark returns the path of etcd's own load tool, benchmark, at
// opts.Version, built and cached like Install.
func InstallBenchmark(ctx context.Context, opts InstallOptions) (string, error) {
	return install(ctx, opts, benchmarkTool)
}

// Exists returns the cached etcd server binary of version, and whether it
// is there. It builds nothing.
func Exists(version, cacheDir string) (string, bool) {
	v, err := parseVersion(version)
	if err != nil {
		return "", false
	}
	path, err := binaryPath(cacheDir, v, serverTool.name)
	if err != nil {
		return "", false
	}
	return path, isExecutable(path)
}

// DefaultCacheDir is the store binary cache used when no directory is given:
// $XDG_CACHE_HOME/scenario/stores, else ~/.cache/scenario/stores.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "scenario", "stores"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("store cache: no XDG_CACHE_HOME and no home directory: %w", err)
	}
	return filepath.Join(home, ".cache", "scenario", "stores"), nil
}

func binaryPath(cacheDir string, v version, name string) (string, error) {
	if cacheDir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return "", err
		}
		cacheDir = d
	}
	return filepath.Join(cacheDir, "etcd", v.String(), name), nil
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func install(ctx context.Context, opts InstallOptions, t tool) (string, error) {
	v, err := parseVersion(opts.Version)
	if err != nil {
		return "", err
	}
	pkgPath, modPath, err := t.pkg(v)
	if err != nil {
		return "", err
	}
	path, err := binaryPath(opts.CacheDir, v, t.name)
	if err != nil {
		return "", err
	}
	if isExecutable(path) {
		return path, nil
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("install %s %s: %w", t.name, v, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "."+t.name+".lock"), func() {
		fmt.Fprintf(progress, "waiting for another build of %s %s to finish...\n", t.name, v)
	})
	if err != nil {
		return "", fmt.Errorf("install %s %s: %w", t.name, v, err)
	}
	defer unlock()
	// Whoever held the lock before us may have built it.
	if isExecutable(path) {
		return path, nil
	}
	// Under the lock, output dirs of this tool can only be left over from
	// a build that was killed.
	stale, _ := filepath.Glob(filepath.Join(dir, buildDirPrefix(t.name)+"*"))
	for _, d := range stale {
		_ = os.RemoveAll(d)
	}

	fmt.Fprintf(progress, "building %s %s from its Go module (%s)...\n", t.name, v, t.hint)
	start := time.Now()
	if err := build(ctx, v, pkgPath, modPath, path); err != nil {
		if v.major == 3 && v.minor == 4 {
			return "", fmt.Errorf("install %s %s: etcd 3.4 predates Go modules and exists only as an +incompatible version of %s, which could not be fetched or built here (the module proxy may not serve it, or it may be too old for this Go toolchain); point the cluster's binary at a prebuilt etcd 3.4 instead: %w",
				t.name, v, modPath, err)
		}
		return "", fmt.Errorf("install %s %s: %w", t.name, v, err)
	}
	fmt.Fprintf(progress, "built %s %s in %s: %s\n", t.name, v, time.Since(start).Round(time.Second), path)
	return path, nil
}

// build compiles pkgPath from modPath at v inside a throwaway module, so the
// project's own go.mod never sees etcd's server dependencies, and moves the
// result to dst atomically: a reader sees either no binary or a whole one.
func build(ctx context.Context, v version, pkgPath, modPath, dst string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building needs the go command on PATH: %w", err)
	}
	modDir, err := os.MkdirTemp("", "scenario-etcd-build-")
	if err != nil {
		return fmt.Errorf("temp module: %w", err)
	}
	defer os.RemoveAll(modDir)
	// The output goes next to dst so that the final rename stays within
	// one file system.
	outDir, err := os.MkdirTemp(filepath.Dir(dst), buildDirPrefix(filepath.Base(dst)))
	if err != nil {
		return fmt.Errorf("temp output dir: %w", err)
	}
	defer os.RemoveAll(outDir)
	out := filepath.Join(outDir, filepath.Base(dst))

	modVersion := v.String()
	if !v.atLeast(3, 5) {
		modVersion += "+incompatible"
	}
	if err := runGo(ctx, goBin, modDir, []string{"mod", "init", "scenario.local/etcd-build"}); err != nil {
		return err
	}
	// -tool keeps the requirement (and its go.sum lines) even if
	// something tidies the module; a plain require would lose them.
	if err := runGo(ctx, goBin, modDir, []string{"get", "-tool", pkgPath + "@" + modVersion}); err != nil {
		// The go command names the last module path it tried, which
		// may be a package directory; say which module was meant.
		return fmt.Errorf("fetch module %s@%s (check `go list -m -versions %s`): %w", modPath, modVersion, modPath, err)
	}
	if err := runGo(ctx, goBin, modDir, []string{"build", "-trimpath", "-o", out, pkgPath}); err != nil {
		return err
	}
	if !isExecutable(out) {
		return fmt.Errorf("go build reported success but wrote no executable %s", out)
	}
	if err := os.Rename(out, dst); err != nil {
		return fmt.Errorf("move built binary into the cache: %w", err)
	}
	return nil
}

// buildDirPrefix names the temporary output dirs of one tool's builds.
func buildDirPrefix(name string) string { return ".build-" + name + "-" }

// runGo runs one go command in dir. The build environment is the caller's,
// except that modules are resolved freely (-mod=mod), no workspace file
// applies, and cgo is off for a static binary.
func runGo(ctx context.Context, goBin, dir string, args []string) error {
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOWORK=off")
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	// The go command cleans up its compiler children on an interrupt; a
	// plain kill would orphan them.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("go %s: %w", args[0], ctx.Err())
		}
		return fmt.Errorf("go %s: %w\n%s", joinArgs(args), err, tail(output.Bytes(), 4096))
	}
	return nil
}

func joinArgs(args []string) string {
	var b bytes.Buffer
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a)
	}
	return b.String()
}

// tail keeps the end of a build log, where the go command puts the error.
func tail(b []byte, n int) []byte {
	b = bytes.TrimSpace(b)
	if len(b) <= n {
		return b
	}
	b = b[len(b)-n:]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return append([]byte("...\n"), b...)
}

// version is a validated etcd release number.
type version struct {
	major, minor, patch int
	pre                 string // "-rc.1" or ""
}

// Pre-releases are allowed because etcd publishes them as module versions.
var versionRE = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?$`)

// parseVersion accepts "3.5.17" and "v3.5.17". Being strict keeps the
// version safe to use as a path element and a module query.
func parseVersion(s string) (version, error) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return version{}, fmt.Errorf("etcd version %q: want a release like 3.5.17", s)
	}
	var v version
	var err error
	for i, p := range []*int{&v.major, &v.minor, &v.patch} {
		if *p, err = strconv.Atoi(m[i+1]); err != nil {
			return version{}, fmt.Errorf("etcd version %q: %w", s, err)
		}
	}
	v.pre = m[4]
	return v, nil
}

func (v version) String() string {
	return fmt.Sprintf("v%d.%d.%d%s", v.major, v.minor, v.patch, v.pre)
}

func (v version) atLeast(major, minor int) bool {
	return v.major > major || v.major == major && v.minor >= minor
}
