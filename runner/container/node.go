package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	ctr "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"golang.org/x/sys/unix"

	"github.com/coordlab/scenario/internal/proc"
	"github.com/coordlab/scenario/runner/process"
)

// notFound reports an engine error about something already gone.
func notFound(err error) bool { return cerrdefs.IsNotFound(err) }

// forceRemove removes a container, running or not. The engine's forced
// remove kills a running container first, and when the container exits
// between the engine's look and its kill (a store stopping at teardown), it
// refuses with "Could not kill running container ..., cannot remove -
// Container ... is not running", a conflict that a second try does not
// meet. Seen once in CI on a node stopped just before; so conflicts are
// retried a few times, briefly.
func forceRemove(ctx context.Context, cli *testcontainers.DockerClient, id string) error {
	var err error
	for attempt := range removeAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
			}
		}
		_, err = cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || notFound(err) {
			return nil
		}
		if !removeRetries(err) {
			return err
		}
	}
	return err
}

// removeRetries reports whether a failed forced remove is worth another try.
func removeRetries(err error) bool {
	return cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "is not running")
}

const removeAttempts = 5

// ErrNotRunning is returned by Pause and Resume when the store's container
// is not running.
var ErrNotRunning = errors.New("not running")

// exitTimeout bounds the wait for the engine to report a container's end
// after a kill.
const exitTimeout = 10 * time.Second

// NodeSpec is what a node's store container runs.
type NodeSpec struct {
	// Image is the store's image.
	Image string
	// Path and Args are the program and its arguments, run without a
	// shell; Path replaces the image's entrypoint.
	Path string
	Args []string
	// DataDir is a directory on the host that the container sees at the
	// same path, through a volume of the run's: configuration written
	// there by the runner and the store's data live on the host, so they
	// outlive the container and stay where --keep keeps them.
	DataDir string
	// LogPath is the host file the store's output is appended to, across
	// restarts.
	LogPath string
}

// Node is one store node: a sandbox container holding its network
// namespace, and the store's container in that namespace.
type Node struct {
	run        *Run
	name       string
	sandboxID  string
	sandboxPID int
	addr       netip.Addr

	mu       sync.Mutex
	spec     NodeSpec
	ctr      testcontainers.Container // nil until the first start
	running  bool
	paused   bool
	stopping bool          // the coming exit was asked for
	pid      int           // host pid of the store, while running
	exited   chan struct{} // closed when the current run of the container ends
	last     *Exit
	bg       sync.WaitGroup // log followers and exit waiters
	waits    threadWaits    // the store's threads' CPU wait, read by Usage
}

// Exit describes how the store's container last ended.
type Exit struct {
	Code     int
	OOM      bool
	Expected bool // Kill, Stop or Close asked for it
	At       time.Time
}

func (e Exit) String() string {
	s := "exit status " + strconv.Itoa(e.Code)
	switch {
	case e.OOM:
		s += " (out of memory)"
	case e.Code == 137:
		s += " (SIGKILL)"
	case e.Code == 143:
		s += " (SIGTERM)"
	}
	return s
}

// ExitError is a store's container ending without being asked to.
type ExitError struct {
	Node    string
	Exit    Exit
	LogPath string
}

func (e *ExitError) Error() string {
	// LogPath is in the run's workspace, removed at teardown: the runner
	// says where it kept a copy.
	return fmt.Sprintf("node %s's container ended unexpectedly: %s", e.Node, e.Exit)
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Name is the node's name within its run.
func (n *Node) Name() string { return n.name }

// DataDir is the node's data directory, on the host and in the container.
func (n *Node) DataDir() string { return n.spec.DataDir }

// LogPath is the host file that collects the store's output.
func (n *Node) LogPath() string { return n.spec.LogPath }

// SetCommand sets the store's program and arguments before its first start
// (its addresses are known only once the sandbox runs).
func (n *Node) SetCommand(path string, args []string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ctr != nil {
		return fmt.Errorf("set command of node %s: its container exists already", n.name)
	}
	n.spec.Path, n.spec.Args = path, args
	return nil
}

// Start creates the store's container on the first call and starts it.
// It returns once the engine has started the program; readiness is the
// store driver's business.
func (n *Node) Start(ctx context.Context) error {
	if err := n.start(ctx); err != nil {
		return fmt.Errorf("start node %s: %w", n.name, err)
	}
	return nil
}

// Restart starts the store's container again after a kill or stop, over
// the same volume.
func (n *Node) Restart(ctx context.Context) error { return n.Start(ctx) }

func (n *Node) start(ctx context.Context) error {
	n.mu.Lock()
	stopping := n.stopping
	n.mu.Unlock()
	if stopping {
		// Kill and Stop return at the process's death; the engine says
		// so a little later, and refuses a start until it has.
		wctx, cancel := context.WithTimeout(ctx, exitTimeout)
		err := n.awaitEngine(wctx)
		cancel()
		if err != nil {
			return err
		}
	}
	n.mu.Lock()
	if n.running {
		n.mu.Unlock()
		return errors.New("already running")
	}
	c := n.ctr
	spec := n.spec
	n.mu.Unlock()
	if c == nil {
		var err error
		if c, err = n.create(ctx, spec); err != nil {
			return err
		}
	}
	log, err := os.OpenFile(spec.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	// Docker's `since` is inclusive and exact to the nanosecond: a restart
	// does not copy the previous run's output again.
	since := time.Now()
	fmt.Fprintf(log, "--- scenario: starting container %s (%s) at %s\n", shortID(c.GetContainerID()), spec.Image, since.UTC().Format(time.RFC3339Nano))
	if err := c.Start(ctx); err != nil {
		log.Close()
		return err
	}
	info, err := n.run.cli.ContainerInspect(ctx, c.GetContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		log.Close()
		return fmt.Errorf("inspect: %w", err)
	}
	exited := make(chan struct{})
	n.mu.Lock()
	n.running, n.paused, n.stopping = true, false, false
	n.pid = info.Container.State.Pid
	n.exited = exited
	n.mu.Unlock()
	id := c.GetContainerID()
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		n.watch(id, since, exited, log)
	}()
	return nil
}

// create creates the store's container in the sandbox's namespace, with
// the data directory as a volume labelled with the run.
func (n *Node) create(ctx context.Context, spec NodeSpec) (testcontainers.Container, error) {
	r := n.run
	labels := r.labels(n.name, roleStore)
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:      spec.Image,
			Name:       r.containerName(n.name, roleStore),
			Entrypoint: []string{spec.Path},
			Cmd:        spec.Args,
			Labels:     labels,
			// As the runner's own user: what the store writes into the
			// data directory on the host is then the runner's to
			// remove, root or not.
			ConfigModifier: func(c *ctr.Config) { c.User = fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()) },
			HostConfigModifier: func(hc *ctr.HostConfig) {
				hc.NetworkMode = ctr.NetworkMode("container:" + n.sandboxID)
				hc.Mounts = append(hc.Mounts, mount.Mount{
					Type:   mount.TypeVolume,
					Source: r.containerName(n.name, roleStore) + "-data",
					Target: spec.DataDir,
					VolumeOptions: &mount.VolumeOptions{
						Labels: labels,
						// A local volume bound to the host directory: the
						// engine creates it with the container, and
						// removing it leaves the directory alone.
						DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
							"type": "none", "o": "bind", "device": spec.DataDir,
						}},
					},
				})
			},
		},
	})
	if c != nil {
		n.mu.Lock()
		n.ctr = c
		n.mu.Unlock()
	}
	if err != nil {
		return nil, fmt.Errorf("create container from %s: %w", spec.Image, err)
	}
	return c, nil
}

// watch copies the container's output since since to log while it runs,
// then records how it ended, closes exited and, once the output is
// drained, adds an end line and closes log.
func (n *Node) watch(id string, since time.Time, exited chan struct{}, log *os.File) {
	defer log.Close()
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		n.follow(id, since, log)
	}()
	res := n.run.cli.ContainerWait(context.Background(), id, client.ContainerWaitOptions{Condition: ctr.WaitConditionNotRunning})
	e := Exit{Code: -1}
	select {
	case r := <-res.Result:
		e.Code = int(r.StatusCode)
	case err := <-res.Error:
		n.run.log.Warn("wait for container", "node", n.name, "err", err)
	}
	e.At = time.Now()
	if info, err := n.run.cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{}); err == nil && info.Container.State != nil {
		e.OOM = info.Container.State.OOMKilled
	}
	n.mu.Lock()
	e.Expected = n.stopping
	n.running, n.paused, n.pid = false, false, 0
	n.last = &e
	n.mu.Unlock()
	close(exited)
	// The engine ends the log stream once the container has stopped.
	select {
	case <-followed:
	case <-time.After(logDrainTimeout):
	}
	fmt.Fprintf(log, "--- scenario: container ended at %s: %s\n", e.At.UTC().Format(time.RFC3339Nano), e)
}

// logDrainTimeout bounds the wait for a stopped container's last output.
const logDrainTimeout = 2 * time.Second

// follow appends the container's output since since to log until the
// engine ends the stream, when the container stops.
func (n *Node) follow(id string, since time.Time, log io.Writer) {
	rc, err := n.run.cli.ContainerLogs(context.Background(), id, client.ContainerLogsOptions{
		ShowStdout: true, ShowStderr: true, Follow: true,
		Since: fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()),
	})
	if err != nil {
		n.run.log.Warn("follow container log", "node", n.name, "err", err)
		return
	}
	defer rc.Close()
	if _, err := stdcopy.StdCopy(log, log, rc); err != nil && !errors.Is(err, io.EOF) {
		n.run.log.Debug("container log ended", "node", n.name, "err", err)
	}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// expectExit marks the coming exit as asked for and returns the
// container's id, a pidfd of the store's process (close it), and whether
// it is paused; fd is -1 if the store is not running.
func (n *Node) expectExit() (id string, fd int, paused bool, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return "", -1, false, nil
	}
	n.stopping = true
	fd, err = unix.PidfdOpen(n.pid, 0)
	if errors.Is(err, unix.ESRCH) {
		// Gone already; the engine has yet to say so.
		return n.ctr.GetContainerID(), -1, n.paused, nil
	}
	return n.ctr.GetContainerID(), fd, n.paused, err
}

// Kill kills the store's container (docker kill, SIGKILL) and returns once
// its process is dead. It does nothing if it is not running. The death is
// watched through a pidfd rather than waited for from the engine, whose
// report comes a few hundred milliseconds later: a fault's applied time,
// from which failover is measured, is the node's death.
func (n *Node) Kill() error {
	id, fd, _, err := n.expectExit()
	if err != nil {
		return fmt.Errorf("kill node %s: %w", n.name, err)
	}
	if id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), exitTimeout)
	defer cancel()
	if fd < 0 {
		return n.awaitEngine(ctx)
	}
	defer unix.Close(fd)
	killed := make(chan error, 1)
	go func() {
		_, err := n.run.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
		killed <- err
	}()
	return n.awaitDeath(ctx, "kill", fd, killed)
}

// awaitDeath waits until the process behind fd is dead, or the engine
// call whose outcome comes on call fails.
func (n *Node) awaitDeath(ctx context.Context, verb string, fd int, call <-chan error) error {
	dead := make(chan error, 1)
	go func() { dead <- proc.WaitPidfd(ctx, fd) }()
	for {
		select {
		case err := <-dead:
			if err != nil {
				return fmt.Errorf("%s node %s: container not ended: %w", verb, n.name, err)
			}
			return nil
		case err := <-call:
			if err != nil && !notFound(err) {
				return fmt.Errorf("%s node %s: %w", verb, n.name, err)
			}
			call = nil // done; the process is dead or about to be
		}
	}
}

// awaitEngine waits until the engine reports the end of the container's
// current run.
func (n *Node) awaitEngine(ctx context.Context) error {
	select {
	case <-n.Exited():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("node %s: the engine did not report the container's end: %w", n.name, ctx.Err())
	}
}

// Stop stops the store's container (docker stop: SIGTERM, then SIGKILL
// after grace) and returns once its process has ended; ctx ending kills it
// at once. It does nothing if it is not running.
func (n *Node) Stop(ctx context.Context, grace time.Duration) error {
	id, fd, paused, err := n.expectExit()
	if err != nil {
		return fmt.Errorf("stop node %s: %w", n.name, err)
	}
	if id == "" {
		return nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+exitTimeout)
	defer cancel()
	if fd < 0 {
		return n.awaitEngine(wctx)
	}
	defer unix.Close(fd)
	if paused {
		// The engine refuses to stop a paused container.
		if err := n.Resume(); err != nil {
			return fmt.Errorf("stop node %s: %w", n.name, err)
		}
	}
	secs := int(math.Ceil(grace.Seconds()))
	stopped := make(chan error, 1)
	go func() {
		_, err := n.run.cli.ContainerStop(wctx, id, client.ContainerStopOptions{Timeout: &secs})
		stopped <- err
	}()
	done := make(chan error, 1)
	go func() { done <- n.awaitDeath(wctx, "stop", fd, stopped) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return n.Kill()
	}
}

// Pause freezes every process of the store's container (docker pause).
func (n *Node) Pause() error { return n.setPaused(true) }

// Resume thaws a paused store container (docker unpause).
func (n *Node) Resume() error { return n.setPaused(false) }

func (n *Node) setPaused(p bool) error {
	verb := "pause"
	if !p {
		verb = "resume"
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.running {
		return fmt.Errorf("%s node %s: %w", verb, n.name, ErrNotRunning)
	}
	if n.paused == p {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), exitTimeout)
	defer cancel()
	id := n.ctr.GetContainerID()
	var err error
	if p {
		_, err = n.run.cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
	} else {
		_, err = n.run.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	}
	if err != nil {
		return fmt.Errorf("%s node %s: %w", verb, n.name, err)
	}
	n.paused = p
	return nil
}

// PID is the host pid of the store's process, 0 while it is not running.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pid
}

// Running reports whether the store's container runs (paused or not).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.running
}

// Exited returns a channel closed when the container's current run ends;
// after a restart, call it again.
func (n *Node) Exited() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exited
}

// Err returns an *ExitError if the container last ended without Kill,
// Stop or Close asking for it, and nil otherwise.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running || n.last == nil || n.last.Expected {
		return nil
	}
	return &ExitError{Node: n.name, Exit: *n.last, LogPath: n.spec.LogPath}
}

// Tail returns the last lines of the node's log, "" if it cannot be read.
func (n *Node) Tail(lines int) string {
	s, err := process.TailFile(n.spec.LogPath, lines)
	if err != nil {
		return ""
	}
	return s
}

// Usage is a container's cumulative resource use.
type Usage struct {
	CPU     time.Duration // user and system time of every process in it
	RSS     int64         // memory in use, inactive page cache excluded
	Written int64         // bytes written to block devices, -1 if unknown
	Wait    time.Duration // its threads' time runnable but waiting for a CPU, -1 if unknown
}

// Usage reads the store container's resource use from its control groups,
// the accounting `docker stats` reports. They are read directly rather than
// through the engine's stats call, which answers a second late when asked
// once a second (Docker 20.10), far too slow for a sampler that reads every
// node every second.
func (n *Node) Usage() (Usage, error) {
	pid := n.PID()
	if pid == 0 {
		return Usage{}, ErrNotRunning
	}
	u, err := cgroupUsage("/proc", "/sys/fs/cgroup", pid, &n.waits)
	if err != nil {
		return Usage{}, fmt.Errorf("resource use of node %s: %w", n.name, err)
	}
	return u, nil
}

// remove stops the store, removes its and the sandbox's containers, and
// waits for the node's log follower and exit waiter.
func (n *Node) remove(ctx context.Context) error {
	// Stopped first, as a process node is at teardown, so that a kept
	// data directory is what the store leaves when it shuts down.
	if err := n.Stop(ctx, n.run.grace); err != nil {
		n.run.log.Warn("stop at teardown", "node", n.name, "err", err)
	}
	n.mu.Lock()
	n.stopping = true
	var ids []string
	if n.ctr != nil {
		ids = append(ids, n.ctr.GetContainerID())
	}
	n.mu.Unlock()
	if n.sandboxID != "" {
		ids = append(ids, n.sandboxID)
	}
	var errs []error
	for _, id := range ids {
		if err := forceRemove(ctx, n.run.cli, id); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s of node %s: %w", shortID(id), n.name, err))
		}
	}
	n.waits.Close()
	done := make(chan struct{})
	go func() {
		n.bg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("node %s: log follower did not end: %w", n.name, ctx.Err()))
	}
	return errors.Join(errs...)
}
