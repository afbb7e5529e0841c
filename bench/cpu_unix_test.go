//go:build unix

package bench

import (
	"os"
	"syscall"
	"time"
)

// selfUsage is what this process has used so far (see usage). Around a
// run of ours it is the engine's, its client's and the collector's; the
// rest of the test binary is idle meanwhile.
func selfUsage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	return usageOf(&ru)
}

// childUsage is what an exited child process used.
func childUsage(ps *os.ProcessState) usage {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return usageOf(ru)
	}
	return usage{}
}

func usageOf(ru *syscall.Rusage) usage {
	return usage{
		cpu:      time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		sys:      time.Duration(ru.Stime.Nano()),
		faults:   ru.Minflt,
		switches: ru.Nvcsw + ru.Nivcsw,
	}
}
