package hrsleep

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/cpuhog"
)

var (
	benchFor   = flag.Duration("sleep.for", 3*time.Second, "how long each case of BenchmarkSleepLateness sleeps")
	benchEvery = flag.Duration("sleep.every", 200*time.Microsecond, "how long each sleep of BenchmarkSleepLateness is")
	benchSpin  = flag.Duration("sleep.spin", 100*time.Microsecond, "the busy-poll window of BenchmarkSleepLateness's spinning sleeper (NewSpinning)")
)

// BenchmarkSleepLateness sleeps -sleep.every over and over for -sleep.for
// on each sleeper, with nothing else to run ("idle") and beside GOMAXPROCS
// goroutines that yield to runnable goroutines only, as the collector's
// background sweep does ("yielders"), and reports how late the wake-ups
// were: p50, p99, the latest, and the share later than 1 ms (what the open
// loop counts as a late start).
//
//	go test ./internal/hrsleep -run '^$' -bench SleepLateness -benchtime 1x
func BenchmarkSleepLateness(b *testing.B) {
	sleepers := []struct {
		name string
		new  func(context.Context) Sleeper
	}{
		{"dual", NewDual},
		{"timerfd", New},
		{"timer", NewTimer},
		{"spin", func(ctx context.Context) Sleeper { return NewSpinning(ctx, *benchSpin) }},
	}
	for _, busy := range []string{"idle", "yielders"} {
		for _, sl := range sleepers {
			b.Run(fmt.Sprintf("%s/%s", busy, sl.name), func(b *testing.B) {
				if busy == "yielders" {
					cpuhog.Yielders(b, runtime.GOMAXPROCS(0))
				}
				for b.Loop() {
					cpu0 := processCPU()
					lag := sleepLags(b.Context(), sl.new, *benchEvery, *benchFor)
					reportLags(b, lag)
					// What the sleeper costs, the yielders' share included.
					b.ReportMetric(100*float64(processCPU()-cpu0)/float64(*benchFor), "cpu-%")
				}
			})
		}
	}
}

// sleepLags sleeps every on a new sleeper for d and returns how late each
// wake-up was, sorted.
func sleepLags(ctx context.Context, newSleeper func(context.Context) Sleeper, every, d time.Duration) []time.Duration {
	s := newSleeper(ctx)
	defer s.Close()
	start := time.Now()
	due := every
	var lag []time.Duration
	for due < d {
		if !s.Sleep(int64(due - time.Since(start))) {
			break
		}
		now := time.Since(start)
		lag = append(lag, now-due)
		for due <= now {
			due += every
		}
	}
	slices.Sort(lag)
	return lag
}

func reportLags(b *testing.B, lag []time.Duration) {
	n := len(lag)
	if n == 0 {
		b.Fatal("no wake-ups")
	}
	// The lags sorted: those up to 1 ms come first.
	within, _ := slices.BinarySearch(lag, time.Millisecond+1)
	late := n - within
	b.ReportMetric(100*float64(late)/float64(n), "late>1ms-%")
	b.ReportMetric(float64(lag[n/2])/1e3, "p50-µs")
	b.ReportMetric(float64(lag[n*99/100])/1e3, "p99-µs")
	b.ReportMetric(float64(lag[n-1])/1e3, "max-µs")
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
