package gcbudget

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestAdvisedRange(t *testing.T) {
	const h = hugePageSize
	tests := []struct {
		name         string
		p, n         uintptr
		wantBeg, end uintptr
	}{
		{"aligned", 4 * h, 3 * h, 4 * h, 7 * h},
		{"unaligned ends", 4*h + 4096, 3 * h, 5 * h, 7 * h},
		{"less than one huge page", 4*h + 4096, h, 5 * h, 5 * h},
		{"inside one huge page", 4*h + 4096, 8192, 5 * h, 5 * h},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			beg, end := advisedRange(tt.p, tt.n)
			if beg != tt.wantBeg || end != tt.end {
				t.Errorf("advisedRange(%#x, %#x) = %#x, %#x, want %#x, %#x", tt.p, tt.n, beg, end, tt.wantBeg, tt.end)
			}
		})
	}
}

func TestHugePagesAdvised(t *testing.T) {
	tests := []struct {
		name    string
		setting string
		err     error
		want    bool
	}{
		{"always", "[always] madvise never\n", nil, true},
		{"madvise, the kernel's default", "always [madvise] never\n", nil, true},
		{"never", "always madvise [never]\n", nil, false},
		{"no such file (a kernel without THP)", "", os.ErrNotExist, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := func(p string) ([]byte, error) {
				if p != "/sys/kernel/mm/transparent_hugepage/enabled" {
					t.Errorf("read %s", p)
				}
				return []byte(tt.setting), tt.err
			}
			if got := hugePagesAdvised(read); got != tt.want {
				t.Errorf("hugePagesAdvised(%q) = %v, want %v", tt.setting, got, tt.want)
			}
		})
	}
}

func TestDisableTHP(t *testing.T) {
	tests := []struct {
		godebug string
		want    bool
	}{
		{"", false},
		{"disablethp=1", true},
		{"madvdontneed=1, disablethp=1", true},
		{"disablethp=1,disablethp=0", false},
		{"disablethp=0", false},
		{"notdisablethp=1", false},
	}
	for _, tt := range tests {
		if got := disableTHP(tt.godebug); got != tt.want {
			t.Errorf("disableTHP(%q) = %v, want %v", tt.godebug, got, tt.want)
		}
	}
}

// TestGrowHeapHuge checks the whole chain on this machine: memory the heap
// allocates after growHeapHuge comes from the advised range, and the
// kernel backs it with huge pages. Without the advice, a heap on a
// "madvise" machine gets none: the runtime maps its arenas without asking.
//
// It runs in a process of its own: other tests here start Run, which
// advises and touches ranges of its own that the scavenger later hands back
// in part, and a CI run once saw the whole process's huge pages fall by 82
// MiB while this test touched 48.
func TestGrowHeapHuge(t *testing.T) {
	setting, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !bytes.Contains(setting, []byte("[madvise]")) {
		t.Skipf("needs transparent huge pages set to madvise, where only advised memory gets them (the kernel's default); this machine: %q, %v", bytes.TrimSpace(setting), err)
	}
	if os.Getenv(growHeapHugeChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGrowHeapHuge$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), growHeapHugeChild+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in a process of its own:\n%s", out)
		if err != nil {
			t.Errorf("the child process failed: %v", err)
		} else if bytes.Contains(out, []byte("--- SKIP")) {
			t.Skip("the child process skipped (its output is above)")
		}
		return
	}
	if before := advisedHugeBytes(t); before != 0 {
		t.Fatalf("a fresh process already has %d bytes of advised huge pages", before)
	}
	fallbacks := thpFaultFallbacks(t)
	const size = 64 << 20
	if advised := growHeapHuge(size); advised < size-2*hugePageSize {
		t.Fatalf("growHeapHuge(%d) advised %d bytes", size, advised)
	}
	// The heap grows into the advised range, one large object at a time.
	var held [][]byte
	for range 48 {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		held = append(held, b)
	}
	got := advisedHugeBytes(t)
	if got < 16<<20 {
		// The advice was taken, but a kernel whose memory is too fragmented
		// to compact a 2 MiB page in time falls back to small pages, and
		// counts each fall-back (machine-wide). Without the advice it never
		// tries, so a missing advice still fails here.
		if n := thpFaultFallbacks(t) - fallbacks; n > 0 {
			t.Skipf("the kernel had no huge page to give: %d MiB of 48 in huge pages, and thp_fault_fallback in /proc/vmstat rose by %d while the test touched its heap", got>>20, n)
		}
		t.Errorf("after touching 48 MiB of heap, the advised mappings hold %d MiB of huge pages, want at least 16", got>>20)
	}
	t.Logf("48 MiB of heap touched: %d MiB in advised huge pages", got>>20)
	runtime.KeepAlive(held)
}

// growHeapHugeChild, set in the environment, makes TestGrowHeapHuge do its
// work in this process instead of starting one.
const growHeapHugeChild = "SCENARIO_GCBUDGET_HUGE_CHILD"

// advisedHugeBytes is the memory in transparent huge pages (AnonHugePages)
// of the process's mappings advised MADV_HUGEPAGE ("hg" in VmFlags): what
// growHeapHuge asked for, and nothing the kernel gave elsewhere.
func advisedHugeBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("needs /proc/self/smaps: %v", err)
	}
	var total, huge int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		// AnonHugePages comes before VmFlags, the last field of each mapping.
		if rest, ok := strings.CutPrefix(line, "AnonHugePages:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("AnonHugePages %q: %v", rest, err)
			}
			huge = kb << 10
		}
		if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			if slices.Contains(strings.Fields(rest), "hg") {
				total += huge
			}
			huge = 0
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read /proc/self/smaps: %v", err)
	}
	return total
}

// thpFaultFallbacks is how many times the kernel, asked for a huge page at
// a fault, gave a small one instead (/proc/vmstat's thp_fault_fallback).
func thpFaultFallbacks(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		t.Skipf("needs /proc/vmstat: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "thp_fault_fallback "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			if err != nil {
				t.Fatalf("/proc/vmstat: thp_fault_fallback %q: %v", rest, err)
			}
			return n
		}
	}
	return 0
}
