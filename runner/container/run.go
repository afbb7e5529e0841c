// Package container runs store nodes as Docker containers: one per node,
// each beside a sandbox container that owns the node's network namespace,
// all on a Docker network of the run's own, and all labelled with the run
// so that a later run can remove what a killed one left behind.
//
// A node's network namespace belongs to its sandbox rather than to the
// store's container, as a Kubernetes pod's belongs to its pause container:
// killing, stopping and restarting the store then never touches the
// namespace, so its address, and the shaping the network fabric installed
// in it, survive every node fault.
package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	ctr "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Labels on every container, volume and network a run creates.
const (
	LabelRun   = "org.coordlab.scenario.run"
	LabelOwner = "org.coordlab.scenario.owner" // pid of the runner
	LabelNode  = "org.coordlab.scenario.node"
	LabelRole  = "org.coordlab.scenario.role" // roleSandbox or roleStore
)

const (
	roleSandbox = "sandbox"
	roleStore   = "store"
)

// namePrefix starts the name of everything this package creates.
const namePrefix = "scn-"

// Options configure NewRun.
type Options struct {
	// RunID names the run; it is in every name and label.
	RunID string
	// SandboxImage runs `sleep infinity` in each node's sandbox.
	SandboxImage string
	// Logger receives lifecycle events; nil discards them.
	Logger *slog.Logger
	// StopGrace is how long Close lets each store stop after SIGTERM
	// before it kills it; 0 kills at once.
	StopGrace time.Duration
}

// Run is the containers, volumes and network of one run. Its methods are
// safe for concurrent use.
type Run struct {
	id      string
	sandbox string
	grace   time.Duration
	log     *slog.Logger
	cli     *testcontainers.DockerClient
	netName string
	netID   string

	mu     sync.Mutex
	closed bool
	nodes  []*Node

	closeOnce sync.Once
	closeErr  error
}

// disableReaper turns testcontainers' reaper (Ryuk) off. The reaper is an
// image testcontainers pulls, and no image can be pulled where there is no
// registry; runs reap their own containers by label instead (Reap). The
// library reads this setting only from its environment variable or its
// properties file, so the variable is set for this process.
func disableReaper() error {
	return os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
}

// quietLibrary silences testcontainers' logger once per process.
var quietLibrary sync.Once

// newClient connects to the Docker engine testcontainers finds (DOCKER_HOST
// or the default socket), quietly.
func newClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	if err := disableReaper(); err != nil {
		return nil, err
	}
	// The library otherwise prints a banner and a line per container to
	// stderr; the runner logs what matters itself. Its logger is a global
	// of the library's, written without a lock: set it once, since runs
	// (the store tests' parallel subtests) connect concurrently, and the
	// race detector caught two of them writing it at once.
	quietLibrary.Do(func() { tclog.SetDefault(tclog.NewNoopLogger()) })
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to the Docker engine: %w", err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("connect to the Docker engine: %w", err)
	}
	return cli, nil
}

// NewRun creates the run's Docker network. The caller must Close the Run.
func NewRun(ctx context.Context, opts Options) (*Run, error) {
	if opts.RunID == "" || opts.SandboxImage == "" {
		return nil, errors.New("container run: RunID and SandboxImage are required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cli, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	r := &Run{id: opts.RunID, sandbox: opts.SandboxImage, grace: opts.StopGrace, log: log, cli: cli, netName: namePrefix + opts.RunID}
	res, err := cli.NetworkCreate(ctx, r.netName, client.NetworkCreateOptions{
		Driver: "bridge",
		Labels: r.labels("", ""),
	})
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("create network %s: %w", r.netName, err)
	}
	r.netID = res.ID
	log.Info("docker network created", "network", r.netName)
	return r, nil
}

// labels are the labels of a resource of this run; node and role may be "".
func (r *Run) labels(node, role string) map[string]string {
	l := map[string]string{
		LabelRun:   r.id,
		LabelOwner: strconv.Itoa(os.Getpid()),
	}
	if node != "" {
		l[LabelNode] = node
	}
	if role != "" {
		l[LabelRole] = role
	}
	return l
}

// Network is the name of the run's Docker network.
func (r *Run) Network() string { return r.netName }

// AddNode starts the sandbox of a node named name, whose store will run
// from spec. The store itself starts with Node.Start, once the caller knows
// the node's addresses (Addr, or the fabric's) and has set its command.
func (r *Run) AddNode(ctx context.Context, name string, spec NodeSpec) (*Node, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("add node %s: run is closed", name)
	}
	n := &Node{run: r, name: name, spec: spec, exited: closedChan()}
	r.nodes = append(r.nodes, n)
	r.mu.Unlock()

	sb, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:          r.sandbox,
			Name:           r.containerName(name, roleSandbox),
			Entrypoint:     []string{"sleep", "infinity"},
			Labels:         r.labels(name, roleSandbox),
			Networks:       []string{r.netName},
			NetworkAliases: map[string][]string{r.netName: {name}},
			ConfigModifier: func(c *ctr.Config) { c.Hostname = name },
		},
		Started: true,
	})
	if sb != nil {
		n.sandboxID = sb.GetContainerID()
	}
	if err != nil {
		return nil, fmt.Errorf("start the network sandbox of node %s (image %s): %w", name, r.sandbox, err)
	}
	info, err := r.cli.ContainerInspect(ctx, n.sandboxID, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect the network sandbox of node %s: %w", name, err)
	}
	n.sandboxPID = info.Container.State.Pid
	if ns := info.Container.NetworkSettings; ns != nil {
		if ep := ns.Networks[r.netName]; ep != nil {
			n.addr = ep.IPAddress
		}
	}
	if !n.addr.IsValid() {
		return nil, fmt.Errorf("network sandbox of node %s has no address on network %s", name, r.netName)
	}
	r.log.Info("node sandbox started", "node", name, "addr", n.addr, "pid", n.sandboxPID)
	return n, nil
}

func (r *Run) containerName(node, role string) string {
	name := namePrefix + r.id + "-" + node
	if role == roleSandbox {
		name += "-net"
	}
	return name
}

// Close removes every container, volume and the network of the run. Data
// kept on request stays in the nodes' data directories on the host: the
// volumes only point at them. Close is idempotent.
func (r *Run) Close(ctx context.Context) error {
	r.closeOnce.Do(func() { r.closeErr = r.close(ctx) })
	return r.closeErr
}

func (r *Run) close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	nodes := slices.Clone(r.nodes)
	r.mu.Unlock()
	var errs []error
	var wg sync.WaitGroup
	nerrs := make([]error, len(nodes))
	for i, n := range nodes {
		wg.Go(func() { nerrs[i] = n.remove(ctx) })
	}
	wg.Wait()
	errs = append(errs, nerrs...)
	filter := make(client.Filters).Add("label", LabelRun+"="+r.id)
	_, rerr := removeLabelled(ctx, r.cli, filter, r.log)
	errs = append(errs, rerr)
	if err := r.cli.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove containers of run %s: %w", r.id, err)
	}
	r.log.Info("docker resources removed", "run", r.id)
	return nil
}

// resource is a container, volume or network of ours.
type resource struct {
	kind   string // "container", "volume" or "network"
	id     string
	name   string
	labels map[string]string
}

func (r resource) String() string { return r.kind + " " + r.name }

// listLabelled lists the containers, then the volumes, then the networks
// that match filter: the order in which they can be removed.
func listLabelled(ctx context.Context, cli *testcontainers.DockerClient, filter client.Filters) ([]resource, error) {
	var out []resource
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.Items {
		name := c.ID
		if len(c.Names) > 0 {
			name = c.Names[0]
		}
		out = append(out, resource{kind: "container", id: c.ID, name: name, labels: c.Labels})
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: filter})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	for _, v := range vs.Items {
		out = append(out, resource{kind: "volume", id: v.Name, name: v.Name, labels: v.Labels})
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	for _, nw := range ns.Items {
		out = append(out, resource{kind: "network", id: nw.ID, name: nw.Name, labels: nw.Labels})
	}
	return out, nil
}

// removeLabelled removes the containers, then the volumes, then the
// networks that match filter, and returns what it removed.
func removeLabelled(ctx context.Context, cli *testcontainers.DockerClient, filter client.Filters, log *slog.Logger) ([]string, error) {
	rs, err := listLabelled(ctx, cli, filter)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, r := range rs {
		switch r.kind {
		case "container":
			err = forceRemove(ctx, cli, r.id)
		case "volume":
			_, err = cli.VolumeRemove(ctx, r.id, client.VolumeRemoveOptions{Force: true})
		case "network":
			_, err = cli.NetworkRemove(ctx, r.id, client.NetworkRemoveOptions{})
		}
		if err != nil && !notFound(err) {
			errs = append(errs, fmt.Errorf("remove %s: %w", r, err))
			continue
		}
		log.Debug("removed", "what", r.String())
		removed = append(removed, r.String())
	}
	return removed, errors.Join(errs...)
}

// Labelled lists, as "container NAME", "volume NAME" or "network NAME",
// what the engine has that carries label ("key" or "key=value"), such as
// LabelOwner+"="+pid: what a run left behind.
func Labelled(ctx context.Context, label string) ([]string, error) {
	cli, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	rs, err := listLabelled(ctx, cli, make(client.Filters).Add("label", label))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out, nil
}

// Addr is the node's address on the run's Docker network.
func (n *Node) Addr() netip.Addr { return n.addr }

// SandboxPID is the host pid of the process holding the node's network
// namespace, for entering it (/proc/PID/ns/net).
func (n *Node) SandboxPID() int { return n.sandboxPID }
