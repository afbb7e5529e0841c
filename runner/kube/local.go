package kube

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// LocalPID is a process of the pod with this UID when the pod runs on
// this machine, found through its control group (the kubelet names it
// pod<uid>, or kubepods-...-pod<uid_with_underscores>.slice with the
// systemd driver), and 0 when it is elsewhere. Its network namespace is
// the pod's.
func LocalPID(uid string) int {
	if uid == "" {
		return 0
	}
	names := []string{"pod" + uid, "pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"}
	for _, root := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory", "/sys/fs/cgroup"} {
		pid := 0
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			base := d.Name()
			for _, n := range names {
				if base == n || strings.HasSuffix(base, "-"+n) {
					pid = firstPID(p)
					return filepath.SkipAll
				}
			}
			return nil
		})
		if pid != 0 {
			return pid
		}
	}
	return 0
}

// firstPID is a process in the cgroup dir or below it.
func firstPID(dir string) int {
	pid := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for f := range strings.FieldsSeq(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pid = n
				return filepath.SkipAll
			}
		}
		return nil
	})
	return pid
}
