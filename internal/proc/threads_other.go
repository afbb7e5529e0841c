//go:build !linux

package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// ThreadReader reads the summed schedstat of every thread of one process.
// Only Linux has schedstat; elsewhere Read finds no thread directory.
type ThreadReader struct {
	pid       int
	dir, list string
}

// NewThreadReader returns a reader of process pid's threads under procRoot.
func NewThreadReader(procRoot string, pid int) *ThreadReader {
	return &ThreadReader{pid: pid, dir: filepath.Join(procRoot, strconv.Itoa(pid), "task")}
}

// NewListedThreadReader returns a reader of the threads listed in the file
// list, one id a line, read under procRoot.
func NewListedThreadReader(procRoot, list string) *ThreadReader {
	return &ThreadReader{dir: procRoot, list: list}
}

// Read sums the schedstat of the threads listed in the task directory or
// the list file.
func (r *ThreadReader) Read() (Schedstat, error) {
	if r.list != "" {
		b, err := os.ReadFile(r.list)
		if err != nil {
			return Schedstat{}, fmt.Errorf("list threads: %w", err)
		}
		return ThreadsSchedstat(r.dir, ParseThreads(b))
	}
	ents, err := os.ReadDir(r.dir)
	if err != nil {
		return Schedstat{}, fmt.Errorf("list %s: %w", r.dir, err)
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return ThreadsSchedstat(r.dir, tids)
}

// Close does nothing: this reader keeps nothing open.
func (r *ThreadReader) Close() {}

// ThreadsSchedstat sums the schedstat of the threads tids (a control
// group's cgroup.threads, say), read once under dir ("/proc"). A thread
// that exited since it was listed is skipped; the sum fails only when no
// thread could be read, or one could not for another reason.
func ThreadsSchedstat(dir string, tids []int) (Schedstat, error) {
	var s Schedstat
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(tid), "schedstat"))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue
		}
		if err != nil {
			return Schedstat{}, fmt.Errorf("thread %d: %w", tid, err)
		}
		if err := s.addThread(b); err != nil {
			return Schedstat{}, fmt.Errorf("thread %d: %w", tid, err)
		}
	}
	if s.Threads == 0 {
		return Schedstat{}, fmt.Errorf("no thread's schedstat under %s could be read", dir)
	}
	return s, nil
}

// PID is the process whose threads are read; 0 for a listed set.
func (r *ThreadReader) PID() int { return r.pid }
