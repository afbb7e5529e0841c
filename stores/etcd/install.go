// Package etcd drives etcd for scenario runs: it builds and caches the etcd
// server and its benchmark tool, turns a cluster spec into server flags,
// sends workload operations, classifies their failures and polls each
// member for its view of the leader.
package etcd

import (
	"context"
	"fmt"
	"io"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores/gobuild"
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
	// Upgrade lists module@version queries the binary is built against
	// instead of the versions etcd's release requires (see
	// gobuild.Target.Upgrade, which also caches it apart).
	Upgrade []string
	// Symbols keeps the binary's symbol table, for a profiler (see
	// gobuild.Target.Symbols, which also caches it apart).
	Symbols bool
}

// tool is one binary built from etcd's Go modules.
type tool struct {
	name string // file name in the cache and in messages
	// pkg returns the main package to build and the module to fetch it
	// from for version v, or an error when v cannot be built that way.
	pkg  func(v gobuild.Version) (pkgPath, modPath string, err error)
	hint string // how long a build takes, for the progress message
}

var serverTool = tool{
	name: "etcd",
	pkg: func(v gobuild.Version) (string, string, error) {
		switch {
		case v.AtLeast(3, 5):
			// Since 3.5 the server is its own module whose root is
			// package main.
			return "go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/server/v3", nil
		case v.Major == 3 && v.Minor == 4:
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
	pkg: func(v gobuild.Version) (string, string, error) {
		switch {
		case v.AtLeast(3, 5):
			return "go.etcd.io/etcd/v3/tools/benchmark", "go.etcd.io/etcd/v3", nil
		case v.Major == 3 && v.Minor == 4:
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
	v, err := ParseVersion(version)
	if err != nil {
		return "", false
	}
	return gobuild.Exists(cacheDir, gobuild.Target{Store: "etcd", Version: v.String(), Name: serverTool.name})
}

// DefaultCacheDir is the store binary cache used when no directory is given.
func DefaultCacheDir() (string, error) { return gobuild.DefaultCacheDir() }

func install(ctx context.Context, opts InstallOptions, t tool) (string, error) {
	v, err := ParseVersion(opts.Version)
	if err != nil {
		return "", err
	}
	pkgPath, modPath, err := t.pkg(v)
	if err != nil {
		return "", err
	}
	modVersion := v.String()
	if !v.AtLeast(3, 5) {
		modVersion += "+incompatible"
	}
	target := gobuild.Target{
		Store: "etcd", Version: v.String(), Name: t.name,
		Pkg: pkgPath, Module: modPath, ModVersion: modVersion, Hint: t.hint,
		Upgrade: opts.Upgrade, Symbols: opts.Symbols,
	}
	path, err := gobuild.Install(ctx, opts.CacheDir, target, opts.Progress)
	if err != nil {
		if v.Major == 3 && v.Minor == 4 {
			return "", fmt.Errorf("install %s %s: etcd 3.4 predates Go modules and exists only as an +incompatible version of %s, which could not be fetched or built here (the module proxy may not serve it, or it may be too old for this Go toolchain); point the cluster's binary at a prebuilt etcd 3.4 instead: %w",
				t.name, v, modPath, err)
		}
		return "", fmt.Errorf("install %s %s: %w", t.name, v, err)
	}
	return path, nil
}

// ParseVersion accepts "3.5.17" and "v3.5.17".
func ParseVersion(s string) (gobuild.Version, error) {
	return gobuild.ParseVersion(plan.StoreEtcd, DefaultVersion, s)
}
