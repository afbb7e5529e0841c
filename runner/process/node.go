package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Errors a Node's methods wrap, for errors.Is.
var (
	// ErrRunning: Start or Restart on a node whose process is still alive.
	ErrRunning = errors.New("node is running")
	// ErrNotRunning: Pause or Resume on a node with no live process.
	ErrNotRunning = errors.New("node is not running")
	// ErrAddrInUse matches the ExitError of a node that died because one of
	// its ports was taken. AllocatePorts cannot rule that out (see there):
	// the caller allocates new ports, calls SetSpec and starts it again.
	ErrAddrInUse = errors.New("address already in use")
)

// NodeSpec is the program a node runs.
type NodeSpec struct {
	// Path is the program. Without a path separator it is looked up in
	// $PATH; a relative path is taken from the runner's working directory.
	Path string
	// Args are the arguments after the program name. No shell is involved.
	Args []string
	// Env is the environment; nil inherits the runner's, as with exec.Cmd.
	// EnvRunID and EnvNode are always set on top.
	Env []string
	// Dir is the working directory; "" means the node's directory, the
	// parent of its data directory.
	Dir string
}

// sig is a signal, named portably; sys_*.go map it to the system's.
type sig int

const (
	sigKill sig = iota
	sigTerm
	sigStop
	sigCont
)

// Exit describes how a node's process ended.
type Exit struct {
	PID       int
	Code      int       // exit code, -1 when a signal ended the process
	Signal    string    // the signal that ended it, "" if it exited by itself
	Expected  bool      // Kill, Stop or Close asked for it
	AddrInUse bool      // its output since the start says "address already in use"
	At        time.Time // when the runner noticed
}

// String says how the process ended, as "exit status 1" or
// "killed by signal killed".
func (e Exit) String() string {
	if e.Signal != "" {
		return "killed by signal " + e.Signal
	}
	return "exit status " + strconv.Itoa(e.Code)
}

// ExitError is a node's process ending without being asked to.
type ExitError struct {
	Node    string
	Exit    Exit
	LogPath string
}

// Error names the node, its pid and how it ended. The log is not named:
// LogPath is in the run's workspace, which teardown removes; the runner
// says where it kept a copy.
func (e *ExitError) Error() string {
	return fmt.Sprintf("node %s (pid %d) ended unexpectedly: %s", e.Node, e.Exit.PID, e.Exit)
}

// Is makes errors.Is(err, ErrAddrInUse) report a port conflict.
func (e *ExitError) Is(target error) bool {
	return target == ErrAddrInUse && e.Exit.AddrInUse
}

// Node is one store node run as an OS process (with whatever it forks) in a
// process group of its own. Its methods are safe for concurrent use.
type Node struct {
	run     *Run
	name    string
	dir     string
	dataDir string
	logPath string
	pidPath string

	mu       sync.Mutex
	spec     NodeSpec
	cmd      *exec.Cmd // current or last process
	running  bool      // cmd started and not reaped
	paused   bool
	stopping bool          // the coming exit was asked for
	exited   chan struct{} // closed when the current process is reaped
	last     *Exit
}

// Name is the node's name within its run.
func (n *Node) Name() string { return n.name }

// DataDir is the node's data directory; it survives restarts.
func (n *Node) DataDir() string { return n.dataDir }

// LogPath is the file that collects the node's stdout and stderr, appended
// across restarts, with a line from the runner at every start and exit.
func (n *Node) LogPath() string { return n.logPath }

// SetSpec replaces the program for the next start, e.g. with new ports after
// a start failed with ErrAddrInUse.
func (n *Node) SetSpec(spec NodeSpec) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running {
		return fmt.Errorf("set spec of node %s: %w", n.name, ErrRunning)
	}
	n.spec = spec
	return nil
}

// Start starts the node's process. It returns once the program is exec'd;
// readiness is the store driver's business. A program that dies at once
// (say, on a taken port) shows up on Exited and in Err.
func (n *Node) Start(ctx context.Context) error {
	if err := n.start(ctx); err != nil {
		return fmt.Errorf("start node %s: %w", n.name, err)
	}
	return nil
}

// Restart starts the node again on the same data directory after it was
// killed or stopped, or after it died. It fails with ErrRunning if the node
// is running: to bounce a live node, Stop or Kill it first.
func (n *Node) Restart(ctx context.Context) error {
	if err := n.start(ctx); err != nil {
		return fmt.Errorf("restart node %s: %w", n.name, err)
	}
	return nil
}

func (n *Node) start(ctx context.Context) error {
	r := n.run
	if err := r.beginStart(); err != nil {
		return err
	}
	defer r.inflight.Done()

	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running {
		return ErrRunning
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	spec := n.spec
	path, err := resolveProgram(spec.Path)
	if err != nil {
		return err
	}
	dir := spec.Dir
	if dir == "" {
		dir = n.dir
	}
	logf, err := os.OpenFile(n.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// The child gets its own copy of the descriptor.
	defer logf.Close()
	fmt.Fprintf(logf, "--- scenario: starting node %s at %s: %s\n",
		n.name, time.Now().Format(time.RFC3339Nano), quoteCommand(path, spec.Args))
	logStart, err := logf.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}

	cmd := &exec.Cmd{
		Path:        path,
		Args:        append([]string{path}, spec.Args...),
		Env:         nodeEnv(spec.Env, r.id, n.name),
		Dir:         dir,
		Stdout:      logf,
		Stderr:      logf,
		SysProcAttr: sysProcAttr(),
	}
	if err := r.spawn(ctx, cmd); err != nil {
		fmt.Fprintf(logf, "--- scenario: node %s failed to start: %v\n", n.name, err)
		return err
	}
	pid := cmd.Process.Pid
	n.cmd, n.running, n.paused, n.stopping = cmd, true, false, false
	n.exited = make(chan struct{})
	// Without the pid file ReapStale still finds the node by its
	// environment; with it, a look at the directory tells a human.
	if err := writeFileAtomic(n.pidPath, []byte(strconv.Itoa(pid)+"\n")); err != nil {
		r.log.Warn("write pid file", "node", n.name, "err", err)
	}
	go n.wait(cmd, n.exited, logStart)
	r.log.Info("node started", "node", n.name, "pid", pid)
	return nil
}

// wait reaps the node's process and records how it ended.
func (n *Node) wait(cmd *exec.Cmd, exited chan struct{}, logStart int64) {
	pid := cmd.Process.Pid
	// Between the leader's exit and its reaping the group id is pinned by
	// the zombie, so the group kill below cannot reach a stranger.
	pinned := waitExitNoReap(pid) == nil
	n.mu.Lock()
	defer n.mu.Unlock()
	if pinned {
		// A node is its whole group: nothing it forked may outlive it, and
		// whoever waits for the node's end must find all of it gone.
		_ = signalGroup(cmd.Process, sigKill)
		if err := waitGroupGone(pid, reapTimeout); err != nil {
			n.run.log.Error("node's process group survives SIGKILL", "node", n.name, "err", err)
		}
	}
	werr := cmd.Wait()
	e := Exit{PID: pid, Code: -1, Expected: n.stopping, At: time.Now()}
	if ps := cmd.ProcessState; ps != nil {
		e.Code, e.Signal = ps.ExitCode(), exitSignal(ps)
	} else {
		n.run.log.Error("wait for node", "node", n.name, "pid", pid, "err", werr)
	}
	if !e.Expected {
		e.AddrInUse = mentionsAddrInUse(n.logPath, logStart)
	}
	n.last = &e
	n.running, n.paused = false, false
	os.Remove(n.pidPath)
	if f, err := os.OpenFile(n.logPath, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		fmt.Fprintf(f, "--- scenario: node %s (pid %d) ended at %s: %s\n",
			n.name, pid, e.At.Format(time.RFC3339Nano), e)
		f.Close()
	}
	if e.Expected {
		n.run.log.Info("node ended", "node", n.name, "pid", pid, "how", e.String())
	} else {
		n.run.log.Warn("node ended unexpectedly", "node", n.name, "pid", pid, "how", e.String(), "addr_in_use", e.AddrInUse)
	}
	// Last, so that whoever waits on it (Close, a test) sees everything
	// this goroutine does finished.
	close(exited)
}

// signal sends sigs, in order, to the node's process group. stopping marks
// the coming exit as asked for. It returns the channel closed at that exit.
func (n *Node) signal(stopping bool, sigs ...sig) (<-chan struct{}, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return nil, ErrNotRunning
	}
	if stopping {
		n.stopping = true
	}
	for _, s := range sigs {
		if err := signalGroup(n.cmd.Process, s); err != nil {
			return n.exited, err
		}
	}
	return n.exited, nil
}

// Kill sends SIGKILL to the node's process group and waits until the node
// is reaped. It does nothing if the node is not running. It takes no
// context: after SIGKILL only the kernel can delay the exit, and that wait
// is bounded internally.
func (n *Node) Kill() error {
	if err := n.kill(); err != nil {
		return fmt.Errorf("kill node %s: %w", n.name, err)
	}
	return nil
}

func (n *Node) kill() error {
	exited, err := n.signal(true, sigKill)
	if errors.Is(err, ErrNotRunning) {
		return nil
	}
	if err != nil {
		return err
	}
	t := time.NewTimer(reapTimeout)
	defer t.Stop()
	select {
	case <-exited:
		return nil
	case <-t.C:
		return fmt.Errorf("not reaped %v after SIGKILL", reapTimeout)
	}
}

// Stop sends SIGTERM to the node's process group and waits up to grace for
// it to exit, then kills it; ctx ending cuts the grace short. The node is
// reaped when Stop returns nil. It does nothing if the node is not running.
func (n *Node) Stop(ctx context.Context, grace time.Duration) error {
	// SIGCONT after SIGTERM: a paused node would keep the SIGTERM pending
	// until the grace ran out.
	exited, err := n.signal(true, sigTerm, sigCont)
	if errors.Is(err, ErrNotRunning) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop node %s: %w", n.name, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
		return nil
	case <-t.C:
		n.run.log.Info("node still running after SIGTERM; killing", "node", n.name, "grace", grace)
	case <-ctx.Done():
	}
	if err := n.kill(); err != nil {
		return fmt.Errorf("stop node %s: %w", n.name, err)
	}
	return nil
}

// Pause freezes the node's process group with SIGSTOP. The processes keep
// their sockets and memory but answer nothing, as a node in a long GC pause
// or on a hung VM would. Delivery is asynchronous but immediate.
func (n *Node) Pause() error {
	return n.setPaused(true)
}

// Resume continues a paused node with SIGCONT.
func (n *Node) Resume() error {
	return n.setPaused(false)
}

func (n *Node) setPaused(p bool) error {
	s, verb := sigStop, "pause"
	if !p {
		s, verb = sigCont, "resume"
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return fmt.Errorf("%s node %s: %w", verb, n.name, ErrNotRunning)
	}
	if err := signalGroup(n.cmd.Process, s); err != nil {
		return fmt.Errorf("%s node %s: %w", verb, n.name, err)
	}
	n.paused = p
	return nil
}

// PID is the pid (and process group id) of the node's process, 0 if none.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return 0
	}
	return n.cmd.Process.Pid
}

// Running reports whether the node's process is alive (paused or not).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running
}

// Paused reports whether the node is running and paused.
func (n *Node) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running && n.paused
}

// Exited returns a channel closed when the node's current process has ended
// and been reaped. Before the first start it is already closed; after a
// restart, call Exited again for the new process. Err or LastExit then say
// whether the end was asked for.
func (n *Node) Exited() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exited
}

// LastExit returns how the node's last process ended; false if none has.
func (n *Node) LastExit() (Exit, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.last == nil {
		return Exit{}, false
	}
	return *n.last, true
}

// Err returns an *ExitError if the node's last process ended without Kill,
// Stop or Close asking for it, and nil while it runs, before it first ran,
// or when its end was asked for.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running || n.last == nil || n.last.Expected {
		return nil
	}
	return &ExitError{Node: n.name, Exit: *n.last, LogPath: n.logPath}
}

// Tail returns the last lines of the node's log (at most lines of them,
// without the final newline), for error messages that show why a node
// failed. It returns "" if the log cannot be read.
func (n *Node) Tail(lines int) string {
	s, err := TailFile(n.logPath, lines)
	if err != nil {
		return ""
	}
	return s
}

func newNode(r *Run, name, dataDir, logPath string, spec NodeSpec) *Node {
	dir := filepath.Dir(dataDir)
	exited := make(chan struct{})
	close(exited)
	return &Node{
		run:     r,
		name:    name,
		dir:     dir,
		dataDir: dataDir,
		logPath: logPath,
		pidPath: filepath.Join(dir, "pid"),
		spec:    spec,
		exited:  exited,
	}
}

// resolveProgram makes path absolute, so that a relative path means the same
// whatever working directory the node gets.
func resolveProgram(path string) (string, error) {
	if path == "" {
		return "", errors.New("no program given")
	}
	if !strings.ContainsRune(path, filepath.Separator) {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", err
		}
		path = p
	}
	return filepath.Abs(path)
}

// nodeEnv is base (or the runner's environment) with the run's markers set;
// stale copies are dropped so that there is exactly one of each.
func nodeEnv(base []string, runID, node string) []string {
	if base == nil {
		base = os.Environ()
	}
	env := make([]string, 0, len(base)+2)
	for _, kv := range base {
		if strings.HasPrefix(kv, EnvRunID+"=") || strings.HasPrefix(kv, EnvNode+"=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, EnvRunID+"="+runID, EnvNode+"="+node)
}

func quoteCommand(path string, args []string) string {
	parts := make([]string, 0, len(args)+1)
	for _, a := range append([]string{path}, args...) {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
