package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/proc"
)

// fakeProc writes the three files the sampler reads for one PID.
func fakeProc(t *testing.T, root string, pid int, utime, stime uint64, rssPages int64, written int64) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A command name with spaces and a parenthesis, as /proc allows.
	stat := fmt.Sprintf("%d (etcd (x) y) S 1 1 1 0 -1 4194560 100 0 0 0 %d %d 0 0 20 0 8 0 100 1000 %d 18446744073709551615\n",
		pid, utime, stime, rssPages)
	files := map[string]string{
		"stat":  stat,
		"statm": fmt.Sprintf("1000 %d 10 1 0 100 0\n", rssPages),
	}
	if written >= 0 {
		files["io"] = fmt.Sprintf("rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: %d\ncancelled_write_bytes: 0\n", written)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestResourceSampler(t *testing.T) {
	root := t.TempDir()
	r := NewResourceSampler(time.Now())
	r.procRoot = root
	page := r.pageSize

	r.SetPID("n1", 100)
	r.SetPID("n2", 200) // no io file: writes unknown
	fakeProc(t, root, 100, 1000, 500, 10, 4096)
	fakeProc(t, root, 200, 0, 0, 5, -1)
	r.SampleAt(1 * s) // baseline only

	fakeProc(t, root, 100, 1050, 520, 20, 8192) // 70 ticks in 1 s = 70%
	fakeProc(t, root, 200, 10, 0, 5, -1)
	r.SampleAt(2 * s)

	// n1 restarts as PID 101, which has already written 1000 bytes.
	r.SetPID("n1", 101)
	fakeProc(t, root, 101, 0, 0, 30, 1000)
	r.SampleAt(3 * s)
	fakeProc(t, root, 101, 200, 0, 40, 3000) // 200 ticks in 2 s = 100%
	r.SampleAt(5 * s)

	nodes := r.Nodes()
	if len(nodes) != 2 || nodes[0].Node != "n1" || nodes[1].Node != "n2" {
		t.Fatalf("nodes %+v", nodes)
	}
	n1 := nodes[0]
	if len(n1.Points) != 2 {
		t.Fatalf("n1 points %+v, want 2", n1.Points)
	}
	tests := []struct {
		i       int
		pid     int
		cpu     float64
		rss     int64
		written int64
	}{
		{0, 100, 70, 20 * page, 4096},
		{1, 101, 100, 40 * page, 4096 + 3000},
	}
	for _, tt := range tests {
		p := n1.Points[tt.i]
		if p.PID != tt.pid || p.CPUPercent != tt.cpu || p.RSSBytes != tt.rss || p.WrittenBytes == nil || *p.WrittenBytes != tt.written {
			t.Errorf("point %d = %+v (written %v), want pid %d cpu %v rss %d written %d", tt.i, p, p.WrittenBytes, tt.pid, tt.cpu, tt.rss, tt.written)
		}
	}
	sum := n1.Summary
	if sum.Samples != 2 || sum.CPUMeanPercent != 85 || sum.CPUMaxPercent != 100 || sum.RSSMaxBytes != 40*page || *sum.WrittenBytes != 7096 {
		t.Errorf("n1 summary %+v", sum)
	}
	n2 := nodes[1]
	if n2.Summary.WrittenBytes != nil || len(n2.Points) != 3 || n2.Points[0].WrittenBytes != nil || n2.Summary.CPUMaxPercent != 10 {
		t.Errorf("n2 %+v, want three points, 10%% at most, writes unknown", n2)
	}
}

// fakeSchedstat writes one schedstat per thread of pid, run and wait in ns.
func fakeSchedstat(t *testing.T, root string, pid int, threads map[int][2]int64) {
	t.Helper()
	for tid, rw := range threads {
		dir := filepath.Join(root, strconv.Itoa(pid), "task", strconv.Itoa(tid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "schedstat"), fmt.Appendf(nil, "%d %d 7\n", rw[0], rw[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestResourceSamplerWait checks the threads' wait for a CPU, summed over
// them, as a percent of a core per second, through a thread's exit; unknown
// where there is no schedstat.
func TestResourceSamplerWait(t *testing.T) {
	root := t.TempDir()
	r := NewResourceSampler(time.Now())
	r.procRoot = root
	r.SetPID("n1", 100)
	r.SetPID("n2", 200) // no schedstat
	fakeProc(t, root, 100, 0, 0, 1, -1)
	fakeProc(t, root, 200, 0, 0, 1, -1)
	fakeSchedstat(t, root, 100, map[int][2]int64{100: {1e9, 10e6}, 101: {5e8, 20e6}})
	r.SampleAt(1 * s)
	// 60 ms more waited over two threads in 1 s: 6% of a core.
	fakeSchedstat(t, root, 100, map[int][2]int64{100: {1e9, 50e6}, 101: {5e8, 40e6}})
	r.SampleAt(2 * s)
	// Thread 101 exits: what it waited up to the last sample stays counted;
	// thread 100 waited 10 ms more: 1%.
	if err := os.RemoveAll(filepath.Join(root, "100", "task", "101")); err != nil {
		t.Fatal(err)
	}
	fakeSchedstat(t, root, 100, map[int][2]int64{100: {1e9, 60e6}})
	r.SampleAt(3 * s)
	// 40 ms in 2 s: 2%.
	fakeSchedstat(t, root, 100, map[int][2]int64{100: {1e9, 100e6}})
	r.SampleAt(5 * s)

	nodes := r.Nodes()
	n1, n2 := nodes[0], nodes[1]
	want := []*float64{new(6.0), new(1.0), new(2.0)}
	if len(n1.Points) != len(want) {
		t.Fatalf("n1 points %+v, want %d", n1.Points, len(want))
	}
	for i, w := range want {
		got := n1.Points[i].CPUWaitPercent
		if (got == nil) != (w == nil) || (got != nil && *got != *w) {
			t.Errorf("n1 point %d wait %v, want %v", i, fmtPtr(got), fmtPtr(w))
		}
	}
	if m := n1.Summary.CPUWaitMeanPercent; m == nil || *m != 3 {
		t.Errorf("n1 mean wait %v, want 3", fmtPtr(m))
	}
	for _, p := range n2.Points {
		if p.CPUWaitPercent != nil {
			t.Errorf("n2, with no schedstat, has a wait: %+v", p)
		}
	}
	if n2.Summary.CPUWaitMeanPercent != nil {
		t.Errorf("n2 summary has a wait: %v", *n2.Summary.CPUWaitMeanPercent)
	}
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func TestResourceSamplerGoneProcess(t *testing.T) {
	r := NewResourceSampler(time.Now())
	r.procRoot = t.TempDir()
	r.SetPID("n1", 4242) // never existed
	r.SetPID("n2", 0)    // down
	r.SampleAt(time.Second)
	r.SampleAt(2 * time.Second)
	for _, n := range r.Nodes() {
		if len(n.Points) != 0 {
			t.Errorf("%s has points %+v", n.Node, n.Points)
		}
	}
}

// TestResourceSamplerSelf reads this test process from the real /proc.
func TestResourceSamplerSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	r := NewResourceSampler(time.Now())
	r.SetPID("self", os.Getpid())
	r.SampleAt(0)
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) { // burn a little CPU
	}
	r.SampleAt(100 * ms)
	n := r.Nodes()[0]
	if len(n.Points) != 1 || n.Points[0].RSSBytes <= 0 {
		t.Fatalf("self sample %+v", n)
	}
	if _, err := os.Stat("/proc/self/schedstat"); err == nil && n.Points[0].CPUWaitPercent == nil {
		t.Errorf("self sample has no CPU wait, though this kernel keeps schedstat: %+v", n.Points[0])
	}
}

// BenchmarkReadProcess measures one node's sample as the sampler takes it
// each second, of this process grown by 24 threads to about an etcd
// member's count, against its reference, the same sample without the
// threads' schedstat: the difference is what the wait costs the
// collector's tick. "usage-reopened" opens each thread's file anew for
// each sample (a reader used once), as the sampler would without keeping
// them.
func BenchmarkReadProcess(b *testing.B) {
	const extra = 24
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range extra {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			<-stop
		})
	}
	defer func() { close(stop); wg.Wait() }()
	pid, page := os.Getpid(), int64(os.Getpagesize())
	threads := proc.NewThreadReader("/proc", pid)
	defer threads.Close()
	b.Run("usage", func(b *testing.B) {
		for b.Loop() {
			if _, err := readProc("/proc", pid, page, threads); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("usage-reopened", func(b *testing.B) {
		for b.Loop() {
			once := proc.NewThreadReader("/proc", pid)
			_, err := readProc("/proc", pid, page, once)
			once.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		for b.Loop() {
			if _, err := readProcNoWait(pid, page); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// readProcNoWait is readProc without the threads' schedstat.
func readProcNoWait(pid int, page int64) (Usage, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	st := Usage{Written: -1, Wait: -1}
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return st, err
	}
	ticks, err := parseStatTicks(b)
	if err != nil {
		return st, err
	}
	st.CPU = time.Duration(ticks) * time.Second / clockTicks
	if b, err = os.ReadFile(filepath.Join(dir, "statm")); err != nil {
		return st, err
	}
	st.RSS = int64(len(b)) * page
	if b, err := os.ReadFile(filepath.Join(dir, "io")); err == nil {
		st.Written = parseWriteBytes(b)
	}
	return st, nil
}
