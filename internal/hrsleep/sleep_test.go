package hrsleep

import (
	"context"
	"testing"
	"time"
)

func TestSleepers(t *testing.T) {
	for name, newSleeper := range map[string]func(context.Context) Sleeper{"New": New, "NewDual": NewDual, "NewTimer": NewTimer} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			s := newSleeper(ctx)
			defer s.Close()
			for _, d := range []time.Duration{0, time.Microsecond, 2 * time.Millisecond} {
				start := time.Now()
				if !s.Sleep(int64(d)) {
					t.Fatalf("Sleep(%v) = false before ctx ended", d)
				}
				if got := time.Since(start); got < d {
					t.Errorf("Sleep(%v) returned after %v: early", d, got)
				}
			}
			time.AfterFunc(10*time.Millisecond, cancel)
			if s.Sleep(int64(time.Hour)) {
				t.Error("Sleep(1h) = true, want false once ctx ended")
			}
			if s.Sleep(int64(time.Hour)) {
				t.Error("Sleep after ctx ended = true, want false")
			}
		})
	}
}
