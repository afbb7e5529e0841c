package shaper

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestReaderWatch wakes a reader that waits on a readable device, and no
// other: not one that is reading, not one whose device is empty.
func TestReaderWatch(t *testing.T) {
	tests := []struct {
		name     string
		parked   bool
		readable bool
		woken    bool
	}{
		{"parked on a readable device", true, true, true},
		{"reading", false, true, false},
		{"parked on an empty device", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			defer pw.Close()
			ctx, cancel := context.WithCancel(context.Background())
			w := newReaderWatch()
			done := make(chan struct{})
			go func() { defer close(done); w.run(ctx) }()
			defer func() { cancel(); <-done }()

			var fd int32
			rc, err := pr.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			rc.Control(func(f uintptr) { fd = int32(f) })
			rw := w.add(fd, pr)
			rw.parked.Store(tt.parked)
			if tt.readable {
				if _, err := pw.Write([]byte{1}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.woken {
				deadline := time.Now().Add(10 * time.Second)
				for w.kicks.Load() == 0 {
					if time.Now().After(deadline) {
						t.Fatal("the reader was not woken within 10s")
					}
					time.Sleep(time.Millisecond)
				}
				// The wake-up is a read deadline in the past.
				if _, err := pr.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("read after the wake-up: %v, want a deadline exceeded", err)
				}
				return
			}
			// Twenty ticks at least, backing off.
			time.Sleep(20*watchTick + watchTickIdle)
			if n := w.kicks.Load(); n != 0 {
				t.Fatalf("woken %d times, want none", n)
			}
			w.remove(rw)
		})
	}
}

// TestNextWatchTick backs off while nobody is found waiting and comes back
// at once when someone is.
func TestNextWatchTick(t *testing.T) {
	tests := []struct {
		name         string
		interval     time.Duration
		empty        int
		found        bool
		wantInterval time.Duration
		wantEmpty    int
	}{
		{"found", 8 * time.Millisecond, 3, true, watchTick, 0},
		{"found at the idle interval", watchTickIdle, 0, true, watchTick, 0},
		{"one more empty tick", watchTick, 3, false, watchTick, 4},
		{"patience spent", watchTick, watchPatience - 1, false, 2 * watchTick, 0},
		{"patience spent at the idle interval", watchTickIdle, watchPatience - 1, false, watchTickIdle, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotInterval, gotEmpty := nextWatchTick(tt.interval, tt.empty, tt.found)
			if gotInterval != tt.wantInterval || gotEmpty != tt.wantEmpty {
				t.Errorf("nextWatchTick(%v, %d, %t) = %v, %d; want %v, %d", tt.interval, tt.empty, tt.found, gotInterval, gotEmpty, tt.wantInterval, tt.wantEmpty)
			}
		})
	}
}

// parked is how many watched readers wait on the poller.
func (w *readerWatch) parked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for rw := range w.waits {
		if rw.parked.Load() {
			n++
		}
	}
	return n
}

// watching is how many readers the watcher knows.
func (w *readerWatch) watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waits)
}
