package bench

import "time"

// usage is a process's use of the machine, from getrusage.
type usage struct {
	// cpu is user and system time; sys the system time alone: the
	// kernel's share, which system calls, page faults and context
	// switches make and which page-table isolation makes dearer.
	cpu, sys time.Duration
	// faults is minor page faults: those that needed no I/O, mostly pages
	// of memory touched for the first time, each of which costs CPU (see
	// BenchmarkFreshPages).
	faults int64
	// switches is context switches, voluntary (a thread that blocked: in
	// a futex, on the poller) and involuntary (preempted): each is a
	// thread's sleep and wake-up, whose cost lands in the kernel's time.
	switches int64
}

// since is u less what was used at before.
func (u usage) since(before usage) usage {
	return usage{cpu: u.cpu - before.cpu, sys: u.sys - before.sys, faults: u.faults - before.faults, switches: u.switches - before.switches}
}
