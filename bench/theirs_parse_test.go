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
		want         time.Duration
	}{
		{"none", "", 0},
		{"two cycles among other lines", "{\"level\":\"warn\"}\n" +
			"gc 1 @0.087s 1%: 0.039+18+0.008 ms clock, 0.078+3.7/0.27/0+0.016 ms cpu, 3->4->0 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P\n" +
			"bench  100 / 100 [=====] 100.00% 0s\n" +
			"gc 2 @0.153s 1%: 0.029+1.0+0.004 ms clock, 0.058+0.083/0.30/0+0.008 ms cpu, 3->3->0 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)\n",
			// 0.078+3.7+0.27+0+0.016 + 0.058+0.083+0.30+0+0.008 ms
			4513 * time.Microsecond},
		{"a line of another shape", "gc 3 @1s 2%: 1+2+3 ms clock, 4+5+6 ms cpu\n", 0},
	} {
		if got := tracedGC([]byte(c.stderr)); got.Round(time.Microsecond) != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
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
