// Package consul drives Consul for scenario runs: it builds and caches the
// Consul agent, turns a cluster spec into a server agent's flags and config
// file, sends workload operations over the HTTP API, classifies their
// failures and polls each server for its view of the raft leader.
package consul

import (
	"context"
	"fmt"
	"io"

	"github.com/coordlab/scenario/stores/consul/consulmod"
	"github.com/coordlab/scenario/stores/gobuild"
)

// InstallOptions say which Consul to install and where to cache it.
type InstallOptions struct {
	// Version is a Consul release such as "1.20.2" or "v1.20.2".
	Version string
	// CacheDir is the root of the store binary cache; "" means
	// DefaultCacheDir().
	CacheDir string
	// Progress receives one-line progress messages; it may be nil.
	Progress io.Writer
}

// Install returns the path of a Consul agent binary of opts.Version,
// building it from Consul's Go module on first use (about four minutes on
// two cores) and reusing the cached binary afterwards. Concurrent installs
// of one version, in this process or others, build it once.
func Install(ctx context.Context, opts InstallOptions) (string, error) {
	v, err := ParseVersion(opts.Version)
	if err != nil {
		return "", err
	}
	path, err := gobuild.Install(ctx, opts.CacheDir, consulmod.Target(v), opts.Progress)
	if err != nil {
		return "", fmt.Errorf("install consul %s: %w", v, err)
	}
	return path, nil
}

// Exists returns the cached Consul binary of version, and whether it is
// there. It builds nothing.
func Exists(version, cacheDir string) (string, bool) {
	v, err := ParseVersion(version)
	if err != nil {
		return "", false
	}
	return gobuild.Exists(cacheDir, consulmod.Target(v))
}

// DefaultCacheDir is the store binary cache used when no directory is given.
func DefaultCacheDir() (string, error) { return gobuild.DefaultCacheDir() }

// ParseVersion accepts "1.20.2" and "v1.20.2" (see consulmod.ParseVersion).
func ParseVersion(s string) (gobuild.Version, error) { return consulmod.ParseVersion(s) }
