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
// opening /proc/PID/task/TID/schedstat by its path each time cost about 8
// µs a thread (the lookup through /proc), 3.4 µs relative to the task
// directory, where reading an open one costs about 0.6 µs: for 30 threads
// 0.2, 0.1 and 0.02 ms a sample (BenchmarkReadProcess in runner/metrics).
//
// The kernel keeps no process-wide total of these counts: an exiting
// thread takes its own with it. So the reader keeps a total: each Read adds
// what every thread it read before has grown by since, and the whole counts
// of threads new since the last Read. An exited thread's counts stay in the total up
// to its last Read; only what it did after that is lost. Not safe for
// concurrent use.
type ThreadReader struct {
	pid     int    // 0 for a listed set
	dir     string // procRoot/PID/task, or procRoot for a listed set
	list    string // the file listing the threads; "" for dir's entries
	dirFD   int    // -1 while closed
	files   map[int]int
	seen    map[int]bool
	last    map[int]Schedstat // each thread's counts at the last Read
	total   Schedstat
	primed  bool // a Read has succeeded
	dirents []byte
	buf     []byte
}

// NewThreadReader returns a reader of process pid's threads under procRoot
// ("/proc"). It opens what it reads on its first Read, and again after
// Close.
func NewThreadReader(procRoot string, pid int) *ThreadReader {
	return &ThreadReader{pid: pid, dir: filepath.Join(procRoot, strconv.Itoa(pid), "task"), dirFD: -1,
		files: map[int]int{}, seen: map[int]bool{}, last: map[int]Schedstat{}, dirents: make([]byte, 8192), buf: make([]byte, 128)}
}

// NewListedThreadReader returns a reader of the threads listed in the file
// list, one id a line, as a control group's cgroup.threads or tasks file
// lists them (a container's), read under procRoot ("/proc").
func NewListedThreadReader(procRoot, list string) *ThreadReader {
	r := NewThreadReader(procRoot, 0)
	r.dir, r.list = procRoot, list
	return r
}

// Read lists the process's threads and returns the total: the summed
// schedstat of its threads at the first Read, and what they and threads
// started since have added (Threads is how many were read this time). A
// thread that exited since it was listed is skipped; Read fails when no
// thread could be read, or one could not for another reason.
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
	var now Schedstat // this Read's threads, summed
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
			r.forget(tid)
			continue
		}
		if err != nil {
			return Schedstat{}, fmt.Errorf("thread %d: read schedstat: %w", tid, err)
		}
		var cur Schedstat
		if err := cur.addThread(r.buf[:n]); err != nil {
			return Schedstat{}, fmt.Errorf("thread %d: %w", tid, err)
		}
		now.add(cur)
		prev, known := r.last[tid]
		switch {
		case !r.primed:
		case known && cur.Run >= prev.Run && cur.Wait >= prev.Wait:
			r.total.Run += cur.Run - prev.Run
			r.total.Wait += cur.Wait - prev.Wait
		default: // started since the last Read (or its id was reused)
			r.total.add(cur)
		}
		r.last[tid] = cur
	}
	if now.Threads == 0 {
		return Schedstat{}, fmt.Errorf("no thread's schedstat under %s could be read", r.dir)
	}
	if !r.primed {
		r.total, r.primed = now, true
	}
	r.total.Threads = now.Threads
	return r.total, nil
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
	for tid := range r.last {
		if !r.seen[tid] {
			r.forget(tid)
		}
	}
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

// forget drops an exited thread: its file and its last counts.
func (r *ThreadReader) forget(tid int) {
	r.drop(tid)
	delete(r.last, tid)
}

// Close closes every file the reader holds; a later Read opens them again
// and carries on the same total.
func (r *ThreadReader) Close() {
	for tid := range r.files {
		r.drop(tid)
	}
	if r.dirFD >= 0 {
		unix.Close(r.dirFD)
		r.dirFD = -1
	}
}

// PID is the process whose threads are read; 0 for a listed set.
func (r *ThreadReader) PID() int { return r.pid }
