// Package podagent is the supervisor that runs a store server inside a
// Kubernetes pod. A container's restart is the kubelet's to decide (after
// its own back-off), so a fault that stops a node for a declared time and
// starts it again, with the same pod and data, needs a process in the pod
// that holds the server and does what the runner asks: the agent. The
// runner talks to it through exec (`scenario agent ctl`), over a Unix
// socket in the pod; nothing listens on the network.
package podagent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/internal/netcut"
	"github.com/coordlab/scenario/internal/proc"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
)

// Request is one line a client sends.
type Request struct {
	Verb  string        `json:"verb"` // start, kill, stop, pause, resume, status, watch, net, disk-start, disk-stop, usage
	Argv  []string      `json:"argv,omitempty"`
	Grace time.Duration `json:"grace,omitempty"`
	// Files are written before a start, path to content: the
	// configuration a runner wrote for the server on its own machine.
	Files map[string][]byte `json:"files,omitempty"`
	// Net replaces the pod's partition rules (verb net).
	Net *netcut.Rules `json:"net,omitempty"`
	// Disk starts or stops a disk fault's writers in the pod.
	Disk *DiskRequest `json:"disk,omitempty"`
}

// DiskRequest names a disk fault's writers in the pod.
type DiskRequest struct {
	ID   string         `json:"id"`
	Dir  string         `json:"dir,omitempty"`  // disk-start: where to write
	Spec *plan.DiskSpec `json:"spec,omitempty"` // disk-start
}

// Event is one line the agent answers with. A watch gets the current
// state, then one event per change, until the client goes.
type Event struct {
	State string `json:"state"` // running, exited, stopped, paused, error
	PID   int    `json:"pid,omitempty"`
	// Exit says how the server ended: "exit status 1", "signal: killed".
	Exit string `json:"exit,omitempty"`
	// Expected is true when the exit was asked for (kill, stop).
	Expected bool   `json:"expected,omitempty"`
	Error    string `json:"error,omitempty"`
	// Disk is what a disk fault's writers did (disk-stop), and DiskError
	// why some of them stopped early.
	Disk      *faults.DiskTotals `json:"disk,omitempty"`
	DiskError string             `json:"disk_error,omitempty"`
	// Usage is the server process's resource use (verb usage).
	Usage *metrics.Usage `json:"usage,omitempty"`
}

// Agent supervises one server process.
type Agent struct {
	out io.Writer // the server's output goes here: the container's log

	mu       sync.Mutex
	cmd      *exec.Cmd
	argv     []string
	state    Event
	expected bool
	done     chan struct{} // closed when the current server exits
	watchers map[chan Event]struct{}
	disks    map[string]*faults.DiskWriters // by fault

	usageMu sync.Mutex
	threads *proc.ThreadReader // the server's threads, kept across usage samples
}

// New returns an agent whose server writes to out.
func New(out io.Writer) *Agent {
	return &Agent{out: out, state: Event{State: "stopped"}, watchers: map[chan Event]struct{}{}, disks: map[string]*faults.DiskWriters{}}
}

// Serve answers requests on the Unix socket at path until ctx ends, then
// stops the server (SIGTERM, then SIGKILL after grace).
func (a *Agent) Serve(ctx context.Context, path string, grace time.Duration) error {
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("agent: listen %s: %w", path, err)
	}
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				a.stop(grace, false)
				return nil
			}
			return fmt.Errorf("agent: accept: %w", err)
		}
		go a.handle(ctx, conn)
	}
}

func (a *Agent) handle(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	line, err := bufio.NewReader(io.LimitReader(conn, 1<<20)).ReadBytes('\n')
	if err != nil {
		return
	}
	var req Request
	enc := json.NewEncoder(conn)
	if err := json.Unmarshal(line, &req); err != nil {
		_ = enc.Encode(Event{State: "error", Error: "bad request: " + err.Error()})
		return
	}
	if req.Verb == "watch" {
		a.watch(ctx, conn, enc)
		return
	}
	_ = enc.Encode(a.Do(req))
}

// Do carries out one request and returns the state after it.
func (a *Agent) Do(req Request) Event {
	var err error
	switch req.Verb {
	case "start":
		if err = writeFiles(req.Files); err == nil {
			err = a.start(req.Argv)
		}
	case "kill":
		a.stop(0, true)
	case "stop":
		a.stop(req.Grace, true)
	case "pause":
		err = a.signal(syscall.SIGSTOP, "paused")
	case "resume":
		err = a.signal(syscall.SIGCONT, "running")
	case "status":
	case "net":
		if req.Net == nil {
			err = errors.New("net: no rules given")
		} else {
			err = netcut.Apply(*req.Net)
		}
	case "disk-start":
		err = a.startDisk(req.Disk)
	case "disk-stop":
		return a.stopDisk(req.Disk)
	case "usage":
		return a.usage()
	default:
		err = fmt.Errorf("unknown verb %q (want start, kill, stop, pause, resume, status, watch, net, disk-start, disk-stop or usage)", req.Verb)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		return Event{State: "error", Error: err.Error()}
	}
	return a.state
}

// usage reads the server's resource use, as the runner reads a process
// node's: the server's own process, from /proc.
func (a *Agent) usage() Event {
	a.mu.Lock()
	e := a.state
	a.mu.Unlock()
	if e.State != "running" && e.State != "paused" {
		return Event{State: "error", Error: "usage: the server is not running"}
	}
	a.usageMu.Lock()
	defer a.usageMu.Unlock()
	if a.threads == nil || a.threads.PID() != e.PID {
		if a.threads != nil {
			a.threads.Close()
		}
		a.threads = proc.NewThreadReader("/proc", e.PID)
	}
	u, err := metrics.ReadProcess(e.PID, a.threads)
	if err != nil {
		return Event{State: "error", Error: "usage: " + err.Error()}
	}
	e.Usage = &u
	return e
}

// startDisk starts a disk fault's writers. They outlive the request: the
// agent's own context, not the caller's, ends them (at disk-stop).
func (a *Agent) startDisk(r *DiskRequest) error {
	if r == nil || r.Spec == nil || r.ID == "" || !filepath.IsAbs(r.Dir) {
		return errors.New("disk-start: needs a fault id, an absolute directory and the disk settings")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.disks[r.ID]; ok {
		return fmt.Errorf("disk-start: fault %s already has writers here", r.ID)
	}
	d, err := faults.StartDiskWriters(context.Background(), *r.Spec, r.Dir, r.ID, nil)
	if err != nil {
		return fmt.Errorf("disk-start: %w", err)
	}
	a.disks[r.ID] = d
	return nil
}

// stopDisk stops a disk fault's writers and answers with what they did.
func (a *Agent) stopDisk(r *DiskRequest) Event {
	if r == nil {
		return Event{State: "error", Error: "disk-stop: no fault id given"}
	}
	a.mu.Lock()
	d := a.disks[r.ID]
	a.mu.Unlock()
	if d == nil {
		return Event{State: "error", Error: fmt.Sprintf("disk-stop: fault %s has no writers here", r.ID)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Stop(ctx); err != nil {
		return Event{State: "error", Error: "disk-stop: " + err.Error()}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.disks, r.ID)
	e := a.state
	t := d.Totals()
	e.Disk = &t
	if err := d.Err(); err != nil {
		e.DiskError = err.Error()
	}
	return e
}

func (a *Agent) start(argv []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd != nil {
		return fmt.Errorf("the server is already running (pid %d)", a.cmd.Process.Pid)
	}
	if len(argv) == 0 {
		argv = a.argv // a restart runs what ran before
	}
	if len(argv) == 0 {
		return errors.New("start: no command given and none ran before")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = a.out, a.out
	// A group of its own, so pause and kill reach a server's children.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	a.cmd, a.argv, a.expected = cmd, argv, false
	a.done = make(chan struct{})
	a.publish(Event{State: "running", PID: cmd.Process.Pid})
	go a.reap(cmd, a.done)
	return nil
}

func (a *Agent) reap(cmd *exec.Cmd, done chan struct{}) {
	err := cmd.Wait()
	exit := "exit status 0"
	if err != nil {
		exit = err.Error()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cmd = nil
	a.publish(Event{State: "exited", PID: cmd.Process.Pid, Exit: exit, Expected: a.expected})
	close(done)
}

// publish sets the state and tells every watcher; a.mu is held.
func (a *Agent) publish(e Event) {
	a.state = e
	for w := range a.watchers {
		select {
		case w <- e:
		default: // a watcher that does not read loses events, not the agent
		}
	}
}

// stop ends the server: SIGTERM and up to grace for it to go, then
// SIGKILL. A paused server is resumed first so that it can act on SIGTERM.
func (a *Agent) stop(grace time.Duration, expected bool) {
	a.mu.Lock()
	cmd, done := a.cmd, a.done
	if cmd == nil {
		a.mu.Unlock()
		return
	}
	a.expected = expected
	a.mu.Unlock()
	pg := -cmd.Process.Pid
	if grace > 0 {
		_ = syscall.Kill(pg, syscall.SIGTERM)
		_ = syscall.Kill(pg, syscall.SIGCONT)
		select {
		case <-done:
			return
		case <-time.After(grace):
		}
	}
	_ = syscall.Kill(pg, syscall.SIGKILL)
	<-done
}

func (a *Agent) signal(sig syscall.Signal, state string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cmd == nil {
		return errors.New("the server is not running")
	}
	if err := syscall.Kill(-a.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("%s: %w", sig, err)
	}
	a.publish(Event{State: state, PID: a.cmd.Process.Pid})
	return nil
}

func (a *Agent) watch(ctx context.Context, conn net.Conn, enc *json.Encoder) {
	ch := make(chan Event, 64)
	a.mu.Lock()
	a.watchers[ch] = struct{}{}
	cur := a.state
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.watchers, ch)
		a.mu.Unlock()
	}()
	// A client that goes away shows as a read error.
	gone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, conn)
		close(gone)
	}()
	if enc.Encode(cur) != nil {
		return
	}
	for {
		select {
		case e := <-ch:
			if enc.Encode(e) != nil {
				return
			}
		case <-gone:
			return
		case <-ctx.Done():
			return
		}
	}
}

// writeFiles writes files whole (a reader never sees half of one),
// creating their directories.
func writeFiles(files map[string][]byte) error {
	for path, b := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		tmp := path + ".agent-tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	return nil
}

// Ctl sends one request to the agent at socket and copies its answers to
// out: one line, or a stream for watch. It fails when the answer is an
// error.
func Ctl(ctx context.Context, socket string, req Request, out io.Writer) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return fmt.Errorf("agent not reachable: %w", err)
	}
	defer conn.Close()
	go func() {
		<-ctx.Done()
		conn.Close()
	}()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return err
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("agent answered %q: %w", sc.Text(), err)
		}
		fmt.Fprintf(out, "%s\n", sc.Bytes())
		if e.State == "error" {
			return errors.New(e.Error)
		}
		if req.Verb != "watch" {
			return nil
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}

// ParseEvent reads one line Ctl printed.
func ParseEvent(line string) (Event, error) {
	var e Event
	err := json.Unmarshal([]byte(strings.TrimSpace(line)), &e)
	return e, err
}

// Install copies this executable to dst, for an init container to hand
// the agent to a store's container through a shared volume.
func Install(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// Pause is a pod sandbox's process: it waits for SIGTERM or SIGINT and
// reaps the orphans a pid namespace's first process inherits.
func Pause(ctx context.Context) {
	go func() {
		for {
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(-1, &ws, 0, nil); err != nil {
				if errors.Is(err, syscall.ECHILD) {
					time.Sleep(time.Second)
				}
			}
		}
	}()
	<-ctx.Done()
}

// SessionLine is one line of a session's output: an event of the watch,
// or the reply to the request with ID.
type SessionLine struct {
	ID    int    `json:"id,omitempty"`
	Reply *Event `json:"reply,omitempty"`
	Event *Event `json:"event,omitempty"`
}

// SessionRequest is one line of a session's input.
type SessionRequest struct {
	ID      int     `json:"id"`
	Request Request `json:"request"`
}

// Session serves a runner over one long-lived stream (an exec's stdin and
// stdout), so that a fault costs a line each way rather than an exec: it
// writes every event of the watch, and answers each request read from in
// with a reply carrying its ID, until in ends or ctx does.
func Session(ctx context.Context, socket string, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	write := func(l SessionLine) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(l)
	}
	watchDone := make(chan error, 1)
	go func() {
		pr, pw := io.Pipe()
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				if e, err := ParseEvent(sc.Text()); err == nil {
					write(SessionLine{Event: &e})
				}
			}
		}()
		err := Ctl(ctx, socket, Request{Verb: "watch"}, pw)
		pw.Close()
		watchDone <- err
	}()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 32<<20) // a start carries configuration files
	var wg sync.WaitGroup
	defer wg.Wait()
	for sc.Scan() {
		var r SessionRequest
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			write(SessionLine{Reply: &Event{State: "error", Error: "bad request: " + err.Error()}})
			continue
		}
		wg.Go(func() {
			var buf strings.Builder
			err := Ctl(ctx, socket, r.Request, &buf)
			e, perr := ParseEvent(buf.String())
			if perr != nil {
				e = Event{State: "error", Error: fmt.Sprintf("%v", err)}
			}
			write(SessionLine{ID: r.ID, Reply: &e})
		})
	}
	cancel()
	<-watchDone
	return sc.Err()
}
