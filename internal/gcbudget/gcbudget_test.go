package gcbudget

import (
	"context"
	"os"
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percent(tt.live, tt.headroom); got != tt.want {
				t.Errorf("Percent(%d, %d) = %d, want %d", tt.live, tt.headroom, got, tt.want)
			}
		})
	}
}

// TestRunSetsAndRestores runs the adjuster on this test's own small heap:
// the percent rises above the default while it runs and is restored after.
func TestRunSetsAndRestores(t *testing.T) {
	// t.Setenv restores GOGC after the test; Run must find it unset.
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx, DefaultHeadroom, 10*time.Millisecond); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p := gogc(); p > 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent still %d after 10 s of Run", gogc())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if p := gogc(); p != 100 {
		t.Errorf("after Run: GC percent %d, want the 100 it found", p)
	}
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
