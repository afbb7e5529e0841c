package images

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// mountProc mounts a proc file system at p, for apt in a chroot.
func mountProc(p string) error {
	return unix.Mount("proc", p, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// unmount unmounts p if something is mounted there.
func unmount(p string) error {
	for {
		err := unix.Unmount(p, 0)
		switch {
		case err == nil:
			continue // mounted twice? unmount until nothing is
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil // not a mount point (any more)
		case errors.Is(err, unix.EBUSY):
			// A process of the chroot still has it open: detach it
			// now, the kernel frees it when they are gone.
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount %s: %w", p, err)
			}
		default:
			return fmt.Errorf("unmount %s: %w", p, err)
		}
	}
}
