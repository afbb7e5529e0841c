package workload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/cpuhog"
	"github.com/coordlab/scenario/runner/metrics"
	"golang.org/x/sys/unix"
)

// BenchmarkSleeperWakeups is BenchmarkMachineStalls' counterpart for a
// thread that sleeps: one locked OS thread of an otherwise idle process
// blocks in read(2) on a timerfd that expires every 200 µs (the open
// loop's spacing at 5,000 requests/s), and times each wake-up against the
// expiry it answers. Nothing of Go's scheduler or poller is on that path,
// so a late wake-up is the kernel's and, in a virtual machine, the host's:
// a vCPU that halted while the thread slept is woken late. A spinning
// thread never lets its vCPU halt, so BenchmarkMachineStalls does not see
// this; a request due in such a wake-up is sent late by the open loop as
// by anything else that sleeps. It reports the wake-ups later than the
// late-start threshold (1 ms) per second, the lateness's p50, p99, p99.9
// and largest (each timed from the expiry the thread slept for), the share
// of expiries that passed while it still slept for an earlier one, the
// share answered more than 1 ms after they came (late-%: what
// BenchmarkOpenLoopLateness at 5,000/s would count as late starts had its
// dispatcher slept as this thread did), and the machine's steal share over
// the same time. With -lateness.poll-idle the CPUs poll when idle
// instead of halting (cpuwake), which is what the host's wake-up of a
// halted vCPU costs, seen from the other side.
//
//	go test ./runner/workload -run '^$' -bench SleeperWakeups -benchtime 1x
func BenchmarkSleeperWakeups(b *testing.B) {
	if *latenessPollIdle {
		cpuhog.PollIdle(b)
	}
	for b.Loop() {
		machine := metrics.NewMachineSampler()
		machine.SampleAt(0)
		began := time.Now()
		w, err := timerfdWakeups(*latenessFor, 200*time.Microsecond)
		if err != nil {
			b.Fatal(err)
		}
		machine.SampleAt(time.Since(began))
		late := w.lateness
		slices.Sort(late)
		n := len(late)
		within, _ := slices.BinarySearch(late, DefaultLateThreshold+1)
		over := n - within
		b.ReportMetric(float64(over)/latenessFor.Seconds(), fmt.Sprintf("wakeups>%v/s", DefaultLateThreshold))
		b.ReportMetric(float64(late[n/2])/1e3, "late-p50-µs")
		b.ReportMetric(float64(late[n*99/100])/1e3, "late-p99-µs")
		b.ReportMetric(float64(late[n*999/1000])/1e3, "late-p999-µs")
		b.ReportMetric(float64(late[n-1])/1e3, "late-max-µs")
		b.ReportMetric(100*float64(w.missed)/float64(w.expiries), "missed-%")
		// What an open loop at one request an expiry would count as late
		// starts had it slept as this thread did: its floor on this
		// machine, short of spinning.
		b.ReportMetric(100*float64(w.late)/float64(w.expiries), "late-%")
		if m := machine.Result(); m != nil {
			b.ReportMetric(100*m.Summary.StealMeanShare, "steal-%")
		}
	}
}

type wakeups struct {
	lateness []time.Duration // of each wake-up, past the first expiry it answers
	missed   uint64          // expiries answered by the wake-up of an earlier one
	late     uint64          // expiries answered more than DefaultLateThreshold after they came
	expiries uint64
}

// timerfdWakeups blocks on a periodic timerfd on a locked thread for d
// and times every wake-up.
func timerfdWakeups(d, period time.Duration) (wakeups, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := monotonicNow() + int64(period)
	fd, err := periodicTimerfd(start, period)
	if err != nil {
		return wakeups{}, err
	}
	defer unix.Close(fd)
	var w wakeups
	for end := start + int64(d); ; {
		k, err := waitExpiries(fd)
		if err != nil {
			return wakeups{}, err
		}
		t := monotonicNow()
		w.missed += k - 1
		// Timed from the expiry the thread slept for: what a request due
		// then waits.
		first := t - start - int64(w.expiries)*int64(period)
		w.lateness = append(w.lateness, time.Duration(first))
		for j := range int64(k) {
			if first-j*int64(period) > int64(DefaultLateThreshold) {
				w.late++
			}
		}
		w.expiries += k
		if t >= end {
			return w, nil
		}
	}
}

// monotonicNow reads CLOCK_MONOTONIC, the clock timerfds expire on.
func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// BenchmarkPairedWakeups asks whether a second sleeper on the other vCPU
// would make up for a late one: two locked threads, each bound to its own
// CPU (pinned=true) or placed by the kernel (pinned=false), block on
// timerfds that expire at the same times every 200 µs, as
// BenchmarkSleeperWakeups' one does. An expiry is late for the pair only
// when both threads answered it more than 1 ms after it came. It reports
// the late share, p99 and largest lateness of each thread alone (a, b)
// and of the pair.
//
//	go test ./runner/workload -run '^$' -bench PairedWakeups -benchtime 1x -args -lateness.for 20s
func BenchmarkPairedWakeups(b *testing.B) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		b.Fatal(err)
	}
	var cpus []int // the first two this process may run on
	for c := 0; c < 1024 && len(cpus) < 2; c++ {
		if allowed.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		b.Skip("this process may run on one CPU only: a pair needs two")
	}
	for _, pinned := range []bool{true, false} {
		b.Run(fmt.Sprintf("pinned=%v", pinned), func(b *testing.B) {
			const period = 200 * time.Microsecond
			for b.Loop() {
				start := monotonicNow() + int64(5*time.Millisecond)
				n := int(*latenessFor / period)
				var (
					wg   sync.WaitGroup
					at   [2][]int64
					errs [2]error
				)
				for i, cpu := range cpus {
					wg.Go(func() { at[i], errs[i] = answerTimes(cpu, pinned, start, period, n) })
				}
				wg.Wait()
				if err := errors.Join(errs[:]...); err != nil {
					b.Fatal(err)
				}
				var lag [3][]time.Duration // a, b, the pair
				for j := range n {
					due := start + int64(j)*int64(period)
					lag[0] = append(lag[0], time.Duration(at[0][j]-due))
					lag[1] = append(lag[1], time.Duration(at[1][j]-due))
					lag[2] = append(lag[2], time.Duration(min(at[0][j], at[1][j])-due))
				}
				for i, name := range []string{"a", "b", "pair"} {
					l := lag[i]
					slices.Sort(l)
					within, _ := slices.BinarySearch(l, DefaultLateThreshold+1)
					b.ReportMetric(100*float64(n-within)/float64(n), name+"-late-%")
					b.ReportMetric(float64(l[n*99/100])/1e3, name+"-p99-µs")
					b.ReportMetric(float64(l[n-1])/1e3, name+"-max-µs")
				}
			}
		})
	}
}

// answerTimes returns when each of the first n expiries of a timerfd that
// expires every period from start was answered by a locked thread blocked
// in read(2), bound to cpu if pinned.
func answerTimes(cpu int, pinned bool, start int64, period time.Duration, n int) ([]int64, error) {
	// Never unlocked: a pinned thread must not go back to the runtime, so
	// it exits with this goroutine.
	runtime.LockOSThread()
	if pinned {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return nil, fmt.Errorf("bind to CPU %d: %w", cpu, err)
		}
	}
	fd, err := periodicTimerfd(start, period)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	at := make([]int64, 0, n+64)
	for len(at) < n {
		k, err := waitExpiries(fd)
		if err != nil {
			return nil, err
		}
		t := monotonicNow()
		for range k {
			at = append(at, t)
		}
	}
	return at[:n], nil
}

// periodicTimerfd returns a blocking timerfd (no poller: the calling
// thread itself sleeps in read(2)) that expires at start on
// CLOCK_MONOTONIC and every period after.
func periodicTimerfd(start int64, period time.Duration) (int, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("timerfd: %w", err)
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(start), Interval: unix.NsecToTimespec(int64(period))}
	if err := unix.TimerfdSettime(fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("timerfd: %w", err)
	}
	return fd, nil
}

// waitExpiries blocks until fd expires and returns how many expiries
// passed since the last read.
func waitExpiries(fd int) (uint64, error) {
	var buf [8]byte
	if _, err := unix.Read(fd, buf[:]); err != nil {
		return 0, fmt.Errorf("timerfd: %w", err)
	}
	return binary.LittleEndian.Uint64(buf[:]), nil
}
