//go:build !linux

package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"
)

// The provider relies on /proc, process groups, Pdeathsig and pidfds. Other
// systems get a clear error from NewRun and ReapStale instead of a build
// failure of everything that imports this package.
func platformSupported() error {
	return fmt.Errorf("process provider on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(*os.Process, sig) error { return errors.ErrUnsupported }

func waitExitNoReap(int) error { return errors.ErrUnsupported }

func exitSignal(*os.ProcessState) string { return "" }

func waitGroupGone(int, time.Duration) error { return nil }

type identity struct {
	pid   int
	start string
	pidns string
}

func selfIdentity() (identity, error) { return identity{}, errors.ErrUnsupported }

func ownerAlive(identity) bool { return true }

func scanRunProcesses(map[string]bool) map[string][]int { return nil }

type killResult int

const (
	killGone killResult = iota
	killForeign
	killKilled
)

func killVerified(context.Context, int, string) (killResult, error) {
	return killForeign, errors.ErrUnsupported
}

func checkPrivateDir(string) error { return nil }

// reservePort holds nothing on other systems: ports are then only checked
// free, and two callers can still hand out the same one.
func reservePort(int) (io.Closer, error) { return nopCloser{}, nil }

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
