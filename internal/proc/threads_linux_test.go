package proc

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openFiles is how many thread files r holds open.
func openFiles(r *ThreadReader) int { return len(r.files) }

// holds reports whether r holds thread tid's file open.
func holds(r *ThreadReader, tid int) bool {
	_, ok := r.files[tid]
	return ok
}

// TestThreadReader reads one fake process again and again as its threads
// change: the files it keeps open show their new counts, an exited
// thread's file is closed but its counts stay in the total, a new one's
// whole counts join it.
func TestThreadReader(t *testing.T) {
	root := t.TempDir()
	fakeThreads(t, root, 40, map[int]string{40: "1000 200 3\n", 41: "500 50 2\n"})
	r := NewThreadReader(root, 40)
	defer r.Close()
	steps := []struct {
		name   string
		change func()
		want   Schedstat
	}{
		{"first read", func() {}, Schedstat{Run: 1500, Wait: 250, Threads: 2}},
		{"counts grow", func() { fakeThreads(t, root, 40, map[int]string{40: "2000 300 4\n", 41: "600 70 3\n"}) }, Schedstat{Run: 2600, Wait: 370, Threads: 2}},
		{"a thread exits", func() {
			if err := os.RemoveAll(filepath.Join(root, "40", "task", "41")); err != nil {
				t.Fatal(err)
			}
		}, Schedstat{Run: 2600, Wait: 370, Threads: 1}},
		{"a thread starts, the other grows", func() { fakeThreads(t, root, 40, map[int]string{40: "2100 350 5\n", 43: "10 1 1\n"}) }, Schedstat{Run: 2710, Wait: 421, Threads: 2}},
		{"read again after Close", r.Close, Schedstat{Run: 2710, Wait: 421, Threads: 2}},
		{"a thread's id is reused", func() { fakeThreads(t, root, 40, map[int]string{43: "4 2 1\n"}) }, Schedstat{Run: 2714, Wait: 423, Threads: 2}},
	}
	for _, st := range steps {
		st.change()
		got, err := r.Read()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got != st.want {
			t.Errorf("%s: %+v, want %+v", st.name, got, st.want)
		}
	}
	if got := openFiles(r); got != 2 {
		t.Errorf("the reader holds %d thread files, want 2 (the exited thread's closed)", got)
	}
	r.Close()
	if got := openFiles(r); got != 0 {
		t.Errorf("after Close the reader holds %d thread files", got)
	}
}

// TestThreadReaderThisProcess reads this process while a thread of it
// comes and goes: no error, the thread is read while it lives, and its
// file is closed once it has gone.
func TestThreadReaderThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skipf("this kernel keeps no schedstat (CONFIG_SCHED_INFO): %v", err)
	}
	r := NewThreadReader("/proc", os.Getpid())
	defer r.Close()
	// A goroutine that locks its thread and returns without unlocking makes
	// the runtime end that thread, unless it is the main thread, which the
	// runtime keeps: then another goroutine is tried.
	var tid int
	var exit, done chan struct{}
	for tid == 0 || tid == os.Getpid() {
		if exit != nil {
			close(exit)
			<-done
		}
		tids := make(chan int)
		exit, done = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread()
			tids <- unix.Gettid()
			<-exit
		}()
		tid = <-tids
	}
	if _, err := r.Read(); err != nil {
		t.Fatal(err)
	}
	if !holds(r, tid) {
		t.Fatalf("the reader did not read thread %d, alive", tid)
	}
	close(exit)
	<-done
	deadline := time.Now().Add(5 * time.Second)
	for holds(r, tid) && time.Now().Before(deadline) {
		if _, err := r.Read(); err != nil {
			t.Fatalf("read while thread %d ends: %v", tid, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if holds(r, tid) {
		t.Errorf("the reader still holds the file of thread %d, which ended", tid)
	}
}
