package gcbudget

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name           string
		live, headroom uint64
		want           int
	}{
		{"nothing marked yet", 0, 128 * mib, maxPercent},
		{"small heap: capped", 4 * mib, 128 * mib, maxPercent},
		{"headroom over live", 32 * mib, 128 * mib, 400},
		{"headroom equals live", 128 * mib, 128 * mib, 100},
		{"large heap: Go's default", 1024 * mib, 128 * mib, 100},
		{"no headroom", 10 * mib, 0, 100},
		{"no headroom, nothing marked yet", 0, 0, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percent(tt.live, tt.headroom); got != tt.want {
				t.Errorf("Percent(%d, %d) = %d, want %d", tt.live, tt.headroom, got, tt.want)
			}
		})
	}
}

func TestHeadroom(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name      string
		allocated uint64
		elapsed   time.Duration
		want      uint64
	}{
		{"one client: a few MB a second", 3 * mib, time.Second, 12 * mib},
		{"a thousand clients: capped", 100 * mib, time.Second, 128 * mib},
		{"just under the cap", 31 * mib, time.Second, 124 * mib},
		{"a short interval scales up", mib, 100 * time.Millisecond, 40 * mib},
		{"idle", 0, time.Second, 0},
		{"no time passed", mib, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Headroom(tt.allocated, tt.elapsed, 128*mib); got != tt.want {
				t.Errorf("Headroom(%d, %v) = %d, want %d", tt.allocated, tt.elapsed, got, tt.want)
			}
		})
	}
}

func TestWorth(t *testing.T) {
	tests := []struct {
		name    string
		share   float64
		current int
		on      bool
		want    bool
	}{
		{"one client at Go's default: 2%", 0.02, 100, false, false},
		{"1000 clients at Go's default: 40%", 0.40, 100, false, true},
		{"at the mark", 0.05, 100, false, true},
		{"just under it", 0.049, 100, false, false},
		{"in force, 8% at 430 is 34% at the default", 0.08, 430, true, true},
		{"in force, 1% at 400 is 4% at the default: kept", 0.01, 400, true, true},
		{"off, 4% at the default: not taken", 0.04, 100, false, false},
		{"in force, 0.5% at 400 is 2% at the default: dropped", 0.005, 400, true, false},
		{"no collector time", 0, 1000, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Worth(tt.share, tt.current, tt.on); got != tt.want {
				t.Errorf("Worth(%v, %d, %v) = %v, want %v", tt.share, tt.current, tt.on, got, tt.want)
			}
		})
	}
}

// node is a small object with a pointer, so that a heap of them costs the
// collector a mark per object.
type node struct {
	next *node
	_    [2]int64
}

func TestNextWait(t *testing.T) {
	for _, tt := range []struct{ last, interval, want time.Duration }{
		{time.Second / firstLookSooner, time.Second, time.Second / 4},
		{time.Second / 4, time.Second, time.Second / 2},
		{time.Second / 2, time.Second, time.Second},
		{time.Second, time.Second, time.Second},
		{600 * time.Millisecond, time.Second, time.Second},
		{0, time.Second, 1},
	} {
		if got := nextWait(tt.last, tt.interval); got != tt.want {
			t.Errorf("nextWait(%v, %v) = %v, want %v", tt.last, tt.interval, got, tt.want)
		}
	}
	// From the first wait, the first four looks come within two intervals.
	at, wait := time.Duration(0), time.Second/firstLookSooner
	for range 4 {
		at += wait
		wait = nextWait(wait, time.Second)
	}
	if at > 2*time.Second {
		t.Errorf("the fourth look comes at %v, want within 2 s", at)
	}
}

// TestRunSetsAndRestores runs the adjuster while the test keeps a live
// heap of many small pointers, which every collection marks, and
// allocates short-lived small objects fast: collections at Go's default
// then take a large share of the test's CPU, so the percent rises above
// the default while the adjuster runs, and is restored after.
func TestRunSetsAndRestores(t *testing.T) {
	// t.Setenv restores GOGC after the test; Run must find it unset.
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)

	var live *node
	for range 200_000 {
		live = &node{next: live}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx, DefaultHeadroom, 10*time.Millisecond); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	var short *node
	for {
		if p := gogc(); p > 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent still %d after 10 s of Run", gogc())
		}
		for range 10_000 {
			short = &node{next: short}
		}
		short = nil
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	runtime.KeepAlive(live)
	if p := gogc(); p != 100 {
		t.Errorf("after Run: GC percent %d, want the 100 it found", p)
	}
}

// TestRunIdleKeepsDefault runs the adjuster while the process allocates
// next to nothing: it keeps Go's default, so that no headroom is faulted in
// for nothing.
func TestRunIdleKeepsDefault(t *testing.T) {
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	// A live heap of some size, as any real process has, so that a few
	// stray kilobytes a tick do not amount to a headroom over it.
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 64<<10)
	}
	runtime.GC()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx, DefaultHeadroom, 10*time.Millisecond); close(done) }()
	for range 30 {
		time.Sleep(10 * time.Millisecond)
		if p := gogc(); p != 100 {
			t.Errorf("GC percent %d while idle, want Go's 100", p)
			break
		}
	}
	cancel()
	<-done
	runtime.KeepAlive(live)
}

func TestRunLeavesUserChoice(t *testing.T) {
	t.Setenv("GOGC", "100")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	Run(ctx, DefaultHeadroom, time.Millisecond) // returns at once
	if p := gogc(); p != 100 {
		t.Errorf("with GOGC set: GC percent %d, want 100", p)
	}
}

// gogc is the GC percent in force.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

func TestCgroupMemoryLimit(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  uint64
	}{
		{"v2 with a limit", map[string]string{
			"/proc/self/cgroup":                          "0::/kubepods/pod1/c1\n",
			"/sys/fs/cgroup/kubepods/pod1/c1/memory.max": "536870912\n",
		}, 512 << 20},
		{"v2 without a limit", map[string]string{
			"/proc/self/cgroup":         "0::/\n",
			"/sys/fs/cgroup/memory.max": "max\n",
		}, 0},
		{"v2, file not readable", map[string]string{
			"/proc/self/cgroup": "0::/\n",
		}, 0},
		{"v1 with a limit", map[string]string{
			"/proc/self/cgroup": "5:devices:/\n4:memory:/docker/abc\n0::/\n",
			"/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "268435456\n",
		}, 256 << 20},
		{"v1 unlimited (the page-rounded int64 maximum)", map[string]string{
			"/proc/self/cgroup": "4:memory:/process_api/x\n0::/\n",
			"/sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0},
		{"v1 with memory among other controllers", map[string]string{
			"/proc/self/cgroup":                             "3:cpu,memory:/c\n",
			"/sys/fs/cgroup/memory/c/memory.limit_in_bytes": "1048576",
		}, 1 << 20},
		{"no cgroup file", map[string]string{}, 0},
		{"garbage", map[string]string{"/proc/self/cgroup": "not a cgroup line\n::\n"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := func(p string) ([]byte, error) {
				if s, ok := tt.files[p]; ok {
					return []byte(s), nil
				}
				return nil, os.ErrNotExist
			}
			if got := cgroupMemoryLimit(read); got != tt.want {
				t.Errorf("cgroupMemoryLimit = %d, want %d", got, tt.want)
			}
		})
	}
}
