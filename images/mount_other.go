//go:build !linux

package images

import (
	"errors"
	"runtime"
)

// errNoMounts is why a root file system cannot be set up here.
var errNoMounts = errors.New("building images mounts /proc in a chroot, which needs Linux; this build is for " + runtime.GOOS)

func mountProc(string) error { return errNoMounts }

// unmount has nothing to do where nothing was mounted.
func unmount(string) error { return nil }
