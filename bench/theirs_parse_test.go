package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseTheirs reads output captured from `benchmark --precise put` of
// etcd 3.5.17, progress bar (with carriage returns) included.
func TestParseTheirs(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "etcdbench", "put-precise.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseTheirs(out)
	if err != nil {
		t.Fatal(err)
	}
	want := measurement{
		requests: 500,
		elapsed:  653874090 * time.Nanosecond,
		rps:      764.673211015289,
		p50:      1008479 * time.Nanosecond,
		p99:      7126767 * time.Nanosecond,
	}
	if m != want {
		t.Errorf("parseTheirs = %+v, want %+v", m, want)
	}
}

func TestParseTheirsRejectsOtherFormats(t *testing.T) {
	for _, tt := range []struct{ name, out string }{
		{name: "empty", out: ""},
		{name: "no latency", out: "Summary:\n  Total:\t1.0 secs.\n  Requests/sec:\t10\n"},
		{name: "bad number", out: "Summary:\n  Total:\tabc secs.\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if m, err := parseTheirs([]byte(tt.out)); err == nil {
				t.Errorf("parseTheirs(%q) = %+v, want an error", tt.out, m)
			}
		})
	}
}

func TestTracedGC(t *testing.T) {
	for _, c := range []struct {
		name, stderr string
		want         gcTraced
	}{
		{"none", "", gcTraced{}},
		{"two cycles among other lines", "{\"level\":\"warn\"}\n" +
			"gc 1 @0.087s 1%: 0.039+18+0.008 ms clock, 0.078+3.7/0.27/0+0.016 ms cpu, 3->4->2 MB, 4 MB goal, 1 MB stacks, 0 MB globals, 2 P\n" +
			"bench  100 / 100 [=====] 100.00% 0s\n" +
			"gc 2 @0.153s 1%: 0.029+1.0+0.004 ms clock, 0.058+0.083/0.30/0+0.008 ms cpu, 9->10->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)\n",
			// 0.078+3.7+0.27+0+0.016 + 0.058+0.083+0.30+0+0.008 ms;
			// a forced collection drops what came before it.
			gcTraced{cpu: 4513 * time.Microsecond, cycles: 2, liveMB: 1, stacksMB: 1, allocMB: 0}},
		{"after a forced collection", "gc 1 @0.01s 1%: 1+1+1 ms clock, 0.1+0.1/0.1/0+0.1 ms cpu, 131->131->129 MB, 131 MB goal, 0 MB stacks, 0 MB globals, 2 P\n" +
			"gc 2 @0.02s 1%: 1+1+1 ms clock, 0.1+0.1/0.1/0+0.1 ms cpu, 130->130->1 MB, 259 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)\n" +
			"gc 3 @2.7s 1%: 1+1+1 ms clock, 0.1+0.1/0.1/0+0.1 ms cpu, 140->142->21 MB, 144 MB goal, 5 MB stacks, 0 MB globals, 2 P\n" +
			"gc 4 @6.1s 1%: 1+1+1 ms clock, 0.1+0.1/0.1/0+0.1 ms cpu, 173->175->20 MB, 184 MB goal, 4 MB stacks, 0 MB globals, 2 P\n",
			// (140-1) + (173-21) MB
			gcTraced{cpu: 1600 * time.Microsecond, cycles: 4, liveMB: 20, stacksMB: 5, allocMB: 291}},
		{"a line split by another process's log", "gc 1 @0.019s 11%: 0.23+5.0+0.005 16:30:22 INFO: [core] Channel created\n" +
			"gc 2 @0.029s 11%: 0.18+1.5+0.004 ms clock, 0.36+0.1/0.2/0+0.01 ms cpu, 4->4->3 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P\n",
			gcTraced{cpu: 670 * time.Microsecond, cycles: 2, liveMB: 3, stacksMB: 0, allocMB: 4}},
		{"a line of another shape", "gc 3 @1s 2%: 1+2+3 ms clock, 4+5+6 ms cpu\n", gcTraced{}},
	} {
		got := tracedGC([]byte(c.stderr))
		got.cpu = got.cpu.Round(time.Microsecond)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestWithoutGCTrace(t *testing.T) {
	log := "starting\ngc 1 @0.087s 1%: 0.039+18+0.008 ms clock, 0.078+3.7/0.27/0+0.016 ms cpu, 3->4->2 MB, 4 MB goal, 1 MB stacks, 0 MB globals, 2 P\ngc failed: no leader\n"
	if got, want := withoutGCTrace(log), "starting\ngc failed: no leader\n"; got != want {
		t.Errorf("withoutGCTrace = %q, want %q", got, want)
	}
}

func TestWithGCTrace(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"A=1"}, "GODEBUG=gctrace=1"},
		{[]string{"GODEBUG=madvdontneed=1", "A=1"}, "GODEBUG=madvdontneed=1,gctrace=1"},
		{[]string{"GODEBUG="}, "GODEBUG=gctrace=1"},
		{[]string{"GODEBUG=disablethp=0", "A=1", "GODEBUG=disablethp=1"}, "GODEBUG=disablethp=0,disablethp=1,gctrace=1"},
	} {
		var debug []string
		for _, kv := range withGCTrace(c.env) {
			if strings.HasPrefix(kv, "GODEBUG=") {
				debug = append(debug, kv)
			}
		}
		if len(debug) != 1 || debug[0] != c.want {
			t.Errorf("withGCTrace(%q) has %q, want only %q", c.env, debug, c.want)
		}
	}
}
