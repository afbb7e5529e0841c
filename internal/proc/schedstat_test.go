package proc

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseSchedstat(t *testing.T) {
	tests := []struct {
		in        string
		run, wait time.Duration
		ok        bool
	}{
		{"148168 820147 1\n", 148168, 820147, true},
		{"381945238 100668650 4931", 381945238, 100668650, true},
		{"0 0 0\n", 0, 0, true},
		{"12", 0, 0, false},
		{"", 0, 0, false},
		{"x 1 1", 0, 0, false},
		{"1 y 1", 0, 0, false},
	}
	for _, tt := range tests {
		run, wait, err := ParseSchedstat([]byte(tt.in))
		if (err == nil) != tt.ok || run != tt.run || wait != tt.wait {
			t.Errorf("ParseSchedstat(%q) = %v, %v, %v; want %v, %v, ok %v", tt.in, run, wait, err, tt.run, tt.wait, tt.ok)
		}
	}
}

// fakeThreads lays out root/PID/task/TID/schedstat and root/TID/schedstat
// for each thread, as /proc does.
func fakeThreads(t *testing.T, root string, pid int, stats map[int]string) {
	t.Helper()
	for tid, s := range stats {
		for _, dir := range []string{filepath.Join(root, strconv.Itoa(pid), "task", strconv.Itoa(tid)), filepath.Join(root, strconv.Itoa(tid))} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "schedstat"), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestProcessSchedstat(t *testing.T) {
	root := t.TempDir()
	fakeThreads(t, root, 40, map[int]string{40: "1000 200 3\n", 41: "500 50 2\n", 42: "7 3 1\n"})
	got, err := processSchedstat(root, 40)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Schedstat{Run: 1507, Wait: 253, Threads: 3}); got != want {
		t.Errorf("ProcessSchedstat = %+v, want %+v", got, want)
	}

	// A listed set of threads, as a container's control group lists them:
	// a thread listed but gone by the time it is read is skipped.
	list := filepath.Join(root, "cgroup.threads")
	if err := os.WriteFile(list, []byte("41\n99\n42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	listed := NewListedThreadReader(root, list)
	defer listed.Close()
	got, err = listed.Read()
	if err != nil {
		t.Fatal(err)
	}
	if want := (Schedstat{Run: 507, Wait: 53, Threads: 2}); got != want {
		t.Errorf("listed threads with a gone one = %+v, want %+v", got, want)
	}
	if err := os.WriteFile(list, []byte("98\n99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := listed.Read(); err == nil {
		t.Error("listed threads that are all gone: no error")
	}
	if _, err := NewListedThreadReader(root, filepath.Join(root, "missing")).Read(); err == nil {
		t.Error("a missing list file: no error")
	}
	if _, err := processSchedstat(root, 77); err == nil {
		t.Error("ProcessSchedstat of a missing process: no error")
	}
	fakeThreads(t, root, 50, map[int]string{50: "1 2 3", 51: "garbage"})
	if _, err := processSchedstat(root, 50); err == nil {
		t.Error("ProcessSchedstat with a malformed thread: no error")
	}
}

func TestParseThreads(t *testing.T) {
	got := ParseThreads([]byte("12\n13\n\nx\n0\n14\n"))
	want := []int{12, 13, 14}
	if len(got) != len(want) {
		t.Fatalf("ParseThreads = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ParseThreads = %v, want %v", got, want)
		}
	}
}

// TestProcessSchedstatSeesWaiting makes this process's threads wait for a
// CPU, twice as many spinning as there are CPUs, and checks the kernel's
// counts (summed over the threads) show it.
func TestProcessSchedstatSeesWaiting(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skipf("this kernel keeps no schedstat (CONFIG_SCHED_INFO): %v", err)
	}
	before, err := processSchedstat("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cpus := runtime.NumCPU()
	spinners := 2 * cpus
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(spinners + 1))
	const spin = 400 * time.Millisecond
	var wg sync.WaitGroup
	start := time.Now()
	for range spinners {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for time.Since(start) < spin {
			}
		})
	}
	wg.Wait()
	after, err := processSchedstat("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ran, waited := after.Run-before.Run, after.Wait-before.Wait
	t.Logf("%d threads spinning %v on %d CPUs: ran %v, waited %v", spinners, spin, cpus, ran, waited)
	// About spin of wait per CPU; a quarter of it leaves room for a machine
	// whose other work kept some threads off the CPUs entirely.
	if min := time.Duration(cpus) * spin / 4; waited < min {
		t.Errorf("the threads waited %v for a CPU, want at least %v", waited, min)
	}
	if ran <= 0 {
		t.Errorf("the threads ran %v", ran)
	}
}

// FuzzSchedstat feeds the parsers of schedstat and of thread lists: they
// never panic, a parsed schedstat's figures come from its first two
// fields, and every thread id listed is positive.
func FuzzSchedstat(f *testing.F) {
	f.Add([]byte("148168 820147 1\n"))
	f.Add([]byte("12\n13\n\nx\n0\n-4\n"))
	f.Add([]byte("99999999999999999999 1 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if run, wait, err := ParseSchedstat(b); err == nil {
			if want, _ := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64); int64(run) != want {
				t.Errorf("run %d from %q", run, b)
			}
			f := strings.Fields(string(b))
			if len(f) < 2 {
				t.Errorf("parsed %q with fewer than two fields: %v %v", b, run, wait)
			}
		}
		for _, tid := range ParseThreads(b) {
			if tid <= 0 {
				t.Errorf("thread id %d from %q", tid, b)
			}
		}
	})
}

// processSchedstat reads the threads of process pid once.
func processSchedstat(procRoot string, pid int) (Schedstat, error) {
	r := NewThreadReader(procRoot, pid)
	defer r.Close()
	return r.Read()
}
