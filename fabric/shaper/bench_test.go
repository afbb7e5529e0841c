package shaper

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/cpuhog"
	"github.com/coordlab/scenario/internal/hrsleep"
)

var (
	latenessHog      = flag.Int("lateness.hog", 0, "CPU hogs (busy processes) to run beside BenchmarkLateness, as a busy CI runner would")
	latenessPollIdle = flag.Bool("lateness.poll-idle", false, "hold every CPU's wake-up latency at 0 while BenchmarkLateness runs (cpuwake, /dev/cpu_dma_latency; needs root), as scenario run --poll-idle does: idle CPUs poll rather than halt")
	latenessRealtime = flag.Bool("lateness.realtime", false, "run BenchmarkLateness at real-time priority, as scenario run --realtime does (needs CAP_SYS_NICE)")
	latenessSpin     = flag.Duration("lateness.spin", 100*time.Microsecond, "the busy-poll window of BenchmarkLateness's spinning schedulers (timer=spin: hrsleep.NewSpinning)")
	latenessYielders = flag.Int("lateness.yielders", 0, "goroutines that keep BenchmarkLateness's own Ps busy, yielding between 20 µs turns, as the garbage collector's background sweep does")
)

// benchDev is a device with no channel per packet: as a source it returns
// the same packet left times, within a window of packets in flight that
// the destination's Writes refill; as a destination it counts.
type benchDev struct {
	pkt    []byte
	left   atomic.Int64
	credit chan struct{} // shared by source and destination
	stop   chan struct{}
	got    atomic.Int64
	want   int64
	done   chan struct{}
}

func (d *benchDev) Read(b []byte) (int, error) {
	if d.left.Add(-1) < 0 {
		<-d.stop
		return 0, os.ErrClosed
	}
	<-d.credit
	return copy(b, d.pkt), nil
}

func (d *benchDev) Write(b []byte) (int, error) {
	d.credit <- struct{}{}
	if d.got.Add(1) == d.want {
		close(d.done)
	}
	return len(b), nil
}

// BenchmarkForward measures packets per second through one pair with a
// zero link, written at once (direct) or through the scheduler (engaged),
// for a small packet, one of the MTU and a TSO segment (which the engaged
// path queues in the reader's own buffer instead of copying it).
func BenchmarkForward(b *testing.B) {
	for _, engage := range []bool{false, true} {
		for _, size := range []int{100, 1400, 32000} {
			name := fmt.Sprintf("%s/%dB", map[bool]string{false: "direct", true: "engaged"}[engage], size)
			b.Run(name, func(b *testing.B) { benchForward(b, engage, size) })
		}
	}
}

func benchForward(b *testing.B, engage bool, size int) {
	const window = 1024
	credit := make(chan struct{}, window)
	for range window {
		credit <- struct{}{}
	}
	stop := make(chan struct{})
	src := &benchDev{pkt: ipv4(0, 1, size, 0), credit: credit, stop: stop}
	src.left.Store(int64(b.N))
	dst := &benchDev{credit: credit, stop: stop, want: int64(b.N), done: make(chan struct{})}
	r := New(Options{Engage: engage})
	if err := r.AddHost(0, hostAddr(0), src); err != nil {
		b.Fatal(err)
	}
	if err := r.AddHost(1, hostAddr(1), dst); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	go func() { done <- r.Run(ctx) }()
	<-dst.done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pkts/s")
	cancel()
	close(stop)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// pacedDev is a source that releases packet seq at start + seq/rate
// (in bursts of about a millisecond, as sleeps are coarse) and records
// when each was read; as a destination it records arrivals.
type pacedDev struct {
	rate  float64
	n     int
	start time.Time
	seq   int
	sent  []time.Time // by seq, written by the reader only
	stop  chan struct{}

	arrived []time.Time // by seq, written by the pair's scheduler only
	got     atomic.Int64
	done    chan struct{}
}

func (d *pacedDev) Read(b []byte) (int, error) {
	if d.seq >= len(d.sent) { // all sent, or a destination only
		<-d.stop
		return 0, os.ErrClosed
	}
	if w := time.Until(d.start.Add(time.Duration(float64(d.seq) / d.rate * 1e9))); w > 0 {
		time.Sleep(w)
	}
	n := copy(b, ipv4(0, 1, 200, uint32(d.seq)))
	d.sent[d.seq] = time.Now()
	d.seq++
	return n, nil
}

func (d *pacedDev) Write(b []byte) (int, error) {
	d.arrived[seqOf(b)] = time.Now()
	if d.got.Add(1) == int64(d.n) {
		close(d.done)
	}
	return len(b), nil
}

// BenchmarkLateness sends b.N packets at a fixed rate over a 10 ms link
// and reports how late they are: late-* as the router measures it (due
// time to the return of Write), e2e-* as the devices see it (Read to Write, minus the
// delay). cpu-ns/pkt is the process's CPU time per packet, the paced
// source's included. The schedulers sleep on what runs use (timer=dual: a
// timerfd and a read deadline) or, for comparison, on a timerfd alone
// (timerfd, what runs used until 2026-12-05) or on runtime timers (go),
// or spin through the last -lateness.spin before each due time (spin).
// -lateness.hog N adds N busy processes beside it, -lateness.yielders N
// keeps its own Ps busy, -lateness.realtime runs it at real-time priority,
// -lateness.poll-idle keeps idle CPUs from halting (cpuwake).
func BenchmarkLateness(b *testing.B) {
	cpuhog.Start(b, *latenessHog, *latenessRealtime)
	cpuhog.Yielders(b, *latenessYielders)
	if *latenessPollIdle {
		cpuhog.PollIdle(b)
	}
	sleepers := []struct {
		name string
		new  func(context.Context) hrsleep.Sleeper
	}{
		{"dual", hrsleep.NewDual},
		{"timerfd", hrsleep.New},
		{"go", hrsleep.NewTimer},
		{"spin", func(ctx context.Context) hrsleep.Sleeper { return hrsleep.NewSpinning(ctx, *latenessSpin) }},
	}
	for _, rate := range []int{1000, 50000} {
		for _, sl := range sleepers {
			b.Run(fmt.Sprintf("pps=%d/timer=%s", rate, sl.name), func(b *testing.B) { benchLateness(b, float64(rate), sl.new) })
		}
	}
}

func benchLateness(b *testing.B, rate float64, newSleeper func(context.Context) hrsleep.Sleeper) {
	const delay = 10 * time.Millisecond
	stop := make(chan struct{})
	src := &pacedDev{rate: rate, n: b.N, sent: make([]time.Time, b.N), stop: stop}
	dst := &pacedDev{n: b.N, arrived: make([]time.Time, b.N), stop: stop, done: make(chan struct{})}
	r := New(Options{})
	r.newSleeper = newSleeper
	if err := r.AddHost(0, hostAddr(0), src); err != nil {
		b.Fatal(err)
	}
	if err := r.AddHost(1, hostAddr(1), dst); err != nil {
		b.Fatal(err)
	}
	r.SetLink(0, 1, Link{Delay: delay})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	src.start = time.Now()
	go func() { done <- r.Run(ctx) }()
	<-dst.done
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cancel()
	close(stop)
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/pkt")
	st := r.Stats()[[2]int{0, 1}]
	e2e := make([]time.Duration, b.N)
	for i := range e2e {
		e2e[i] = dst.arrived[i].Sub(src.sent[i]) - delay
	}
	s := summarize(e2e)
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	b.ReportMetric(us(st.LateP50), "late-p50-us")
	b.ReportMetric(us(st.LateP99), "late-p99-us")
	b.ReportMetric(us(st.LateMax), "late-max-us")
	b.ReportMetric(us(s.p50), "e2e-p50-us")
	b.ReportMetric(us(s.p99), "e2e-p99-us")
	b.ReportMetric(float64(b.N)/time.Since(src.start).Seconds(), "pkts/s")
}
