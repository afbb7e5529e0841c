// Package gobuild builds a store's server from its Go module into a cache
// shared by runs and processes: $XDG_CACHE_HOME/scenario/stores/<store>/<version>/<name>.
// A build happens once per binary even when several processes ask at once,
// inside a throwaway module so that this project's go.mod never sees the
// store's dependencies.
package gobuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Target is one binary built from a Go module.
type Target struct {
	Store   string // first cache directory level: "etcd", "consul"
	Version string // second level, as the store spells its releases: "v3.5.17"
	Name    string // file name in the cache and in messages
	// Pkg is the main package to build, fetched at ModVersion from Module.
	Pkg, Module, ModVersion string
	// Env is added to the go command's environment, e.g. a GONOSUMDB for
	// modules the checksum database does not answer for.
	Env []string
	// Upgrade lists module@version queries fetched after Pkg's own
	// requirements, so that the binary links those versions instead of
	// the ones its module asked for (to tell a program's cost from its
	// libraries'). Such a build is cached beside the plain one, under a
	// file name derived from the list (fileName).
	Upgrade []string
	// Symbols keeps the binary's symbol table (linked with -w alone
	// instead of -s -w), so that a profiler such as perf can name its
	// functions. The table is not loaded when the binary runs. Such a
	// build is cached apart too (fileName).
	Symbols bool
	Hint    string // how long a build takes, for the progress message
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

// Path is where t's binary lives in cacheDir ("" means DefaultCacheDir).
func Path(cacheDir string, t Target) (string, error) {
	if cacheDir == "" {
		d, err := DefaultCacheDir()
		if err != nil {
			return "", err
		}
		cacheDir = d
	}
	return filepath.Join(cacheDir, t.Store, t.Version, t.fileName()), nil
}

// fileName is t's binary's name in the cache: Name, and for a build with
// upgraded libraries a suffix that tells it from the plain build and from
// builds with other upgrades, and for one with its symbols another.
func (t Target) fileName() string {
	name := t.Name
	if len(t.Upgrade) > 0 {
		sum := sha256.Sum256([]byte(strings.Join(t.Upgrade, "\n")))
		name += "-upgraded-" + hex.EncodeToString(sum[:4])
	}
	if t.Symbols {
		name += "-symbols"
	}
	return name
}

// Exists returns t's cached binary and whether it is there. It builds nothing.
func Exists(cacheDir string, t Target) (string, bool) {
	path, err := Path(cacheDir, t)
	if err != nil {
		return "", false
	}
	return path, IsExecutable(path)
}

// IsExecutable reports whether path is a regular file someone may run.
func IsExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Install returns the path of t's binary, building it on first use and
// reusing the cached binary afterwards. Concurrent installs of one target,
// in this process or others, build it once. progress may be nil.
func Install(ctx context.Context, cacheDir string, t Target, progress io.Writer) (string, error) {
	path, err := Path(cacheDir, t)
	if err != nil {
		return "", err
	}
	if IsExecutable(path) {
		return path, nil
	}
	if progress == nil {
		progress = io.Discard
	}
	name := filepath.Base(path) // t.fileName()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("install %s %s: %w", name, t.Version, err)
	}
	lockPath := filepath.Join(dir, "."+name+".lock")
	unlock, err := LockFile(ctx, lockPath, func() {
		fmt.Fprintf(progress, "waiting for another build of %s %s to finish...\n", name, t.Version)
	})
	if err != nil {
		return "", fmt.Errorf("install %s %s: %w", name, t.Version, err)
	}
	defer unlock()
	defer func() {
		// A failed build of a version (one that does not exist, say)
		// leaves nothing in the cache: no lock file, no empty directory.
		// Removed under the lock; a waiter on the old lock file then
		// builds alongside a newcomer, which rename makes safe.
		if !IsExecutable(path) {
			_ = os.Remove(lockPath)
			_ = os.Remove(dir) // only if empty: other binaries stay
		}
	}()
	// Whoever held the lock before us may have built it.
	if IsExecutable(path) {
		return path, nil
	}
	// Under the lock, output dirs of this binary can only be left over
	// from a build that was killed.
	stale, _ := filepath.Glob(filepath.Join(dir, buildDirPrefix(name)+"*"))
	for _, d := range stale {
		_ = os.RemoveAll(d)
	}

	fmt.Fprintf(progress, "building %s %s from its Go module (%s)...\n", name, t.Version, t.Hint)
	start := time.Now()
	if err := build(ctx, t, path); err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "built %s %s in %s: %s\n", name, t.Version, time.Since(start).Round(time.Second), path)
	return path, nil
}

// FetchError is a failure to fetch the target's module, as opposed to a
// failure to build it.
type FetchError struct {
	Module, Version string
	Err             error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("fetch module %s@%s (check `go list -m -versions %s`): %v", e.Module, e.Version, e.Module, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// build compiles t inside a throwaway module and moves the result to dst
// atomically: a reader sees either no binary or a whole one.
func build(ctx context.Context, t Target, dst string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building %s needs the go command on PATH: %w", t.Name, err)
	}
	modDir, err := os.MkdirTemp("", "scenario-"+t.Store+"-build-")
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

	if err := runGo(ctx, goBin, modDir, t.Env, "mod", "init", "scenario.local/"+t.Store+"-build"); err != nil {
		return err
	}
	// -tool keeps the requirement (and its go.sum lines) even if
	// something tidies the module; a plain require would lose them.
	if err := runGo(ctx, goBin, modDir, t.Env, "get", "-tool", t.Pkg+"@"+t.ModVersion); err != nil {
		// The go command names the last module path it tried, which
		// may be a package directory; say which module was meant.
		return &FetchError{Module: t.Module, Version: t.ModVersion, Err: err}
	}
	if len(t.Upgrade) > 0 {
		if err := runGo(ctx, goBin, modDir, t.Env, append([]string{"get"}, t.Upgrade...)...); err != nil {
			return fmt.Errorf("upgrade %s's libraries: %w", t.Name, err)
		}
	}
	// Without debug information (DWARF, the symbol table): a store binary
	// is run and measured, never stepped through in a debugger, and its
	// stack traces come from the runtime's own tables, which stay. It
	// builds faster (cold, on 2 cores: etcd 47 s to 42 s, Consul, the
	// longest step of a cold CI run, 265 s to 192 s) and is a third
	// smaller. A build for a profiler keeps the symbol table (Symbols):
	// perf names a binary's functions from it, not from the runtime's.
	ldflags := "-ldflags=-s -w"
	if t.Symbols {
		ldflags = "-ldflags=-w"
	}
	if err := runGo(ctx, goBin, modDir, t.Env, "build", "-trimpath", "-gcflags=all=-dwarf=false", ldflags, "-o", out, t.Pkg); err != nil {
		return err
	}
	if !IsExecutable(out) {
		return fmt.Errorf("go build reported success but wrote no executable %s", out)
	}
	if err := os.Rename(out, dst); err != nil {
		return fmt.Errorf("move built binary into the cache: %w", err)
	}
	return nil
}

// buildDirPrefix names the temporary output dirs of one binary's builds.
func buildDirPrefix(name string) string { return ".build-" + name + "-" }

// runGo runs one go command in dir. The build environment is the caller's
// plus env, except that modules are resolved freely (-mod=mod), no
// workspace file applies, and cgo is off for a static binary.
func runGo(ctx context.Context, goBin, dir string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOWORK=off")
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

// IsFetchError reports whether err failed fetching the module.
func IsFetchError(err error) bool {
	var fe *FetchError
	return errors.As(err, &fe)
}
