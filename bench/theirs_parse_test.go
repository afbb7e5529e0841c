package bench

import (
	"os"
	"path/filepath"
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
