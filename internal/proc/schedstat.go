package proc

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// Schedstat is what the scheduler counted for a set of threads: the time
// they ran on a CPU and the time they were runnable but waited for one
// (/proc/TID/schedstat, kept whenever the kernel has CONFIG_SCHED_INFO).
// The wait is the figure that says whether the threads, rather than the
// machine as a whole, were short of CPU.
type Schedstat struct {
	Run     time.Duration
	Wait    time.Duration
	Threads int // threads read
}

// ParseSchedstat parses one /proc/TID/schedstat: "run_ns wait_ns slices".
func ParseSchedstat(b []byte) (run, wait time.Duration, err error) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, 0, fmt.Errorf("short schedstat %q", b)
	}
	r, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("schedstat run time: %w", err)
	}
	w, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("schedstat wait time: %w", err)
	}
	return time.Duration(r), time.Duration(w), nil
}

// addThread adds one thread's schedstat b to the sum.
func (s *Schedstat) addThread(b []byte) error {
	run, wait, err := ParseSchedstat(b)
	if err != nil {
		return err
	}
	s.Run += run
	s.Wait += wait
	s.Threads++
	return nil
}

// add adds another sum to this one.
func (s *Schedstat) add(o Schedstat) {
	s.Run += o.Run
	s.Wait += o.Wait
	s.Threads += o.Threads
}

// ParseThreads parses a list of thread ids, one a line, as in a control
// group's cgroup.threads or tasks file.
func ParseThreads(b []byte) []int {
	var tids []int
	for _, f := range bytes.Fields(b) {
		if tid, err := strconv.Atoi(string(f)); err == nil && tid > 0 {
			tids = append(tids, tid)
		}
	}
	return tids
}
