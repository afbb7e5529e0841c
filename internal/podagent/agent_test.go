package podagent

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
)

// TestSession drives a real agent supervising sleep through a session:
// replies carry their request's id, and the watch's events arrive on the
// same stream, an exit nobody asked for included.
func TestSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sock := filepath.Join(t.TempDir(), "a.sock")
	a := New(io.Discard)
	served := make(chan error, 1)
	sctx, stop := context.WithCancel(ctx)
	go func() { served <- a.Serve(sctx, sock, time.Second) }()
	for range 100 {
		if err := Ctl(ctx, sock, Request{Verb: "status"}, io.Discard); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Session(ctx, sock, inR, outW); outW.Close() }()
	lines := make(chan SessionLine, 100)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var l SessionLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("session wrote %q: %v", sc.Text(), err)
			}
			lines <- l
		}
		close(lines)
	}()
	send := func(id int, r Request) {
		b, _ := json.Marshal(SessionRequest{ID: id, Request: r})
		if _, err := inW.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	// next waits for a line that f accepts, skipping others.
	next := func(what string, f func(SessionLine) bool) SessionLine {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("session ended waiting for %s", what)
				}
				if f(l) {
					return l
				}
			case <-ctx.Done():
				t.Fatalf("no %s", what)
			}
		}
	}
	next("the current state", func(l SessionLine) bool { return l.Event != nil && l.Event.State == "stopped" })
	send(1, Request{Verb: "start", Argv: []string{"sleep", "30"}})
	r := next("start's reply", func(l SessionLine) bool { return l.Reply != nil })
	if r.ID != 1 || r.Reply.State != "running" || r.Reply.PID == 0 {
		t.Fatalf("start: %+v", r)
	}
	pid := r.Reply.PID
	send(2, Request{Verb: "bogus"})
	if r := next("bogus's reply", func(l SessionLine) bool { return l.Reply != nil }); r.ID != 2 || r.Reply.State != "error" {
		t.Fatalf("bogus: %+v %+v", r, r.Reply)
	}
	send(3, Request{Verb: "kill"})
	// The exit's event and the kill's reply, in either order.
	var reply, exit *Event
	next("kill's reply and the exit event", func(l SessionLine) bool {
		switch {
		case l.Reply != nil && l.ID == 3:
			reply = l.Reply
		case l.Event != nil && l.Event.State == "exited":
			exit = l.Event
		}
		return reply != nil && exit != nil
	})
	if reply.State != "exited" || !reply.Expected || exit.PID != pid {
		t.Fatalf("kill: reply %+v, exit event %+v (pid %d)", reply, exit, pid)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestDiskWriters runs a disk fault's writers in the agent, as in a pod:
// they write until disk-stop, which answers with their totals and removes
// their files.
func TestDiskWriters(t *testing.T) {
	a := New(io.Discard)
	dir := filepath.Join(t.TempDir(), "contention", "f1")
	spec := &plan.DiskSpec{BlockSize: 4096, Fsync: true, Parallelism: 2}
	for _, tc := range []struct {
		name string
		req  Request
		want string // an error the answer carries, "" for none
	}{
		{"no settings", Request{Verb: "disk-start", Disk: &DiskRequest{ID: "f1", Dir: dir}}, "needs a fault id"},
		{"relative dir", Request{Verb: "disk-start", Disk: &DiskRequest{ID: "f1", Dir: "x", Spec: spec}}, "absolute directory"},
		{"stop before start", Request{Verb: "disk-stop", Disk: &DiskRequest{ID: "f1"}}, "no writers here"},
		{"start", Request{Verb: "disk-start", Disk: &DiskRequest{ID: "f1", Dir: dir, Spec: spec}}, ""},
		{"start twice", Request{Verb: "disk-start", Disk: &DiskRequest{ID: "f1", Dir: dir, Spec: spec}}, "already has writers"},
	} {
		e := a.Do(tc.req)
		if got := e.Error; (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Fatalf("%s: answer error %q, want %q", tc.name, got, tc.want)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ents, _ := os.ReadDir(dir); len(ents) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	e := a.Do(Request{Verb: "disk-stop", Disk: &DiskRequest{ID: "f1"}})
	if e.Error != "" || e.Disk == nil {
		t.Fatalf("disk-stop: %+v", e)
	}
	if e.Disk.Writes == 0 || e.Disk.Bytes != e.Disk.Writes*4096 || e.Disk.Fsync == nil {
		t.Errorf("totals %+v: want writes of 4096 bytes with fsync latencies", e.Disk)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("contention dir still there after disk-stop: %v", err)
	}
}

func TestNetNeedsRules(t *testing.T) {
	if e := New(io.Discard).Do(Request{Verb: "net"}); !strings.Contains(e.Error, "no rules") {
		t.Errorf("net without rules answered %+v", e)
	}
}

// TestUsage reads the server's resource use as the runner reads a process
// node's, and refuses when no server runs.
func TestUsage(t *testing.T) {
	a := New(io.Discard)
	if e := a.Do(Request{Verb: "usage"}); !strings.Contains(e.Error, "not running") {
		t.Fatalf("usage with no server: %+v", e)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("needs sleep")
	}
	if e := a.Do(Request{Verb: "start", Argv: []string{sleep, "30"}}); e.Error != "" {
		t.Fatal(e.Error)
	}
	defer a.Do(Request{Verb: "kill"})
	e := a.Do(Request{Verb: "usage"})
	if e.Error != "" || e.Usage == nil || e.Usage.RSS <= 0 || e.PID == 0 {
		t.Fatalf("usage of a running server: %+v", e)
	}
}
