// Package consulmod says which Go module a Consul release is built from and
// what fetching it takes. It is apart from the driver so that a command
// fetching Consul's modules compiles none of the driver's dependencies.
package consulmod

import (
	"fmt"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores/gobuild"
)

// DefaultVersion is the Consul a cluster runs when it names no version.
const DefaultVersion = "1.20.2"

const (
	binaryName = "consul"
	modulePath = "github.com/hashicorp/consul"
)

// buildEnv is what fetching Consul's module needs beyond gobuild's own
// settings: the checksum database does not answer for Consul's submodules
// (api, sdk, proto-public, ...) nor for consul-awsauth, so they are fetched
// unverified. The throwaway module's go.sum still pins what was fetched.
var buildEnv = []string{"GONOSUMDB=github.com/hashicorp/consul/*,github.com/hashicorp/consul-awsauth"}

// Target is the gobuild target of version v. The agent is the module's
// root package, so package and module are the same path.
func Target(v gobuild.Version) gobuild.Target {
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
