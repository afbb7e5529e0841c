//go:build unix

package bench

import (
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
