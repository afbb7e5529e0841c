package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ThreadReader reads the summed schedstat of every thread of one process,
// once a second for a whole run. It keeps the process's task directory and
// each thread's schedstat open between reads and reads them again in place:
// opening /proc/PID/task/TID/schedstat by path each time cost about 25 µs a
// thread (the lookup through /proc), a millisecond a second for an etcd
// member, where reading an open one costs about 1.5 µs (BenchmarkReadProcess
// in runner/metrics). A thread's counts leave the sum when it exits: the
// kernel keeps no process-wide total of them. Not safe for concurrent use.
type ThreadReader struct {
	dir     string // procRoot/PID/task, or procRoot for a listed set
	list    string // the file listing the threads; "" for dir's entries
	dirFD   int    // -1 while closed
	files   map[int]int
	seen    map[int]bool
	dirents []byte
	buf     []byte
}

// NewThreadReader returns a reader of process pid's threads under procRoot
// ("/proc"). It opens what it reads on its first Read, and again after
// Close.
func NewThreadReader(procRoot string, pid int) *ThreadReader {
	return &ThreadReader{dir: filepath.Join(procRoot, strconv.Itoa(pid), "task"), dirFD: -1,
		files: map[int]int{}, seen: map[int]bool{}, dirents: make([]byte, 8192), buf: make([]byte, 128)}
}

// NewListedThreadReader returns a reader of the threads listed in the file
// list, one id a line, as a control group's cgroup.threads or tasks file
// lists them (a container's), read under procRoot ("/proc").
func NewListedThreadReader(procRoot, list string) *ThreadReader {
	r := NewThreadReader(procRoot, 0)
	r.dir, r.list = procRoot, list
	return r
}

// Read lists the process's threads and sums their schedstat. A thread that
// exited since it was listed is skipped; Read fails when no thread could be
// read, or one could not for another reason.
func (r *ThreadReader) Read() (Schedstat, error) {
	if r.dirFD < 0 {
		fd, err := unix.Open(r.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return Schedstat{}, fmt.Errorf("open %s: %w", r.dir, err)
		}
		r.dirFD = fd
	}
	if err := r.listThreads(); err != nil {
		return Schedstat{}, err
	}
	var s Schedstat
	for tid := range r.seen {
		fd, ok := r.files[tid]
		if !ok {
			var err error
			fd, err = unix.Openat(r.dirFD, strconv.Itoa(tid)+"/schedstat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
				continue // exited since listed
			}
			if err != nil {
				return Schedstat{}, fmt.Errorf("thread %d: open schedstat: %w", tid, err)
			}
			r.files[tid] = fd
		}
		n, err := unix.Pread(fd, r.buf, 0)
		if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
			r.drop(tid)
			continue
		}
		if err != nil {
			return Schedstat{}, fmt.Errorf("thread %d: read schedstat: %w", tid, err)
		}
		if err := s.add(r.buf[:n]); err != nil {
			return Schedstat{}, fmt.Errorf("thread %d: %w", tid, err)
		}
	}
	if s.Threads == 0 {
		return Schedstat{}, fmt.Errorf("no thread's schedstat under %s could be read", r.dir)
	}
	return s, nil
}

// listThreads reads the thread ids, from the list file or the task
// directory, into r.seen and closes the files of threads no longer listed.
func (r *ThreadReader) listThreads() error {
	clear(r.seen)
	if r.list != "" {
		b, err := os.ReadFile(r.list)
		if err != nil {
			return fmt.Errorf("list threads: %w", err)
		}
		for _, tid := range ParseThreads(b) {
			r.seen[tid] = true
		}
		r.closeUnseen()
		return nil
	}
	if _, err := unix.Seek(r.dirFD, 0, 0); err != nil {
		return fmt.Errorf("list %s: %w", r.dir, err)
	}
	var names []string
	for {
		n, err := unix.Getdents(r.dirFD, r.dirents)
		if err != nil {
			return fmt.Errorf("list %s: %w", r.dir, err)
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(r.dirents[:n], -1, names[:0])
		for _, name := range names {
			if tid, err := strconv.Atoi(name); err == nil {
				r.seen[tid] = true
			}
		}
	}
	r.closeUnseen()
	return nil
}

func (r *ThreadReader) closeUnseen() {
	for tid := range r.files {
		if !r.seen[tid] {
			r.drop(tid)
		}
	}
}

func (r *ThreadReader) drop(tid int) {
	if fd, ok := r.files[tid]; ok {
		unix.Close(fd)
		delete(r.files, tid)
	}
}

// Close closes every file the reader holds; a later Read opens them again.
func (r *ThreadReader) Close() {
	for tid := range r.files {
		r.drop(tid)
	}
	if r.dirFD >= 0 {
		unix.Close(r.dirFD)
		r.dirFD = -1
	}
}
