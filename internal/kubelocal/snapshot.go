package kubelocal

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Snapshot is what a local cluster may change on the host, as found at
// one moment: compare one taken before Up with one taken after Down.
type Snapshot struct {
	Interfaces []string
	Chains     map[string][]string
	Sysctls    map[string]string
	Netns      []string
	Cgroups    []string
	Processes  []string // our daemons' and shims' command names, if any run
	Dirs       []string // the kubelet's global directories that exist
}

// TakeSnapshot reads the host's state.
func TakeSnapshot(ctx context.Context) Snapshot {
	s := Snapshot{Chains: chains(ctx), Sysctls: map[string]string{}, Netns: netnsEntries()}
	ifs, _ := os.ReadDir("/sys/class/net")
	for _, i := range ifs {
		s.Interfaces = append(s.Interfaces, i.Name())
	}
	for _, n := range watchedSysctls {
		s.Sysctls[n], _ = readSysctl(n)
	}
	s.Cgroups, _ = filepath.Glob("/sys/fs/cgroup/*/" + cgroupRoot)
	for _, d := range kubeletGlobalDirs {
		if isDir(d) {
			s.Dirs = append(s.Dirs, d)
		}
	}
	ps, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range ps {
		b, _ := os.ReadFile(p)
		args := strings.Split(string(b), "\x00")
		base := filepath.Base(args[0])
		if slices.Contains(Binaries, base) || (strings.HasPrefix(base, "containerd") && strings.Contains(string(b), "scenario-kubelocal")) {
			s.Processes = append(s.Processes, base)
		}
	}
	return s
}

// Diff says how after differs from s, one line per difference.
func (s Snapshot) Diff(after Snapshot) []string {
	var out []string
	list := func(what string, a, b []string) {
		for _, x := range b {
			if !slices.Contains(a, x) {
				out = append(out, fmt.Sprintf("%s %s appeared", what, x))
			}
		}
		for _, x := range a {
			if !slices.Contains(b, x) {
				out = append(out, fmt.Sprintf("%s %s disappeared", what, x))
			}
		}
	}
	list("interface", s.Interfaces, after.Interfaces)
	list("netns", s.Netns, after.Netns)
	list("cgroup", s.Cgroups, after.Cgroups)
	list("process", s.Processes, after.Processes)
	list("directory", s.Dirs, after.Dirs)
	for _, k := range slices.Sorted(maps.Keys(after.Chains)) {
		list("iptables chain "+k, s.Chains[k], after.Chains[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Sysctls)) {
		if s.Sysctls[k] != after.Sysctls[k] {
			out = append(out, fmt.Sprintf("sysctl %s: %s before, %s after", k, s.Sysctls[k], after.Sysctls[k]))
		}
	}
	return out
}
