//go:build !unix

package bench

import (
	"os"
	"time"
)

// selfCPU is unknown here; the table then shows 0 for ours.
func selfCPU() time.Duration { return 0 }

// selfFaults and childFaults are unknown here; the table shows 0.
func selfFaults() int64 { return 0 }

func childFaults(*os.ProcessState) int64 { return 0 }
