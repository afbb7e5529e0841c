package gcbudget

import (
	"bufio"
	"bytes"
	"os"
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
func TestGrowHeapHuge(t *testing.T) {
	setting, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || !bytes.Contains(setting, []byte("[madvise]")) {
		t.Skipf("needs transparent huge pages set to madvise, where only advised memory gets them (the kernel's default); this machine: %q, %v", bytes.TrimSpace(setting), err)
	}
	before := anonHugeBytes(t)
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
	got := anonHugeBytes(t) - before
	if got < 16<<20 {
		t.Errorf("after touching 48 MiB of heap, the process gained %d MiB of huge pages, want at least 16", got>>20)
	}
	t.Logf("48 MiB of heap touched: %d MiB in huge pages", got>>20)
	_ = held
}

// anonHugeBytes is the process's anonymous memory in transparent huge
// pages (smaps_rollup's AnonHugePages).
func anonHugeBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Skipf("needs /proc/self/smaps_rollup: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "AnonHugePages:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("AnonHugePages %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no AnonHugePages in /proc/self/smaps_rollup")
	return 0
}
