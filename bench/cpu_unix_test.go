//go:build unix

package bench

import (
	"os"
	"syscall"
	"time"
)

// selfUsage is the CPU time (user + system) this process has used so far,
// and how many page faults it has taken that needed no I/O (minor faults:
// mostly pages of memory touched for the first time, each of which costs
// CPU; see BenchmarkFreshPages). Around a run of ours they are the
// engine's, its client's and the collector's; the rest of the test binary
// is idle meanwhile.
func selfUsage() (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt
}

// childFaults is the minor page faults of an exited child process.
func childFaults(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Minflt
	}
	return 0
}
