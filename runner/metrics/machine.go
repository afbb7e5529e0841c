package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coordlab/scenario/internal/results"
)

// MachineSampler samples the whole machine once a second: how busy its
// CPUs were, how much of their time the hypervisor took (steal), and how
// long runnable tasks waited for a CPU (pressure stall information). It is
// safe for concurrent use.
type MachineSampler struct {
	procRoot string // "/proc"; a directory laid out like it in tests

	mu       sync.Mutex
	cpus     int
	havePrev bool
	prevAt   time.Duration
	prev     machineCounters
	points   []results.MachinePoint
	err      error // the first read that failed, for the run's notes
}

// machineCounters are the machine's cumulative counters at one instant.
type machineCounters struct {
	busy, steal, total uint64 // /proc/stat ticks, summed over CPUs
	waitUS             uint64 // /proc/pressure/cpu some total, µs
	haveWait           bool
}

// NewMachineSampler returns a sampler of this machine's /proc.
func NewMachineSampler() *MachineSampler { return &MachineSampler{procRoot: "/proc"} }

// SampleAt reads the counters and, from the second read on, records the
// second that ended at offset at.
func (m *MachineSampler) SampleAt(at time.Duration) {
	c, cpus, err := readMachine(m.procRoot)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if m.err == nil {
			m.err = err
		}
		m.havePrev = false
		return
	}
	m.cpus = cpus
	// Counters only grow, but a CPU taken offline takes its share of them
	// away: such a second is skipped rather than read as a wrap.
	if m.havePrev && at > m.prevAt && c.total > m.prev.total && c.busy >= m.prev.busy && c.steal >= m.prev.steal && (!c.haveWait || c.waitUS >= m.prev.waitUS) {
		total := float64(c.total - m.prev.total)
		p := results.MachinePoint{
			AtMS:       results.MS(at),
			BusyShare:  share(c.busy-m.prev.busy, total),
			StealShare: share(c.steal-m.prev.steal, total),
		}
		if c.haveWait && m.prev.haveWait {
			wall := float64((at - m.prevAt).Microseconds())
			p.WaitShare = results.Ptr(min(share(c.waitUS-m.prev.waitUS, wall), 1))
		}
		m.points = append(m.points, p)
	}
	m.havePrev, m.prevAt, m.prev = true, at, c
}

func share(part uint64, whole float64) float64 {
	return results.RoundShare(float64(part) / whole)
}

// Result returns the samples and their summary over the run; nil when none
// was taken.
func (m *MachineSampler) Result() *results.Machine {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := results.SummarizeMachine(m.points, math.Inf(-1), math.Inf(1))
	if s == nil {
		return nil
	}
	return &results.Machine{CPUs: m.cpus, Points: append([]results.MachinePoint{}, m.points...), Summary: *s}
}

// Err returns the first failed read, nil when every read succeeded.
func (m *MachineSampler) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// readMachine reads the aggregate CPU line of /proc/stat and, where the
// kernel has it, the CPU pressure's "some" total.
func readMachine(procRoot string) (machineCounters, int, error) {
	var c machineCounters
	b, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return c, 0, fmt.Errorf("sample the machine: %w", err)
	}
	cpus, err := parseProcStat(b, &c)
	if err != nil {
		return c, 0, fmt.Errorf("sample the machine: %w", err)
	}
	// Kernels without pressure stall information (before 4.20, or booted
	// with psi=0) have no file or refuse to read it: wait is then unknown.
	if b, err := os.ReadFile(filepath.Join(procRoot, "pressure", "cpu")); err == nil {
		c.waitUS, c.haveWait = parsePressureSome(b)
	}
	return c, cpus, nil
}

// parseProcStat fills busy, steal and total from the "cpu" line of
// /proc/stat and returns the number of "cpuN" lines. The line's fields are
// user nice system idle iowait irq softirq steal guest guest_nice; guest
// time is already counted in user and nice, so it is not added again.
func parseProcStat(b []byte, c *machineCounters) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	found, cpus := false, 0
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "cpu")
		if !ok {
			continue
		}
		if rest != "" && rest[0] != ' ' {
			cpus++
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 8 {
			return 0, fmt.Errorf("short cpu line %q in /proc/stat", line)
		}
		var v [8]uint64
		for i := range v {
			n, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cpu line %q in /proc/stat: %w", line, err)
			}
			v[i] = n
		}
		user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
		c.busy = user + nice + system + irq + softirq
		c.steal = steal
		c.total = c.busy + idle + iowait + steal
		found = true
	}
	if !found {
		return 0, fmt.Errorf("no cpu line in /proc/stat")
	}
	return cpus, nil
}

// parsePressureSome returns the "some" line's total (µs) of a pressure
// file such as /proc/pressure/cpu.
func parsePressureSome(b []byte) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "some ")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}
