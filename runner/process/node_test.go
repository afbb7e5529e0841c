//go:build linux

package process

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunLayout(t *testing.T) {
	state := t.TempDir()
	r := newTestRun(t, RunOptions{StateDir: state})
	if !validRunID(r.ID()) {
		t.Errorf("run id %q has not the expected shape", r.ID())
	}
	if want := filepath.Join(state, "runs", r.ID()); r.Dir() != want {
		t.Errorf("Dir = %s, want %s", r.Dir(), want)
	}
	owner, err := readOwner(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if self, _ := selfIdentity(); owner != self {
		t.Errorf("owner record %+v, want %+v", owner, self)
	}
	if !ownerAlive(owner) {
		t.Error("ownerAlive(self) = false")
	}

	dataDir, logPath := r.NodeDir("n1")
	n, err := r.AddNode("n1", helperSpec())
	if err != nil {
		t.Fatal(err)
	}
	if n.DataDir() != dataDir || n.LogPath() != logPath {
		t.Errorf("node paths %s %s, NodeDir said %s %s", n.DataDir(), n.LogPath(), dataDir, logPath)
	}
	if fi, err := os.Stat(dataDir); err != nil || !fi.IsDir() {
		t.Errorf("data dir not created: %v", err)
	}
	if _, err := r.AddNode("n1", helperSpec()); err == nil {
		t.Error("second AddNode n1 succeeded")
	}
	if r.Node("n1") != n || r.Node("n2") != nil {
		t.Error("Node lookup wrong")
	}

	for _, name := range []string{"", ".", "..", "a/b", "a b", "../x", strings.Repeat("x", 65)} {
		if _, err := r.AddNode(name, helperSpec()); err == nil {
			t.Errorf("AddNode(%q) succeeded", name)
		}
	}
}

func TestRunIDs(t *testing.T) {
	now := time.Date(2026, 11, 22, 8, 15, 0, 0, time.UTC)
	id, err := newRunID(now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "20261122T081500-") || !validRunID(id) {
		t.Errorf("newRunID = %q", id)
	}
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"20261122T081500-ab12cd", true},
		{"20261122T081500-AB12CD", false},
		{"20261122T081500-ab12c", false},
		{"20261122X081500-ab12cd", false},
		{"20261322T081500-ab12cd", false},
		{"20261122T081500-ab12cg", false},
		{"20261122T081500", false},
		{"notarun", false},
		{"..", false},
	} {
		if got := validRunID(tc.id); got != tc.want {
			t.Errorf("validRunID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestNodeLifecycle(t *testing.T) {
	r := newTestRun(t, RunOptions{})
	ports, err := r.AllocatePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	childPid := filepath.Join(t.TempDir(), "child.pid")
	n, err := r.AddNode("n1", helperSpec(
		"-listen", "127.0.0.1:"+strconv.Itoa(ports[0]), "-child-pidfile", childPid))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	leader := procOf(t, n.PID())
	child := readPid(t, childPid)
	eventually(t, 20*time.Second, "the node listens", func() bool { return dial(ports[0]) == nil })
	eventually(t, 20*time.Second, "the node logs that it is ready", func() bool {
		return strings.Contains(n.Tail(5), "fake node ready")
	})
	if !n.Running() {
		t.Error("Running = false after Start")
	}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(n.DataDir()), "pid")); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(leader.pid) {
		t.Errorf("pid file = %q, %v; want %d", b, err, leader.pid)
	}
	for _, p := range []proc{leader, child} {
		if id, err := runIDOf(p.pid); err != nil || id != r.ID() {
			t.Errorf("pid %d: run id in environment = %q, %v; want %q", p.pid, id, err, r.ID())
		}
	}
	if err := n.Start(ctx); !errors.Is(err, ErrRunning) {
		t.Errorf("second Start: %v, want ErrRunning", err)
	}

	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the group is stopped", func() bool { return leader.stopped() && child.stopped() })
	if !n.Paused() {
		t.Error("Paused = false")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the group runs again", func() bool { return !leader.stopped() && !child.stopped() })
	if err := dial(ports[0]); err != nil {
		t.Errorf("resumed node does not answer: %v", err)
	}

	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if n.Running() || n.PID() != 0 {
		t.Error("node still running after Kill")
	}
	select {
	case <-n.Exited():
	default:
		t.Error("Exited not closed after Kill returned")
	}
	if e, ok := n.LastExit(); !ok || !e.Expected || e.Signal != "killed" || e.PID != leader.pid {
		t.Errorf("LastExit = %+v, %v", e, ok)
	}
	if err := n.Err(); err != nil {
		t.Errorf("Err after Kill = %v, want nil", err)
	}
	eventually(t, 5*time.Second, "the child died with its group", func() bool { return !child.alive() })
	if _, err := os.Stat(filepath.Join(filepath.Dir(n.DataDir()), "pid")); !os.IsNotExist(err) {
		t.Errorf("pid file left after exit: %v", err)
	}
	if err := n.Pause(); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Pause on a dead node: %v, want ErrNotRunning", err)
	}
	if err := n.Kill(); err != nil {
		t.Errorf("Kill on a dead node: %v", err)
	}

	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	again := procOf(t, n.PID())
	if again == leader {
		t.Error("restart reused the old process")
	}
	eventually(t, 20*time.Second, "the restarted node is ready", func() bool {
		return strings.Contains(n.Tail(1), "fake node ready")
	})
	if err := dial(ports[0]); err != nil {
		t.Errorf("restarted node does not answer: %v", err)
	}
	if err := n.Stop(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if e, _ := n.LastExit(); e.Signal != "terminated" || !e.Expected {
		t.Errorf("after Stop, LastExit = %+v; want terminated by SIGTERM", e)
	}
	if again.alive() {
		t.Error("process alive after Stop")
	}

	log, err := os.ReadFile(n.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(log), "fake node ready"); got != 2 {
		t.Errorf("log has %d starts, want 2 (appended across restarts):\n%s", got, log)
	}
	if tail := n.Tail(1); !strings.Contains(tail, "ended") || !strings.Contains(tail, "terminated") {
		t.Errorf("Tail(1) = %q, want the exit line", tail)
	}
}

func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		pause      bool
		grace      time.Duration
		ctxTimeout time.Duration
		wantSignal string
		minTime    time.Duration
	}{
		{name: "graceful", grace: 20 * time.Second, wantSignal: "terminated"},
		{name: "paused node still gets SIGTERM", pause: true, grace: 20 * time.Second, wantSignal: "terminated"},
		{name: "escalates after grace", args: []string{"-ignore-term"}, grace: 300 * time.Millisecond, wantSignal: "killed", minTime: 300 * time.Millisecond},
		{name: "context cuts grace short", args: []string{"-ignore-term"}, grace: time.Hour, ctxTimeout: 200 * time.Millisecond, wantSignal: "killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRun(t, RunOptions{})
			n, p := startReadyNode(t, r, tc.args...)
			if tc.pause {
				if err := n.Pause(); err != nil {
					t.Fatal(err)
				}
				eventually(t, 5*time.Second, "paused", p.stopped)
			}
			ctx := context.Background()
			if tc.ctxTimeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctxTimeout)
				defer cancel()
			}
			start := time.Now()
			if err := n.Stop(ctx, tc.grace); err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if e, _ := n.LastExit(); e.Signal != tc.wantSignal || !e.Expected {
				t.Errorf("LastExit = %+v, want signal %q", e, tc.wantSignal)
			}
			if took < tc.minTime || took > 15*time.Second {
				t.Errorf("Stop took %v", took)
			}
			if p.alive() {
				t.Error("process alive after Stop")
			}
		})
	}
}

func TestUnexpectedExit(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port

	for _, tc := range []struct {
		name      string
		args      []string
		wantCode  int
		addrInUse bool
	}{
		{name: "exits with a code", args: []string{"-exit-after", "50ms", "-exit-code", "3"}, wantCode: 3},
		{name: "exits zero", args: []string{"-exit-after", "50ms"}, wantCode: 0},
		{name: "port taken", args: []string{"-listen", "127.0.0.1:" + strconv.Itoa(busyPort)}, wantCode: 1, addrInUse: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRun(t, RunOptions{})
			n, err := r.AddNode("n1", helperSpec(tc.args...))
			if err != nil {
				t.Fatal(err)
			}
			if err := n.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			waitExited(t, n)
			err = n.Err()
			var ee *ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("Err = %v, want *ExitError", err)
			}
			if ee.Exit.Code != tc.wantCode || ee.Exit.Expected || ee.Node != "n1" {
				t.Errorf("exit = %+v", ee.Exit)
			}
			if !strings.Contains(err.Error(), "node n1") {
				t.Errorf("error %q does not name the node", err)
			}
			if got := errors.Is(err, ErrAddrInUse); got != tc.addrInUse {
				t.Errorf("errors.Is(err, ErrAddrInUse) = %v, want %v; log:\n%s", got, tc.addrInUse, n.Tail(10))
			}
			if !tc.addrInUse {
				return
			}
			// What a caller does on ErrAddrInUse: new ports, new spec, again.
			ports, err := r.AllocatePorts(1)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.SetSpec(helperSpec("-listen", "127.0.0.1:"+strconv.Itoa(ports[0]))); err != nil {
				t.Fatal(err)
			}
			if err := n.Restart(context.Background()); err != nil {
				t.Fatal(err)
			}
			eventually(t, 20*time.Second, "the node listens on its new port", func() bool { return dial(ports[0]) == nil })
			if n.Err() != nil {
				t.Errorf("Err while running = %v", n.Err())
			}
			if err := n.SetSpec(helperSpec()); !errors.Is(err, ErrRunning) {
				t.Errorf("SetSpec while running: %v, want ErrRunning", err)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	r := newTestRun(t, RunOptions{})
	missing, err := r.AddNode("missing", NodeSpec{Path: filepath.Join(t.TempDir(), "no-such-program")})
	if err != nil {
		t.Fatal(err)
	}
	err = missing.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "start node missing") {
		t.Errorf("Start of a missing program: %v", err)
	}
	if missing.Running() {
		t.Error("Running after a failed start")
	}

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	n, err := r.AddNode("n1", helperSpec())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a canceled context: %v", err)
	}
	if err := n.Resume(); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Resume before start: %v", err)
	}
	select {
	case <-n.Exited():
	default:
		t.Error("Exited of a never-started node is not closed")
	}

	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
	if _, err := r.AddNode("n2", helperSpec()); !errors.Is(err, ErrClosed) {
		t.Errorf("AddNode after Close: %v, want ErrClosed", err)
	}
}

func TestClose(t *testing.T) {
	for _, tc := range []struct {
		name       string
		keep       bool
		keepLater  bool
		concurrent bool
	}{
		{name: "removes the directory"},
		{name: "keep option", keep: true},
		{name: "keep requested during the run", keepLater: true},
		{name: "concurrent callers", concurrent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRun(t, RunOptions{Keep: tc.keep})
			var procs []proc
			for i := 1; i <= 3; i++ {
				var args []string
				if i == 1 {
					args = []string{"-child-pidfile", filepath.Join(r.Dir(), "child.pid")}
				}
				n, err := r.AddNode("n"+strconv.Itoa(i), helperSpec(args...))
				if err != nil {
					t.Fatal(err)
				}
				if err := n.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				procs = append(procs, procOf(t, n.PID()))
			}
			procs = append(procs, readPid(t, filepath.Join(r.Dir(), "child.pid")))
			if tc.keepLater {
				if err := r.Keep(); err != nil {
					t.Fatal(err)
				}
			}

			if tc.concurrent {
				errs := make(chan error, 3)
				for range 3 {
					go func() { errs <- r.Close(context.Background()) }()
				}
				for range 3 {
					if err := <-errs; err != nil {
						t.Error(err)
					}
				}
			} else if err := r.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, p := range procs {
				if p.alive() {
					t.Errorf("process %d alive after Close", p.pid)
				}
			}
			keep := tc.keep || tc.keepLater
			_, err := os.Stat(r.Dir())
			if keep && err != nil {
				t.Errorf("kept run directory: %v", err)
			}
			if !keep && !os.IsNotExist(err) {
				t.Errorf("run directory still there: %v", err)
			}
			if keep {
				if _, err := os.Stat(filepath.Join(r.Dir(), keepFile)); err != nil {
					t.Errorf("keep marker: %v", err)
				}
				if _, err := os.Stat(filepath.Join(r.Dir(), "nodes", "n2", "log")); err != nil {
					t.Errorf("node log not kept: %v", err)
				}
			}
			if err := r.Close(context.Background()); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

// Go destroys the thread of a goroutine that exits while locked to it.
// Pdeathsig would then kill any node forked from that thread; nodes are
// forked from the run's own locked thread, so they must survive.
func TestThreadExitDoesNotKillNodes(t *testing.T) {
	r := newTestRun(t, RunOptions{})
	var nodes []*Node
	for i := range 4 {
		n, err := r.AddNode("n"+strconv.Itoa(i), helperSpec())
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	for range 4 * runtime.GOMAXPROCS(0) {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(done)
		}()
		<-done
	}
	// The absence of a death can only be watched for a while.
	timer := time.NewTimer(500 * time.Millisecond)
	defer timer.Stop()
	for _, n := range nodes {
		select {
		case <-n.Exited():
			e, _ := n.LastExit()
			t.Fatalf("node %s died when unrelated threads exited: %v", n.Name(), e)
		case <-timer.C:
			return
		}
	}
}

// TestAllocatePortsAcrossRuns: two live runs of one process never hand out
// the same port, and a closed run's ports go back. 500 ports each from the
// about 22,000 below the ephemeral range: runs that excluded only their own
// would share about 11.
func TestAllocatePortsAcrossRuns(t *testing.T) {
	r1, r2 := newTestRun(t, RunOptions{}), newTestRun(t, RunOptions{})
	owner := make(map[int]*Run)
	for range 100 {
		for _, r := range []*Run{r1, r2} {
			ports, err := r.AllocatePorts(5)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ports {
				if o, ok := owner[p]; ok {
					t.Fatalf("port %d handed out twice (the second time to the same run: %v)", p, o == r)
				}
				owner[p] = r
			}
		}
	}
	if err := r1.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for p, r := range owner {
		res, err := reservePort(p)
		if free := err == nil; free != (r == r1) {
			t.Errorf("port %d of run %s: free for another caller %v after the first run closed (%v)", p, r.ID(), free, err)
		}
		if err == nil {
			res.Close()
		}
	}
}

// TestAllocatePortsAcrossProcesses: a process never hands out a port that
// another holds, and a process killed with SIGKILL holds none. The other
// is this test binary as a helper that allocates 500 ports and holds them
// until its stdin closes.
func TestAllocatePortsAcrossProcesses(t *testing.T) {
	const n = 500
	start := func() (*exec.Cmd, io.WriteCloser, []int) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=ports", "PORTS_N="+strconv.Itoa(n))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		var ports []int
		if err := json.NewDecoder(out).Decode(&ports); err != nil {
			t.Fatalf("read the helper's ports: %v", err)
		}
		return cmd, stdin, ports
	}
	cmd, _, theirs := start()
	if len(theirs) != n {
		t.Fatalf("helper allocated %d ports, want %d", len(theirs), n)
	}

	ours, release, err := AllocatePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	held := make(map[int]bool)
	for _, p := range theirs {
		held[p] = true
	}
	for _, p := range ours {
		if held[p] {
			t.Errorf("port %d handed out here while the helper holds it", p)
		}
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, p := range theirs {
		res, err := reservePort(p)
		if err != nil {
			t.Fatalf("port %d still held after its holder was killed: %v", p, err)
		}
		res.Close()
	}

	// A helper that closes gracefully gives its ports back too, and one
	// started now gets none of ours.
	cmd, stdin, theirs := start()
	for _, p := range theirs {
		if slices.Contains(ours, p) {
			t.Errorf("helper got port %d, which this process holds", p)
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
}

func TestAllocatePorts(t *testing.T) {
	for _, n := range []int{0, 1, 5, 50} {
		ports, release, err := AllocatePorts(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) != n {
			t.Fatalf("AllocatePorts(%d) returned %d ports", n, len(ports))
		}
		seen := make(map[int]bool)
		for _, p := range ports {
			if seen[p] {
				t.Errorf("port %d returned twice", p)
			}
			seen[p] = true
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				t.Errorf("port %d not free: %v", p, err)
				continue
			}
			l.Close()
			if _, err := reservePort(p); !errors.Is(err, syscall.EADDRINUSE) {
				t.Errorf("port %d not held: reserving it again gave %v", p, err)
			}
		}
		release()
		for _, p := range ports {
			res, err := reservePort(p)
			if err != nil {
				t.Errorf("port %d held after release: %v", p, err)
				continue
			}
			res.Close()
		}
	}
	if _, _, err := AllocatePorts(-1); err == nil {
		t.Error("AllocatePorts(-1) succeeded")
	}

	r := newTestRun(t, RunOptions{})
	seen := make(map[int]bool)
	for range 20 {
		ports, err := r.AllocatePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Errorf("run handed out port %d twice", p)
			}
			seen[p] = true
		}
	}
}

func TestTail(t *testing.T) {
	long := strings.Repeat("x", 3*tailChunk)
	var many strings.Builder
	for i := range 5000 {
		many.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	for _, tc := range []struct {
		name    string
		content string
		n       int
		want    string
	}{
		{"empty", "", 3, ""},
		{"zero lines", "a\nb\n", 0, ""},
		{"fewer than asked", "a\nb\n", 5, "a\nb"},
		{"exact", "a\nb\nc\n", 3, "a\nb\nc"},
		{"last two", "a\nb\nc\n", 2, "b\nc"},
		{"no final newline", "a\nb\nc", 2, "b\nc"},
		{"blank lines count", "a\n\n\n", 2, "\n"},
		{"long lines across chunks", "a\n" + long + "\n" + long + "\nz\n", 2, long + "\nz"},
		{"many lines", many.String(), 3, "line 4997\nline 4998\nline 4999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := TailFile(path, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("tail %d = %q, want %q", tc.n, shorten(got), shorten(tc.want))
			}
		})
	}
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:40] + "..." + s[len(s)-40:]
	}
	return s
}

// TestCloseKillsUnkept: with KillAtClose, Close kills the nodes of a run
// whose directory goes with it, and stops those of a kept run gracefully.
func TestCloseKillsUnkept(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       RunOptions
		keepLater  bool
		wantSignal string
	}{
		{name: "graceful by default", wantSignal: "terminated"},
		{name: "killed when not kept", opts: RunOptions{KillAtClose: true}, wantSignal: "killed"},
		{name: "graceful when kept", opts: RunOptions{KillAtClose: true, Keep: true}, wantSignal: "terminated"},
		{name: "graceful when kept later", opts: RunOptions{KillAtClose: true}, keepLater: true, wantSignal: "terminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.StopGrace = 20 * time.Second
			r := newTestRun(t, tc.opts)
			n, p := startReadyNode(t, r)
			if tc.keepLater {
				if err := r.Keep(); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if e, _ := n.LastExit(); e.Signal != tc.wantSignal || !e.Expected {
				t.Errorf("LastExit = %+v, want signal %q", e, tc.wantSignal)
			}
			if p.alive() {
				t.Error("process alive after Close")
			}
		})
	}
}
