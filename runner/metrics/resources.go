package metrics

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coordlab/scenario/internal/proc"
	"github.com/coordlab/scenario/internal/results"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat.
// Reading it properly needs sysconf(_SC_CLK_TCK), that is cgo; but Linux
// fixes USER_HZ at 100 for userspace on every architecture we run on,
// whatever the kernel's internal HZ, so it is assumed.
const clockTicks = 100

// ResourceSampler samples node processes from /proc, or containers from
// their engine's stats: CPU, resident memory and bytes written to storage.
// Of a process, only the given PID is sampled, not its children: give it
// the store's own process. It is safe for concurrent use.
type ResourceSampler struct {
	base     time.Time
	procRoot string // "/proc"; a directory laid out like it in tests
	pageSize int64

	mu    sync.Mutex
	nodes map[string]*nodeSampler
	order []string // nodes in the order they were first named
}

type nodeSampler struct {
	pid   int                   // or another id of what is sampled; 0 for nothing
	read  func() (Usage, error) // reads pid's usage
	close func()                // releases what read keeps open; nil for nothing

	// The previous sample of the current PID, the baseline for deltas.
	havePrev    bool
	prevAt      time.Duration
	prevCPU     time.Duration
	prevWritten int64         // -1 when unreadable
	prevWait    time.Duration // -1 when unreadable
	written     int64         // summed over PIDs
	writtenOK   bool
	hadPID      bool // a process was named before: later ones started mid-run
	fresh       bool // the current process started during the run
	points      []results.ResourcePoint
}

// NewResourceSampler returns a sampler whose sample times are offsets from
// base, the run's base time.
func NewResourceSampler(base time.Time) *ResourceSampler {
	return &ResourceSampler{
		base:     base,
		procRoot: "/proc",
		pageSize: int64(os.Getpagesize()),
		nodes:    make(map[string]*nodeSampler),
	}
}

// SetPID names the process of a node. Call it again when the node restarts
// under a new PID, and with pid 0 while the node is down. CPU is measured
// again from the new process's second sample; everything a replacement
// process writes counts, since it started during the run.
func (r *ResourceSampler) SetPID(node string, pid int) {
	threads := proc.NewThreadReader(r.procRoot, pid)
	r.setSource(node, pid, func() (Usage, error) { return readProc(r.procRoot, pid, r.pageSize, threads) }, threads.Close)
}

// SetSource is SetPID for a node whose usage is read by read rather than
// from /proc, such as a container's from its engine's stats; id changes
// when the node restarts (its pid will do) and is 0 while it is down.
func (r *ResourceSampler) SetSource(node string, id int, read func() (Usage, error)) {
	r.setSource(node, id, read, nil)
}

// Close releases the files the sampler keeps open between samples (each
// process's threads'); a later sample opens them again. The Run methods
// close the sampler when they return.
func (r *ResourceSampler) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.nodes {
		if n.close != nil {
			n.close()
		}
	}
}

func (r *ResourceSampler) setSource(node string, id int, read func() (Usage, error), closeRead func()) {
	pid := id
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.nodes[node]
	if !ok {
		n = &nodeSampler{}
		r.nodes[node] = n
		r.order = append(r.order, node)
	}
	if n.pid != pid {
		// A replacement process started during the run, so everything it has
		// written belongs to the run; the first one's history does not.
		n.fresh = pid != 0 && n.hadPID
		n.hadPID = n.hadPID || pid != 0
		if n.close != nil {
			n.close()
		}
		n.pid = pid
		n.read, n.close = read, closeRead
		n.havePrev = false
	}
}

// Run samples every node once a second until ctx is done. A Collector's
// Run already does this for the collector's own sampler.
func (r *ResourceSampler) Run(ctx context.Context) {
	defer r.Close()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			r.SampleAt(now.Sub(r.base))
		}
	}
}

// SampleAt samples every node with a PID, stamping the samples at. A node
// whose process is gone or unreadable is skipped this round. The first
// sample of a process is only a baseline: CPU needs two.
func (r *ResourceSampler) SampleAt(at time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range r.order {
		n := r.nodes[name]
		if n.pid <= 0 {
			continue
		}
		st, err := n.read()
		if err != nil {
			// The process may have exited between polls (a kill fault); the
			// runner will name its successor.
			n.havePrev = false
			continue
		}
		if st.Written >= 0 {
			n.writtenOK = true
			if !n.havePrev && n.fresh {
				n.written += st.Written
			}
		}
		n.fresh = false
		if n.havePrev && at > n.prevAt {
			cpu := (st.CPU - n.prevCPU).Seconds() / (at - n.prevAt).Seconds() * 100
			p := results.ResourcePoint{AtMS: results.MS(at), PID: n.pid, CPUPercent: round2(cpu), RSSBytes: st.RSS}
			if st.Written >= 0 && n.prevWritten >= 0 {
				n.written += st.Written - n.prevWritten
			}
			if n.writtenOK {
				p.WrittenBytes = results.Ptr(n.written)
			}
			// The reader's total does not fall when a thread exits; a
			// reader that only sums the threads alive can.
			if st.Wait >= 0 && n.prevWait >= 0 && st.Wait >= n.prevWait {
				p.CPUWaitPercent = results.Ptr(round2((st.Wait - n.prevWait).Seconds() / (at - n.prevAt).Seconds() * 100))
			}
			n.points = append(n.points, p)
		}
		n.havePrev, n.prevAt, n.prevCPU, n.prevWritten, n.prevWait = true, at, st.CPU, st.Written, st.Wait
	}
}

// Nodes returns each node's samples and their summary, in the order the
// nodes were first named.
func (r *ResourceSampler) Nodes() []results.NodeResources {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]results.NodeResources, 0, len(r.order))
	for _, name := range r.order {
		n := r.nodes[name]
		nr := results.NodeResources{Node: name, Points: append([]results.ResourcePoint{}, n.points...)}
		nr.Summary = results.SummarizeResources(n.points, math.Inf(-1), math.Inf(1))
		// The whole run's writes include what a process wrote before
		// its first point.
		nr.Summary.WrittenBytes = nil
		if n.writtenOK {
			nr.Summary.WrittenBytes = results.Ptr(n.written)
		}
		out = append(out, nr)
	}
	return out
}

// Usage is what a node has used so far.
type Usage struct {
	CPU     time.Duration `json:"cpu"`     // user and system time
	RSS     int64         `json:"rss"`     // resident memory, bytes
	Written int64         `json:"written"` // bytes written to storage, -1 when unknown
	// Wait is the time its threads were runnable but waited for a CPU,
	// summed over them; -1 when unknown.
	Wait time.Duration `json:"wait"`
}

// ReadProcess reads one process's usage from /proc, as the sampler does
// for a node that is a process: for an agent that samples a store where it
// runs (in its pod) and reports to the runner. threads, the process's, is
// kept from one sample to the next.
func ReadProcess(pid int, threads *proc.ThreadReader) (Usage, error) {
	return readProc("/proc", pid, int64(os.Getpagesize()), threads)
}

// readProc reads process pid's usage; its threads' wait through threads,
// which keeps their files open between samples.
func readProc(procRoot string, pid int, pageSize int64, threads *proc.ThreadReader) (Usage, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	st := Usage{Written: -1, Wait: -1}
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return st, fmt.Errorf("sample pid %d: %w", pid, err)
	}
	ticks, err := parseStatTicks(b)
	if err != nil {
		return st, fmt.Errorf("sample pid %d: %w", pid, err)
	}
	st.CPU = time.Duration(ticks) * time.Second / clockTicks
	b, err = os.ReadFile(filepath.Join(dir, "statm"))
	if err != nil {
		return st, fmt.Errorf("sample pid %d: %w", pid, err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return st, fmt.Errorf("sample pid %d: short statm %q", pid, b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return st, fmt.Errorf("sample pid %d: statm: %w", pid, err)
	}
	st.RSS = pages * pageSize
	// /proc/PID/io needs ptrace access to the process; without it disk
	// writes are simply not reported.
	if b, err := os.ReadFile(filepath.Join(dir, "io")); err == nil {
		st.Written = parseWriteBytes(b)
	}
	// Without schedstat (a kernel built without CONFIG_SCHED_INFO) the wait
	// is simply not reported.
	if ss, err := threads.Read(); err == nil {
		st.Wait = ss.Wait
	}
	return st, nil
}

// parseStatTicks returns utime + stime from /proc/PID/stat. The command
// name (field 2) may contain spaces and parentheses, so fields are counted
// from the last ')'.
func parseStatTicks(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat %q", b)
	}
	u, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat utime: %w", err)
	}
	s, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat stime: %w", err)
	}
	return u + s, nil
}

func parseWriteBytes(b []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "write_bytes:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

func round2(v float64) float64 {
	return float64(int64(v*100+0.5)) / 100
}
