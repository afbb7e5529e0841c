// Package consul drives Consul for scenario runs: it builds and caches the
// Consul agent, turns a cluster spec into a server agent's flags and config
// file, sends workload operations over the HTTP API, classifies their
// failures and polls each server for its view of the raft leader.
package consul

import (
	"context"
	"fmt"
	"io"

	"github.com/coordlab/scenario/plan"
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

const (
	binaryName = "consul"
	modulePath = "github.com/hashicorp/consul"
)

// buildEnv is what fetching Consul's module needs beyond gobuild's own
// settings: the checksum database does not answer for Consul's submodules
// (api, sdk, proto-public, ...) nor for consul-awsauth, so they are fetched
// unverified. The throwaway module's go.sum still pins what was fetched.
var buildEnv = []string{"GONOSUMDB=github.com/hashicorp/consul/*,github.com/hashicorp/consul-awsauth"}

// Install returns the path of a Consul agent binary of opts.Version,
// building it from Consul's Go module on first use (about four minutes on
// two cores) and reusing the cached binary afterwards. Concurrent installs
// of one version, in this process or others, build it once.
func Install(ctx context.Context, opts InstallOptions) (string, error) {
	v, err := ParseVersion(opts.Version)
	if err != nil {
		return "", err
	}
	path, err := gobuild.Install(ctx, opts.CacheDir, target(v), opts.Progress)
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
	return gobuild.Exists(cacheDir, target(v))
}

// DefaultCacheDir is the store binary cache used when no directory is given.
func DefaultCacheDir() (string, error) { return gobuild.DefaultCacheDir() }

// target is the gobuild target of version v. The agent is the module's
// root package, so package and module are the same path.
func target(v gobuild.Version) gobuild.Target {
	return gobuild.Target{
		Store: "consul", Version: v.String(), Name: binaryName,
		Pkg: modulePath, Module: modulePath, ModVersion: v.String(),
		Env:  buildEnv,
		Hint: "4 to 10 minutes on 2 cores, less with a warm Go build cache",
	}
}

// maxComponent bounds each number of a release: Consul's are short, and
// a bound keeps fuzzed versions from meaning anything.
const maxComponent = 9999

// ParseVersion accepts "1.20.2" and "v1.20.2". Pre-releases are allowed
// because Consul publishes them as module versions (v1.21.0-rc1); build
// metadata ("+ent") is not: the enterprise build is not on the module
// proxy. Only 1.x exists as module github.com/hashicorp/consul; a v2 would
// need a /v2 module path.
func ParseVersion(s string) (gobuild.Version, error) {
	v, err := gobuild.ParseVersion(plan.StoreConsul, DefaultVersion, s)
	if err != nil {
		return gobuild.Version{}, err
	}
	if v.Minor > maxComponent || v.Patch > maxComponent {
		return gobuild.Version{}, fmt.Errorf("consul version %q: want a release like 1.20.2", s)
	}
	if v.Major != 1 {
		return gobuild.Version{}, fmt.Errorf("consul version %q: only 1.x releases are supported", s)
	}
	return v, nil
}
