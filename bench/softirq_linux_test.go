package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// sampleSoftirq reads what the kernel's receive path has done so far,
// machine-wide: /proc/net/softnet_stat's per-CPU counts of frames dropped
// because a CPU's backlog was full and of times net_rx_action stopped with
// frames still queued (its budget of frames or time spent), and the CPU
// the ksoftirqd threads have run (/proc/PID/schedstat, in nanoseconds).
// A frame handed to a veth waits in the backlog; when the CPU that queued
// it cannot process it before returning to user space, ksoftirqd does, at
// the scheduler's convenience, after the shaper has counted the frame as
// delivered. A TUN write runs the receiving stack inside the write. So
// these counts tell whether batched deliveries were deferred where TUN
// writes were not.
func sampleSoftirq() (softirqSample, error) {
	var s softirqSample
	stat, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		return s, fmt.Errorf("read softnet_stat: %w", err)
	}
	if s.dropped, s.squeezed, err = parseSoftnet(stat); err != nil {
		return s, err
	}
	pids, err := filepath.Glob("/proc/[0-9]*/comm")
	if err != nil {
		return s, err
	}
	for _, comm := range pids {
		name, err := os.ReadFile(comm)
		if err != nil || !bytes.HasPrefix(name, []byte("ksoftirqd/")) {
			continue // gone since the glob, or another thread
		}
		sched, err := os.ReadFile(filepath.Join(filepath.Dir(comm), "schedstat"))
		if err != nil {
			return s, fmt.Errorf("read %s's schedstat: %w", strings.TrimSpace(string(name)), err)
		}
		ns, err := strconv.ParseInt(strings.Fields(string(sched) + " ")[0], 10, 64)
		if err != nil {
			return s, fmt.Errorf("parse %s's schedstat %q: %w", strings.TrimSpace(string(name)), sched, err)
		}
		s.ksoftirqd += time.Duration(ns)
	}
	return s, nil
}
