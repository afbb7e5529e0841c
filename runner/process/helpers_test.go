//go:build linux

package process

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the programs the tests run: with
// helperEnv set it is a fake node or a fake runner instead of a test.
const helperEnv = "PROCESS_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "node":
		fakeNode(os.Args[1:])
	case "runner":
		fakeRunner()
	case "exit":
		os.Exit(0)
	case "ports":
		holdPorts()
	}
	os.Exit(m.Run())
}

// holdPorts allocates PORTS_N ports, writes them to stdout as JSON and
// holds them until stdin closes.
func holdPorts() {
	n, _ := strconv.Atoi(os.Getenv("PORTS_N"))
	ports, release, err := AllocatePorts(n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hold ports:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(ports); err != nil {
		os.Exit(1)
	}
	io.Copy(io.Discard, os.Stdin)
	release()
	os.Exit(0)
}

// fakeNode listens on -listen, writes its pid to -pidfile, optionally starts
// a child of its own (same process group, same environment) and sleeps.
func fakeNode(args []string) {
	fs := flag.NewFlagSet("fake-node", flag.ExitOnError)
	listen := fs.String("listen", "", "address to listen on")
	pidfile := fs.String("pidfile", "", "where to write the pid")
	childPidfile := fs.String("child-pidfile", "", "start a child that writes its pid here")
	ignoreTerm := fs.Bool("ignore-term", false, "ignore SIGTERM")
	exitAfter := fs.Duration("exit-after", 0, "exit on its own after this long")
	exitCode := fs.Int("exit-code", 0, "exit code for -exit-after")
	fs.Parse(args)

	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if *listen != "" {
		l, err := net.Listen("tcp", *listen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake node:", err)
			os.Exit(1)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	if *childPidfile != "" {
		self, _ := os.Executable()
		c := exec.Command(self, "-pidfile", *childPidfile)
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fake node: start child:", err)
			os.Exit(1)
		}
	}
	if *pidfile != "" {
		if err := writeFileAtomic(*pidfile, []byte(strconv.Itoa(os.Getpid()))); err != nil {
			fmt.Fprintln(os.Stderr, "fake node:", err)
			os.Exit(1)
		}
	}
	fmt.Println("fake node ready")
	if *exitAfter > 0 {
		time.Sleep(*exitAfter)
		fmt.Println("fake node exiting on its own")
		os.Exit(*exitCode)
	}
	for {
		time.Sleep(time.Hour)
	}
}

// runnerReport is what the fake runner prints once its nodes are up.
type runnerReport struct {
	ID    string
	Dir   string
	Nodes []int
	Child int // started by node n1, not by the runner
}

// fakeRunner starts three fake nodes in a run under $PROCESS_TEST_STATE,
// prints a runnerReport line and blocks until it is killed.
func fakeRunner() {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "fake runner:", err)
		os.Exit(2)
	}
	run, err := NewRun(RunOptions{
		StateDir: os.Getenv("PROCESS_TEST_STATE"),
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		fail(err)
	}
	rep := runnerReport{ID: run.ID(), Dir: run.Dir()}
	childPidfile := run.Dir() + "/child.pid"
	for i := 1; i <= 3; i++ {
		var args []string
		if i == 1 {
			args = []string{"-child-pidfile", childPidfile}
		}
		n, err := run.AddNode("n"+strconv.Itoa(i), helperSpec(args...))
		if err != nil {
			fail(err)
		}
		if err := n.Start(context.Background()); err != nil {
			fail(err)
		}
		rep.Nodes = append(rep.Nodes, n.PID())
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(childPidfile); err == nil {
			rep.Child, _ = strconv.Atoi(string(b))
			break
		}
		if time.Now().After(deadline) {
			fail(fmt.Errorf("no child pid"))
		}
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	for {
		time.Sleep(time.Hour)
	}
}

// helperSpec runs the test binary as a fake node with args.
func helperSpec(args ...string) NodeSpec {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return NodeSpec{Path: self, Args: args, Env: helperEnviron("node")}
}

// helperEnviron is this process's environment with the helper role set.
func helperEnviron(role string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, helperEnv+"=") && !strings.HasPrefix(kv, EnvRunID+"=") {
			env = append(env, kv)
		}
	}
	// A race-enabled helper otherwise sleeps a second when it exits 0.
	if os.Getenv("GORACE") == "" {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return append(env, helperEnv+"="+role)
}

// startHelper starts the test binary in role with extra environment, in
// its own process group, and kills the group at cleanup.
func startHelper(t *testing.T, role string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(helperEnviron(role), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Only while unreaped: the group id is then pinned to this process.
		if cmd.ProcessState == nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
	})
	return cmd
}

// testLogger logs into the test's output.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newTestRun returns a run in a fresh state dir, closed at cleanup.
func newTestRun(t *testing.T, opts RunOptions) *Run {
	t.Helper()
	if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	r, err := NewRun(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return r
}

// proc is a process as the tests track it: pid plus start time, so that a
// recycled pid never passes for the process the test started.
type proc struct {
	pid   int
	start string
}

func procOf(t *testing.T, pid int) proc {
	t.Helper()
	_, start, err := procStat(pid)
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	return proc{pid, start}
}

// alive reports whether p still runs; a zombie is dead.
func (p proc) alive() bool {
	state, start, err := procStat(p.pid)
	return err == nil && start == p.start && state != 'Z' && state != 'X'
}

// stopped reports whether p is stopped by a signal.
func (p proc) stopped() bool {
	state, _, err := procStat(p.pid)
	return err == nil && state == 'T'
}

// eventually polls cond every 10 ms until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", timeout, what)
		}
	}
}

// startReadyNode adds a fake node n1 to r with args, starts it and waits
// until its signal handlers are in place (it writes its pid file then).
func startReadyNode(t *testing.T, r *Run, args ...string) (*Node, proc) {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "pid")
	n, err := r.AddNode("n1", helperSpec(append(args, "-pidfile", ready)...))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return n, readPid(t, ready)
}

// readPid waits for a pid file and returns the process it names.
func readPid(t *testing.T, path string) proc {
	t.Helper()
	var pid int
	eventually(t, 20*time.Second, "pid file "+path+" exists", func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return procOf(t, pid)
}

// waitExited waits for the node's current process to be reaped.
func waitExited(t *testing.T, n *Node) {
	t.Helper()
	select {
	case <-n.Exited():
	case <-time.After(20 * time.Second):
		t.Fatalf("node %s did not exit", n.Name())
	}
}

// deadIdentity is the identity of a process that has exited and been
// reaped: a runner that died.
func deadIdentity(t *testing.T) identity {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = helperEnviron("exit")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	me, err := selfIdentity()
	if err != nil {
		t.Fatal(err)
	}
	return identity{pid: pid, start: "1", pidns: me.pidns}
}

func dial(port int) error {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err == nil {
		c.Close()
	}
	return err
}
