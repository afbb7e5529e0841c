package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coordlab/scenario/internal/proc"
)

// blkioRoot is where cgroup v1's blkio hierarchy is mounted.
const blkioRoot = "/sys/fs/cgroup/blkio"

// cgroupPrefix starts the name of every blkio group this package creates;
// the runner's pid follows, so that ReapCgroups can tell a live runner's
// groups from a dead one's.
const cgroupPrefix = "scenario-"

// ThrottleAvailable says why a disk throttle cannot be applied here, or nil.
func ThrottleAvailable() error {
	if _, err := os.Stat(filepath.Join(blkioRoot, "blkio.throttle.write_bps_device")); err != nil {
		return fmt.Errorf("disk throttling needs cgroup v1's blkio controller mounted at %s: %w", blkioRoot, err)
	}
	if os.Geteuid() != 0 {
		return errors.New("disk throttling needs root to create blkio cgroups")
	}
	return nil
}

// throttle holds one node's process in a blkio group that limits its writes
// to its data directory's device.
type throttle struct {
	node   string
	pid    int
	dir    string // the group
	origin string // the group the process came from, relative to blkioRoot
	dev    string // "major:minor"
	bps    int64
}

// startThrottle moves each node's process into a group of its own limited
// to bps bytes per second of writes. On error nothing is left behind.
func startThrottle(nodes []Node, bps int64, log *slog.Logger) ([]*throttle, error) {
	if err := ThrottleAvailable(); err != nil {
		return nil, err
	}
	var ts []*throttle
	for _, n := range nodes {
		t, err := throttleNode(n, bps)
		if err != nil {
			for _, t := range ts {
				if uerr := t.stop(); uerr != nil {
					err = errors.Join(err, uerr)
				}
			}
			return nil, fmt.Errorf("throttle node %s: %w", n.Name(), err)
		}
		log.Info("disk throttled", "node", n.Name(), "device", t.dev, "bytes_per_s", bps)
		ts = append(ts, t)
	}
	return ts, nil
}

func throttleNode(n Node, bps int64) (*throttle, error) {
	pid := n.PID()
	if pid <= 0 || !n.Running() {
		return nil, errors.New("node is not running")
	}
	var st unix.Stat_t
	if err := unix.Stat(n.DataDir(), &st); err != nil {
		return nil, err
	}
	major, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
	if major == 0 {
		return nil, fmt.Errorf("data directory %s is on a filesystem with no block device (device 0:%d: tmpfs, overlay or similar), which blkio cannot throttle", n.DataDir(), minor)
	}
	origin, err := blkioGroupOf(pid)
	if err != nil {
		return nil, err
	}
	t := &throttle{
		node:   n.Name(),
		pid:    pid,
		dir:    filepath.Join(blkioRoot, fmt.Sprintf("%s%d-%s-%d", cgroupPrefix, os.Getpid(), n.Name(), pid)),
		origin: origin,
		dev:    fmt.Sprintf("%d:%d", major, minor),
		bps:    bps,
	}
	if err := os.Mkdir(t.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create blkio group: %w", err)
	}
	if err := writeCgroup(t.dir, "blkio.throttle.write_bps_device", fmt.Sprintf("%s %d", t.dev, bps)); err != nil {
		os.Remove(t.dir)
		return nil, err
	}
	if err := writeCgroup(t.dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
		os.Remove(t.dir)
		return nil, err
	}
	return t, nil
}

// written is how many bytes the group's processes wrote to the device
// through the throttle. Writes the kernel does later on their behalf
// (page-cache writeback) are not charged to the group in cgroup v1, which
// is when the throttle is not effective.
func (t *throttle) written() int64 {
	f, err := os.Open(filepath.Join(t.dir, "blkio.throttle.io_service_bytes"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == t.dev && fields[1] == "Write" {
			n, _ := strconv.ParseInt(fields[2], 10, 64)
			return n
		}
	}
	return 0
}

// stop moves the process back where it came from (if it still runs) and
// removes the group.
func (t *throttle) stop() error {
	if proc.Alive(t.pid) {
		if err := writeCgroup(filepath.Join(blkioRoot, t.origin), "cgroup.procs", strconv.Itoa(t.pid)); err != nil && proc.Alive(t.pid) {
			return fmt.Errorf("release node %s from its blkio group: %w", t.node, err)
		}
	}
	return removeGroup(t.dir)
}

// removeGroup removes an empty blkio group; a group whose processes are
// exiting may take a moment to empty.
func removeGroup(dir string) error {
	var err error
	for range 50 {
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		sleepBriefly()
	}
	return fmt.Errorf("remove blkio group: %w", err)
}

func writeCgroup(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, file), err)
	}
	return nil
}

// blkioGroupOf returns pid's blkio group, relative to blkioRoot.
func blkioGroupOf(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ",blkio,") {
			return strings.TrimPrefix(parts[2], "/"), nil
		}
	}
	return "", fmt.Errorf("process %d is in no blkio cgroup", pid)
}

var groupPattern = regexp.MustCompile(`^` + cgroupPrefix + `(\d+)-`)

// ReapCgroups removes the blkio groups of runners that are gone (killed
// with SIGKILL mid-fault) and returns their names. Their processes, if any
// are left, are moved to the root group first.
func ReapCgroups(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(blkioRoot)
	if err != nil {
		return nil, nil // no blkio hierarchy: nothing of ours can be there
	}
	var reaped []string
	var errs []error
	for _, e := range entries {
		m := groupPattern.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		if pid, _ := strconv.Atoi(m[1]); proc.Alive(pid) {
			continue
		}
		dir := filepath.Join(blkioRoot, e.Name())
		if procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, p := range strings.Fields(string(procs)) {
				_ = writeCgroup(blkioRoot, "cgroup.procs", p)
			}
		}
		if err := removeGroup(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		reaped = append(reaped, e.Name())
		if ctx.Err() != nil {
			break
		}
	}
	return reaped, errors.Join(errs...)
}

func sleepBriefly() { time.Sleep(20 * time.Millisecond) }
