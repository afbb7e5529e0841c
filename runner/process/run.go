package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EnvRunID is the environment variable set on every node to the id of its
// run. Children inherit it, so it marks every process a run caused, and it is
// what ReapStale checks before it kills anything.
const EnvRunID = "SCENARIO_RUN_ID"

// EnvNode is the environment variable set on every node to its name, so a
// leftover process found later can be told apart from its siblings.
const EnvNode = "SCENARIO_NODE"

// DefaultStopGrace is how long Close waits for a node to exit after SIGTERM
// before it sends SIGKILL.
const DefaultStopGrace = 5 * time.Second

const (
	ownerFile = "owner.pid"
	keepFile  = "keep"
	nodesDir  = "nodes"

	// reapTimeout bounds the wait for a process to disappear after SIGKILL,
	// which nothing but an uninterruptible sleep in the kernel can delay.
	reapTimeout = 10 * time.Second
)

// ErrClosed is returned by a Run's methods after Close has started.
var ErrClosed = errors.New("run is closed")

// RunOptions configure NewRun.
type RunOptions struct {
	// StateDir holds the runs/ directory. "" means DefaultStateDir().
	StateDir string
	// Keep leaves the run directory (node data and logs) in place after
	// Close. It also marks the directory so that ReapStale keeps it after a
	// crash; the processes are killed either way.
	Keep bool
	// Logger receives lifecycle events. nil discards them.
	Logger *slog.Logger
	// StopGrace is how long Close waits between SIGTERM and SIGKILL.
	// 0 means DefaultStopGrace.
	StopGrace time.Duration
	// KillAtClose makes Close kill the nodes of a run whose directory is
	// not kept with SIGKILL alone. A graceful stop leaves nothing behind
	// that outlives the directory Close removes, and it can take its whole
	// grace: an etcd leader stopped with its peers tries to hand its
	// leadership over to members that are going away too, and an etcd
	// member drains its peer listener for a second. A kept run (Keep, or
	// Keep called later) still stops gracefully, so that its data
	// directories are those of a clean shutdown.
	KillAtClose bool
}

// Run is one run's workspace: a directory that records who owns it and which
// processes it started, and the nodes started in it. Its methods are safe for
// concurrent use.
type Run struct {
	id          string
	dir         string
	log         *slog.Logger
	grace       time.Duration
	killAtClose bool

	spawnReqs chan spawnReq
	spawnQuit chan struct{}
	spawnDone chan struct{}

	// inflight counts node starts in progress, so that Close can wait for
	// them before it kills: a process forked after the kill loop would leak.
	inflight sync.WaitGroup

	mu     sync.Mutex
	closed bool
	keep   bool
	nodes  map[string]*Node
	order  []*Node
	ports  map[int]io.Closer // handed out by AllocatePorts, held until Close

	closeOnce sync.Once
	closeErr  error
}

// DefaultStateDir is $XDG_RUNTIME_DIR/scenario, or /tmp/scenario-<uid> when
// XDG_RUNTIME_DIR is unset. The runtime dir is per user, private and cleared
// at logout or reboot, which is the lifetime run state should have.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "scenario")
	}
	return filepath.Join(os.TempDir(), "scenario-"+strconv.Itoa(os.Geteuid()))
}

// prepareStateDir creates dir/runs and returns its path. The default
// directory is checked to be private, since it may sit in a shared /tmp.
func prepareStateDir(stateDir string) (string, error) {
	def := stateDir == ""
	if def {
		stateDir = DefaultStateDir()
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", err
	}
	if def {
		if err := checkPrivateDir(stateDir); err != nil {
			return "", err
		}
	}
	runs := filepath.Join(stateDir, "runs")
	if err := os.MkdirAll(runs, 0o700); err != nil {
		return "", err
	}
	return runs, nil
}

// NewRun creates a run directory under opts.StateDir and returns the Run.
// The caller must Close it; ReapStale cleans up after callers that could not.
func NewRun(opts RunOptions) (*Run, error) {
	if err := platformSupported(); err != nil {
		return nil, err
	}
	runs, err := prepareStateDir(opts.StateDir)
	if err != nil {
		return nil, fmt.Errorf("new run: %w", err)
	}
	self, err := selfIdentity()
	if err != nil {
		return nil, fmt.Errorf("new run: read own identity: %w", err)
	}
	var id, dir string
	for range 10 {
		id, err = newRunID(time.Now())
		if err != nil {
			return nil, fmt.Errorf("new run: %w", err)
		}
		dir = filepath.Join(runs, id)
		if err = os.Mkdir(dir, 0o700); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("new run: %w", err)
	}
	if err := writeOwner(dir, self); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("new run %s: %w", id, err)
	}
	if opts.Keep {
		if err := writeKeep(dir); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("new run %s: %w", id, err)
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	grace := opts.StopGrace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	r := &Run{
		id:          id,
		dir:         dir,
		log:         log.With("run", id),
		grace:       grace,
		killAtClose: opts.KillAtClose,
		spawnReqs:   make(chan spawnReq),
		spawnQuit:   make(chan struct{}),
		spawnDone:   make(chan struct{}),
		keep:        opts.Keep,
		nodes:       make(map[string]*Node),
		ports:       make(map[int]io.Closer),
	}
	go r.spawnLoop()
	r.log.Debug("run created", "dir", dir)
	return r, nil
}

// ID is the run's id: UTC start time and a random suffix, so that ids sort
// by time and two runners never collide.
func (r *Run) ID() string { return r.id }

// Dir is the run directory, <StateDir>/runs/<id>.
func (r *Run) Dir() string { return r.dir }

// Keep makes Close leave the run directory in place, for example because a
// check failed and the node logs explain why. It marks the directory on disk
// too, so ReapStale keeps it if the runner dies before Close.
func (r *Run) Keep() error {
	if err := writeKeep(r.dir); err != nil {
		return fmt.Errorf("keep run %s: %w", r.id, err)
	}
	r.mu.Lock()
	r.keep = true
	r.mu.Unlock()
	return nil
}

// NodeDir returns where a node named name keeps its data and its log, so a
// store driver can compute the node's arguments before AddNode.
func (r *Run) NodeDir(name string) (dataDir, logPath string) {
	d := filepath.Join(r.dir, nodesDir, name)
	return filepath.Join(d, "data"), filepath.Join(d, "log")
}

// AddNode registers a node and creates its directories. It does not start it.
// Names are single path elements of letters, digits, '-', '_' and '.'.
func (r *Run) AddNode(name string, spec NodeSpec) (*Node, error) {
	if err := checkNodeName(name); err != nil {
		return nil, fmt.Errorf("add node %q: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("add node %s: %w", name, ErrClosed)
	}
	if r.nodes[name] != nil {
		return nil, fmt.Errorf("add node %s: already added", name)
	}
	dataDir, logPath := r.NodeDir(name)
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("add node %s: %w", name, err)
	}
	n := newNode(r, name, dataDir, logPath, spec)
	r.nodes[name] = n
	r.order = append(r.order, n)
	return n, nil
}

// Node returns the node added under name, or nil.
func (r *Run) Node(name string) *Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nodes[name]
}

// beginStart registers a node start with Close, or refuses it once Close has
// begun. The caller must call r.inflight.Done.
func (r *Run) beginStart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.inflight.Add(1)
	return nil
}

// Close stops every node still running (SIGTERM, then SIGKILL after the
// grace period or as soon as ctx is done; every process is reaped) and
// removes the run directory unless the run is kept. The directory is also
// kept, and an error returned, if a process could not be reaped: it tells a
// later ReapStale which processes to look for.
//
// Close is idempotent and safe to call concurrently, say from a signal
// handler's goroutine and a defer: later callers wait for the first and get
// its result.
func (r *Run) Close(ctx context.Context) error {
	r.closeOnce.Do(func() { r.closeErr = r.close(ctx) })
	return r.closeErr
}

func (r *Run) close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	nodes := slices.Clone(r.order)
	kill := r.killAtClose && !r.keep
	r.mu.Unlock()
	r.inflight.Wait()

	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		if kill {
			wg.Go(func() { errs[i] = n.Kill() })
		} else {
			wg.Go(func() { errs[i] = n.Stop(ctx, r.grace) })
		}
	}
	wg.Wait()
	close(r.spawnQuit)
	<-r.spawnDone
	r.releasePorts()

	if err := errors.Join(errs...); err != nil {
		r.log.Error("run closed with processes left; directory kept for ReapStale", "dir", r.dir, "err", err)
		return fmt.Errorf("close run %s: %w", r.id, err)
	}
	r.mu.Lock()
	keep := r.keep
	r.mu.Unlock()
	if keep {
		r.log.Info("run directory kept", "dir", r.dir)
		return nil
	}
	if err := os.RemoveAll(r.dir); err != nil {
		return fmt.Errorf("close run %s: %w", r.id, err)
	}
	r.log.Debug("run closed")
	return nil
}

// newRunID returns an id like 20261122T081500-ab12cd.
func newRunID(now time.Time) (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return now.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:]), nil
}

// validRunID reports whether s has the shape newRunID produces. ReapStale
// touches nothing under runs/ that does not.
func validRunID(s string) bool {
	date, suffix, ok := strings.Cut(s, "-")
	if !ok || len(date) != 15 || date[8] != 'T' || len(suffix) != 6 {
		return false
	}
	if _, err := time.Parse("20060102T150405", date); err != nil {
		return false
	}
	_, err := hex.DecodeString(suffix)
	return err == nil && strings.ToLower(suffix) == suffix
}

func checkNodeName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 64 {
		return errors.New("invalid node name")
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.'
		if !ok {
			return fmt.Errorf("invalid character %q in node name", c)
		}
	}
	return nil
}

// writeOwner records who owns the run: "<pid> <starttime> <pidns>".
func writeOwner(dir string, id identity) error {
	line := fmt.Sprintf("%d %s %s\n", id.pid, id.start, id.pidns)
	return writeFileAtomic(filepath.Join(dir, ownerFile), []byte(line))
}

func readOwner(dir string) (identity, error) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return identity{}, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return identity{}, fmt.Errorf("%s: malformed owner record", filepath.Join(dir, ownerFile))
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return identity{}, fmt.Errorf("%s: malformed pid %q", filepath.Join(dir, ownerFile), f[0])
	}
	id := identity{pid: pid, start: f[1]}
	if len(f) > 2 {
		id.pidns = f[2]
	}
	return id, nil
}

func writeKeep(dir string) error {
	return os.WriteFile(filepath.Join(dir, keepFile), []byte("kept on request\n"), 0o600)
}

// writeFileAtomic writes through a temporary file and a rename, so a reader
// (ReapStale in another runner) never sees half a record.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
