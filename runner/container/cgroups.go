package container

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coordlab/scenario/internal/proc"
)

// cgroupUsage reads the resource use of the control groups process pid is
// in, under procRoot and cgroupRoot ("/proc", "/sys/fs/cgroup"): cgroup v1's
// cpuacct, memory and blkio controllers where they are mounted, else the
// unified (v2) hierarchy. A container's processes share its groups, so this
// is the whole container's use. Its threads' wait for a CPU is read through
// waits, which keeps their files open from one sample to the next.
func cgroupUsage(procRoot, cgroupRoot string, pid int, waits *threadWaits) (Usage, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return Usage{}, err
	}
	groups := proc.ParseCgroups(b)
	var u Usage
	var threads string // the file listing the group's threads
	if p, ok := groups["cpuacct"]; ok {
		u, err = v1Usage(cgroupRoot, groups, p)
		threads = filepath.Join(cgroupRoot, "cpuacct", p, "tasks")
	} else if p, ok := groups[""]; ok {
		u, err = v2Usage(filepath.Join(cgroupRoot, p))
		threads = filepath.Join(cgroupRoot, p, "cgroup.threads")
	} else {
		return Usage{}, fmt.Errorf("process %d is in no cpuacct or unified control group", pid)
	}
	if err != nil {
		return u, err
	}
	u.Wait = waits.read(procRoot, threads)
	return u, nil
}

// threadWaits reads the summed wait for a CPU of the threads a control
// group lists, keeping their files open between reads (see
// proc.ThreadReader). The group's own CPU pressure file would say what
// share of the time any of them waited, a different figure from the
// process nodes' sum over threads, so it is not used. Safe for concurrent
// use; the zero value is ready.
type threadWaits struct {
	mu   sync.Mutex
	list string
	r    *proc.ThreadReader
}

// read returns the wait of the threads listed in the file list; -1 when
// it cannot be read.
func (w *threadWaits) read(procRoot, list string) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.r == nil || w.list != list {
		if w.r != nil {
			w.r.Close()
		}
		w.r, w.list = proc.NewListedThreadReader(procRoot, list), list
	}
	ss, err := w.r.Read()
	if err != nil {
		return -1
	}
	return ss.Wait
}

// Close closes the files held; a later read opens them again.
func (w *threadWaits) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.r != nil {
		w.r.Close()
	}
}

func v1Usage(root string, groups map[string]string, cpuPath string) (Usage, error) {
	u := Usage{Written: -1, Wait: -1}
	ns, err := readInt(filepath.Join(root, "cpuacct", cpuPath, "cpuacct.usage"))
	if err != nil {
		return u, err
	}
	u.CPU = time.Duration(ns)
	if p, ok := groups["memory"]; ok {
		dir := filepath.Join(root, "memory", p)
		mem, err := readInt(filepath.Join(dir, "memory.usage_in_bytes"))
		if err != nil {
			return u, err
		}
		if inactive, ok := statValue(filepath.Join(dir, "memory.stat"), "total_inactive_file"); ok && inactive < mem {
			mem -= inactive
		}
		u.RSS = mem
	}
	if p, ok := groups["blkio"]; ok {
		dir := filepath.Join(root, "blkio", p)
		for _, name := range []string{"blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_service_bytes"} {
			if w, err := blkioWritten(filepath.Join(dir, name)); err == nil {
				u.Written = w
				break
			}
		}
	}
	return u, nil
}

func v2Usage(dir string) (Usage, error) {
	u := Usage{Written: -1, Wait: -1}
	usec, ok := statValue(filepath.Join(dir, "cpu.stat"), "usage_usec")
	if !ok {
		return u, fmt.Errorf("%s: no usage_usec", filepath.Join(dir, "cpu.stat"))
	}
	u.CPU = time.Duration(usec) * time.Microsecond
	mem, err := readInt(filepath.Join(dir, "memory.current"))
	if err != nil {
		return u, err
	}
	if inactive, ok := statValue(filepath.Join(dir, "memory.stat"), "inactive_file"); ok && inactive < mem {
		mem -= inactive
	}
	u.RSS = mem
	if b, err := os.ReadFile(filepath.Join(dir, "io.stat")); err == nil {
		u.Written = 0
		for _, f := range strings.Fields(string(b)) {
			if v, ok := strings.CutPrefix(f, "wbytes="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				u.Written += n
			}
		}
	}
	return u, nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// statValue reads "key value" from a flat-keyed cgroup file.
func statValue(path, key string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+" "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// blkioWritten sums the "MAJ:MIN Write N" lines of a v1 blkio file.
func blkioWritten(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseBlkioWritten(b)
}

func parseBlkioWritten(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, errors.New("empty")
	}
	var sum int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[1] == "Write" {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			sum += n
		}
	}
	return sum, nil
}
