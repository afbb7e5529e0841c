package hrsleep

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestSleepers(t *testing.T) {
	spinning := func(window time.Duration) func(context.Context) Sleeper {
		return func(ctx context.Context) Sleeper { return NewSpinning(ctx, window) }
	}
	for name, newSleeper := range map[string]func(context.Context) Sleeper{
		"New": New, "NewDual": NewDual, "NewTimer": NewTimer,
		// A window shorter than some sleeps and longer than others, and
		// one longer than all of them: the whole sleep spun.
		"NewSpinning/100us": spinning(100 * time.Microsecond), "NewSpinning/1h": spinning(time.Hour),
	} {
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

// askedSleeper records what it is asked to sleep, and sleeps it.
type askedSleeper struct {
	Sleeper
	asked []int64
}

func (s *askedSleeper) Sleep(ns int64) bool {
	s.asked = append(s.asked, ns)
	return s.Sleeper.Sleep(ns)
}

// TestSpinningSleepsUpToItsWindow checks that a spinning sleeper sleeps
// all but its window and spins the rest, never returning early: a sleep
// shorter than the window is spun whole.
func TestSpinningSleepsUpToItsWindow(t *testing.T) {
	const window = 2 * time.Millisecond
	tests := []struct {
		sleep time.Duration
		asked []int64 // what the inner sleeper is asked
	}{
		{10 * time.Millisecond, []int64{int64(8 * time.Millisecond)}},
		{window, nil},
		{time.Millisecond, nil},
		{0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.sleep.String(), func(t *testing.T) {
			inner := &askedSleeper{Sleeper: NewTimer(context.Background())}
			s := &spinSleeper{ctx: context.Background(), sleep: inner, window: int64(window)}
			start := time.Now()
			if !s.Sleep(int64(tt.sleep)) {
				t.Fatal("Sleep = false before ctx ended")
			}
			if got := time.Since(start); got < tt.sleep {
				t.Errorf("returned after %v: early", got)
			}
			if !slices.Equal(inner.asked, tt.asked) {
				t.Errorf("inner sleeper asked %v, want %v", inner.asked, tt.asked)
			}
		})
	}
	t.Run("zero window", func(t *testing.T) {
		if _, ok := NewSpinning(context.Background(), 0).(*spinSleeper); ok {
			t.Error("NewSpinning(0) spins; want the sleeper NewDual makes")
		}
	})
	t.Run("ctx ends while spinning", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		s := NewSpinning(ctx, time.Hour)
		defer s.Close()
		time.AfterFunc(10*time.Millisecond, cancel)
		if s.Sleep(int64(time.Minute)) {
			t.Error("Sleep(1m) inside the window = true, want false once ctx ended")
		}
	})
}
