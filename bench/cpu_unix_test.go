//go:build unix

package bench

import (
	"os"
	"syscall"
	"time"
)

// selfCPU is the CPU time (user + system) this process has used so far.
// Around a run of ours it is the engine's, its client's and the collector's
// cost; the rest of the test binary is idle meanwhile.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// selfFaults is how many page faults this process has taken so far that
// needed no I/O (minor faults): mostly pages of memory touched for the
// first time. Each costs CPU, and on a virtual machine that hands the pages
// its guest frees back to the host (free page reporting; see
// BenchmarkFreshPages) a fresh page costs far more than a recycled one.
func selfFaults() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Minflt
}

// childFaults is the minor page faults of an exited child process.
func childFaults(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Minflt
	}
	return 0
}
