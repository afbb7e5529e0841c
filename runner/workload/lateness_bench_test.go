package workload

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/cpuhog"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/stores"
)

var (
	latenessFor = flag.Duration("lateness.for", 5*time.Second, "how long BenchmarkOpenLoopLateness runs each rate, and BenchmarkMachineStalls spins")
	latenessHog = flag.Int("lateness.hog", 0, "CPU hogs (busy processes) to run beside BenchmarkOpenLoopLateness, as a busy CI runner would")
	// As scenario run --realtime.
	latenessRealtime = flag.Bool("lateness.realtime", false, "run BenchmarkOpenLoopLateness at real-time priority (needs CAP_SYS_NICE)")
	latenessSpin     = flag.Duration("lateness.spin", 0, "the busy-poll window of BenchmarkOpenLoopLateness's dispatcher (WithBusyPoll); 0 sleeps through every wait")
	latenessPollIdle = flag.Bool("lateness.poll-idle", false, "hold every CPU's wake-up latency at 0 while BenchmarkOpenLoopLateness, BenchmarkSleeperWakeups or BenchmarkMachineStalls runs (cpuwake, /dev/cpu_dma_latency; needs root), as scenario run --poll-idle does: idle CPUs poll rather than halt")
	latenessYielders = flag.Int("lateness.yielders", 0, "goroutines to run beside BenchmarkOpenLoopLateness in its own process, each busy and yielding its P as the collector's background sweep does (cpuhog.Yielders)")
)

// sleepyStore answers after d, as a store on loopback does in about a
// millisecond, so that requests overlap and workers park and wake.
type sleepyStore struct{ d time.Duration }

func (s sleepyStore) Do(ctx context.Context, _ stores.Op) stores.Result {
	t := time.NewTimer(s.d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return stores.Result{}
}
func (sleepyStore) Close() error { return nil }

// startLag records how late each request was sent: Start - Intended.
type startLag struct {
	mu  sync.Mutex
	lag []time.Duration
}

func (s *startLag) Record(x metrics.Sample) {
	s.mu.Lock()
	s.lag = append(s.lag, x.Start-x.Intended)
	s.mu.Unlock()
}

// BenchmarkOpenLoopLateness runs the open loop at 100, 1,000 and 5,000
// requests/s for -lateness.for against a store that answers in 1 ms, and
// reports how late requests were sent: the share later than the late-start
// threshold (1 ms) and the lag's p50, p99 and max, and what the process
// spent a request doing it: its CPU and context switches, the store's own
// sleeps included (what a change to the engine's wake-ups costs or saves
// shows there). No store shares the
// cores here, so this is the engine's own lateness; -lateness.hog N adds
// N busy processes beside it, and -lateness.realtime runs the engine at
// real-time priority, as scenario run --realtime does, -lateness.spin D
// has the dispatcher spin through the last D before each arrival, and
// -lateness.yielders N runs N busy goroutines in the engine's own
// process, and -lateness.poll-idle keeps idle CPUs from halting.
//
//	go test ./runner/workload -run '^$' -bench OpenLoopLateness -benchtime 1x
func BenchmarkOpenLoopLateness(b *testing.B) {
	cpuhog.Start(b, *latenessHog, *latenessRealtime)
	cpuhog.Yielders(b, *latenessYielders)
	if *latenessPollIdle {
		cpuhog.PollIdle(b)
	}
	for _, rate := range []float64{100, 1000, 5000} {
		b.Run(fmt.Sprintf("rate=%.0f", rate), func(b *testing.B) {
			spec := testSpec()
			spec.Clients = 50
			for b.Loop() {
				lag := &startLag{}
				e, err := New(spec, sleepyStore{time.Millisecond}, func() metrics.Sink { return lag }, time.Now(), WithBusyPoll(*latenessSpin))
				if err != nil {
					b.Fatal(err)
				}
				before := processUsage()
				st, err := e.Run(b.Context(), openLoad(rate, rate, *latenessFor), e.now()+10*time.Millisecond)
				if err != nil {
					b.Fatal(err)
				}
				slices.Sort(lag.lag)
				n := len(lag.lag)
				b.ReportMetric(100*float64(st.LateStarts)/float64(max(st.Sent, 1)), "late-%")
				b.ReportMetric(float64(lag.lag[n/2])/1e3, "lag-p50-µs")
				b.ReportMetric(float64(lag.lag[n*99/100])/1e3, "lag-p99-µs")
				b.ReportMetric(float64(lag.lag[n-1])/1e3, "lag-max-µs")
				used := processUsage().minus(before)
				b.ReportMetric(float64(used.cpu)/1e3/float64(max(st.Sent, 1)), "cpu-µs/req")
				b.ReportMetric(float64(used.switches)/float64(max(st.Sent, 1)), "switches/req")
			}
		})
	}
}

// usage is what this process has used so far: CPU, user and system, and
// context switches, voluntary and not.
type usage struct {
	cpu      time.Duration
	switches int64
}

func processUsage() usage {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return usage{}
	}
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), switches: int64(ru.Nvcsw + ru.Nivcsw)}
}

func (u usage) minus(v usage) usage {
	return usage{cpu: u.cpu - v.cpu, switches: u.switches - v.switches}
}

// BenchmarkMachineStalls is the reference for BenchmarkOpenLoopLateness: a
// thread that never sleeps, reading the clock back to back for
// -lateness.for, and what it sees between two reads that are more than
// 200 µs apart: the times the machine did not run it although it wanted
// to run. Nothing else in this process runs meanwhile, so on a quiet
// machine that is the kernel's and, in a virtual machine, the host's doing
// (a vCPU taken away), which no sleeper in this process can make up for:
// a request due in such a stall is sent late. It reports the stalls longer
// than the late-start threshold (DefaultLateThreshold, 1 ms) per second,
// the share of time stalled and the longest stall. Beside them it reports
// the machine's steal share over the same time (/proc/stat, as a run's
// results do): the hypervisor's own account of the time it withheld, which
// the spinning thread's stalls are a second measure of.
//
//	go test ./runner/workload -run '^$' -bench MachineStalls -benchtime 1x
func BenchmarkMachineStalls(b *testing.B) {
	if *latenessPollIdle {
		cpuhog.PollIdle(b)
	}
	for b.Loop() {
		machine := metrics.NewMachineSampler()
		machine.SampleAt(0)
		began := time.Now()
		st := spinForStalls(*latenessFor, 200*time.Microsecond)
		machine.SampleAt(time.Since(began))
		b.ReportMetric(float64(st.late)/latenessFor.Seconds(), fmt.Sprintf("stalls>%v/s", DefaultLateThreshold))
		b.ReportMetric(100*st.total.Seconds()/latenessFor.Seconds(), "stalled-%")
		b.ReportMetric(float64(st.longest)/1e3, "longest-µs")
		if m := machine.Result(); m != nil {
			b.ReportMetric(100*m.Summary.StealMeanShare, "steal-%")
			b.ReportMetric(100*m.Summary.BusyMeanShare, "busy-%")
			if w := m.Summary.WaitMeanShare; w != nil {
				b.ReportMetric(100**w, "cpu-wait-%")
			}
		}
	}
}

type stalls struct {
	late           int // longer than DefaultLateThreshold
	total, longest time.Duration
}

// spinForStalls spins on a locked thread for d and sums the gaps between
// consecutive clock reads longer than floor.
func spinForStalls(d, floor time.Duration) stalls {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var st stalls
	start := time.Now()
	last := start
	for last.Sub(start) < d {
		now := time.Now()
		if g := now.Sub(last); g > floor {
			st.total += g
			st.longest = max(st.longest, g)
			if g > DefaultLateThreshold {
				st.late++
			}
		}
		last = now
	}
	return st
}
