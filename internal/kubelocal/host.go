package kubelocal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The host objects a local cluster creates. One local cluster runs at a
// time on a machine (stateRoot's lock), so these names are fixed.
const (
	nodeIface   = "scnkube0"      // dummy interface holding the node address
	bridgeIface = "scnkbr0"       // the pods' bridge
	cgroupRoot  = "scn-kubelocal" // kubelet's cgroup root, under every controller
	stateRoot   = "/run/scenario-kubelocal"
)

// The kubelet sets these machine-wide while it runs, and the bridge plugin
// turns on forwarding: recorded before, put back after.
var watchedSysctls = []string{"vm.overcommit_memory", "kernel.panic", "kernel.panic_on_oops", "net.ipv4.ip_forward"}

// The directories the kubelet creates wherever its root directory is.
var kubeletGlobalDirs = []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/usr/libexec/kubernetes"}

// daemon is a process the cluster started: its pid, and the program it
// runs, so that a pid reused by another program is left alone.
type daemon struct {
	PID  int    `json:"pid"`
	Path string `json:"path"`
}

// ours reports whether d's pid still runs d's program.
func (d daemon) ours() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", d.PID))
	if err != nil {
		return false
	}
	argv0, _, _ := strings.Cut(string(b), "\x00")
	return argv0 == d.Path
}

// hostState is what a cluster found on the host before it changed
// anything, and where it keeps its files; saved as state.json in its
// directory under stateRoot so that Reap can undo a killed run.
type hostState struct {
	Dir     string              `json:"dir"`      // the cluster's work directory
	Sysctls map[string]string   `json:"sysctls"`  // values before
	Chains  map[string][]string `json:"chains"`   // "iptables/filter" -> chains before
	Netns   []string            `json:"netns"`    // /var/run/netns entries before
	NewDirs []string            `json:"new_dirs"` // global dirs that did not exist before
	Daemons []daemon            `json:"daemons"`  // what we started
	Socket  string              `json:"socket"`   // our containerd's socket
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

func readSysctl(name string) (string, error) {
	b, err := os.ReadFile(sysctlPath(name))
	return strings.TrimSpace(string(b)), err
}

var iptablesTables = []string{"filter", "nat", "mangle"}

// chains lists every chain of every table, per iptables command.
func chains(ctx context.Context) map[string][]string {
	out := map[string][]string{}
	for _, cmd := range []string{"iptables", "ip6tables"} {
		for _, t := range iptablesTables {
			b, err := exec.CommandContext(ctx, cmd+"-save", "-t", t).Output()
			if err != nil {
				continue
			}
			var cs []string
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				if line := sc.Text(); strings.HasPrefix(line, ":") {
					cs = append(cs, strings.Fields(line[1:])[0])
				}
			}
			out[cmd+"/"+t] = cs
		}
	}
	return out
}

func netnsEntries() []string {
	es, _ := os.ReadDir("/var/run/netns")
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// recordHost notes what the cluster will change, before it does.
func recordHost(ctx context.Context, dir string) (*hostState, error) {
	h := &hostState{Dir: dir, Sysctls: map[string]string{}, Chains: chains(ctx), Netns: netnsEntries()}
	for _, s := range watchedSysctls {
		v, err := readSysctl(s)
		if err != nil {
			return nil, fmt.Errorf("read sysctl %s: %w", s, err)
		}
		h.Sysctls[s] = v
	}
	for _, d := range kubeletGlobalDirs {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			h.NewDirs = append(h.NewDirs, d)
		}
	}
	return h, nil
}

func (h *hostState) save() error {
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(stateRoot, "state.json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func loadState() (*hostState, error) {
	b, err := os.ReadFile(filepath.Join(stateRoot, "state.json"))
	if err != nil {
		return nil, err
	}
	var h hostState
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(stateRoot, "state.json"), err)
	}
	return &h, nil
}

// restore undoes everything the cluster did to the host, whatever state
// it was left in; it goes on after a failure and reports them all.
func (h *hostState) restore(ctx context.Context) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	// Daemons first: the kubelet would recreate what is removed below.
	for _, d := range h.Daemons {
		if d.ours() {
			_ = syscall.Kill(d.PID, syscall.SIGKILL)
		}
	}
	add(killShims(h.Socket))
	add(killCgroup(ctx))
	add(unmountUnder(h.Dir))
	for _, n := range netnsEntries() {
		if strings.HasPrefix(n, "cni-") && !slices.Contains(h.Netns, n) {
			p := filepath.Join("/var/run/netns", n)
			_ = syscall.Unmount(p, syscall.MNT_DETACH)
			add(os.Remove(p))
		}
	}
	for _, l := range []string{bridgeIface, nodeIface} {
		if _, err := os.Stat(filepath.Join("/sys/class/net", l)); err == nil {
			add(run(ctx, "ip", "link", "del", l))
		}
	}
	add(removeNewChains(ctx, h.Chains))
	for s, v := range h.Sysctls {
		if cur, err := readSysctl(s); err == nil && cur != v {
			add(os.WriteFile(sysctlPath(s), []byte(v), 0o644))
		}
	}
	for _, d := range h.NewDirs {
		_ = unmountUnder(d)
		add(os.RemoveAll(d))
	}
	if h.Dir != "" {
		add(os.RemoveAll(h.Dir))
	}
	add(os.Remove(filepath.Join(stateRoot, "state.json")))
	return errors.Join(errs...)
}

// killShims kills the containerd shims serving our containerd: they leave
// their parent and would outlive it.
func killShims(socket string) error {
	if socket == "" {
		return nil
	}
	ps, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range ps {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		if i := slices.Index(args, "-address"); i >= 0 && i+1 < len(args) && args[i+1] == socket {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

// killCgroup kills every process left in the kubelet's cgroup root (the
// pods' processes, which outlive their shims) and removes the cgroups.
func killCgroup(ctx context.Context) error {
	ctrls, _ := filepath.Glob("/sys/fs/cgroup/*/" + cgroupRoot)
	if unified := "/sys/fs/cgroup/" + cgroupRoot; isDir(unified) {
		ctrls = append(ctrls, unified)
	}
	var errs []error
	for _, root := range ctrls {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for range 50 {
			alive := false
			for _, d := range dirs {
				b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
				for f := range strings.FieldsSeq(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						alive = true
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
			if !alive {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		// Deepest first: a cgroup with children cannot be removed.
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// unmountUnder detaches every mount at or below dir, deepest first.
func unmountUnder(dir string) error {
	if dir == "" {
		return nil
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := unescapeMount(f[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeNewChains deletes the iptables chains that were not there before,
// with the rules elsewhere that jump to them.
func removeNewChains(ctx context.Context, before map[string][]string) error {
	var errs []error
	for key, cs := range chains(ctx) {
		cmd, table, _ := strings.Cut(key, "/")
		var added []string
		for _, c := range cs {
			if !slices.Contains(before[key], c) {
				added = append(added, c)
			}
		}
		if len(added) == 0 {
			continue
		}
		for _, c := range cs {
			b, err := exec.CommandContext(ctx, cmd, "-w", "-t", table, "-S", c).Output()
			if err != nil {
				continue
			}
			for line := range strings.Lines(string(b)) {
				f := strings.Fields(line)
				if len(f) < 2 || f[0] != "-A" {
					continue
				}
				if j := slices.Index(f, "-j"); j >= 0 && j+1 < len(f) && slices.Contains(added, f[j+1]) {
					// Quoted comments come back quoted; the rule is
					// matched by its number instead of its text.
					errs = append(errs, deleteRule(ctx, cmd, table, c, f))
				}
			}
		}
		for _, c := range added {
			_ = run(ctx, cmd, "-w", "-t", table, "-F", c)
		}
		for _, c := range added {
			if err := run(ctx, cmd, "-w", "-t", table, "-X", c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// deleteRule deletes the first rule of chain that jumps where f does.
func deleteRule(ctx context.Context, cmd, table, chain string, f []string) error {
	b, err := exec.CommandContext(ctx, cmd, "-w", "-t", table, "-S", chain).Output()
	if err != nil {
		return err
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, "-A ") {
			continue
		}
		n++
		if strings.Join(strings.Fields(line), " ") == strings.Join(f, " ") {
			return run(ctx, cmd, "-w", "-t", table, "-D", chain, strconv.Itoa(n))
		}
	}
	return nil
}

// run runs a command, its output in the error.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
