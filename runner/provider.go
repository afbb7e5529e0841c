package runner

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/container"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/process"
	"github.com/coordlab/scenario/stores"
)

// node is one store server, run as a process (process.Node) or a
// container (container.Node).
type node interface {
	faults.Node
	Start(ctx context.Context) error
	LogPath() string
	// Exited is closed when the current run of the node ends.
	Exited() <-chan struct{}
	// Err says how the node ended when nothing asked it to, else nil.
	Err() error
	Tail(lines int) string
}

// withProvider returns plan with every cluster run by provider, or plan
// itself when provider is "".
func withProvider(pl *plan.Plan, provider string) (*plan.Plan, error) {
	switch provider {
	case "":
		return pl, nil
	case plan.ProviderProcess, plan.ProviderDocker, plan.ProviderKubernetes:
	default:
		return nil, &UnsupportedError{Features: []string{fmt.Sprintf("provider %q (want one of %s)", provider, strings.Join(plan.Providers, ", "))}}
	}
	p := *pl
	p.Clusters = slices.Clone(pl.Clusters)
	for i := range p.Clusters {
		p.Clusters[i].Provider = provider
	}
	return &p, nil
}

// provider runs a cluster's nodes: as processes on this machine, or in
// containers. The run's workspace (x.proc: its id, directories, ports and
// logs) serves both; a provider adds where the nodes run.
type provider interface {
	// launcher returns how the cluster's nodes are launched: the store's
	// server on this machine, or in its image (checked here).
	launcher(ctx context.Context, c plan.ClusterSpec, drv stores.Driver, opts Options) (stores.Launcher, error)
	// prepare makes what the nodes need before the network fabric starts.
	// infra wraps an error about a node.
	prepare(ctx context.Context, run *process.Run, infra func(node string, err error) error) error
	// namespacePID is the process whose network namespace node i (1-based)
	// lives in, for the fabric to attach; 0 when the fabric makes one.
	namespacePID(i int) int
	// addrs are the nodes' own addresses without a fabric, in node order;
	// nil when the nodes share loopback.
	addrs() []netip.Addr
	// addNode registers node i, named name, to run path with args, in its
	// fabric host when there is one (fab may be nil).
	addNode(run *process.Run, fab *fabric.Fabric, i int, name, path string, args []string) (node, error)
	// sample points the resource sampler at n's current process; id is its
	// pid, 0 while it is down.
	sample(coll *metrics.Collector, n node, id int)
}

// newProvider returns the provider a cluster names.
func newProvider(c *clusterRun) provider {
	switch c.spec.Provider {
	case plan.ProviderDocker:
		return &dockerProvider{c: c}
	case plan.ProviderKubernetes:
		return &kubeProvider{c: c}
	}
	return processProvider{}
}

// processProvider runs nodes as processes of this machine.
type processProvider struct{}

func (processProvider) launcher(ctx context.Context, c plan.ClusterSpec, drv stores.Driver, opts Options) (stores.Launcher, error) {
	launch, err := drv.Launcher(ctx, c, opts.CacheDir, opts.Progress)
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", c.Store, c.Version, err)
	}
	return launch, nil
}

func (processProvider) prepare(context.Context, *process.Run, func(string, error) error) error {
	return nil
}

func (processProvider) namespacePID(int) int { return 0 }

func (processProvider) addrs() []netip.Addr { return nil }

func (processProvider) addNode(run *process.Run, fab *fabric.Fabric, _ int, name, path string, args []string) (node, error) {
	if fab != nil {
		path, args = fab.Host(name).Command(path, args)
	}
	return run.AddNode(name, processSpec(path, args))
}

func (processProvider) sample(coll *metrics.Collector, n node, id int) { coll.SetPID(n.Name(), id) }

// dockerRun is a run's containers and their Docker network, shared by
// every cluster the docker provider runs. The run closes it.
type dockerRun struct {
	ctr *container.Run
}

// close removes the containers, before the run directory their volumes
// point into.
func (d *dockerRun) close(ctx context.Context) error {
	if d == nil {
		return nil
	}
	return d.ctr.Close(ctx)
}

// dockerProvider runs each node as a container in a sandbox container that
// owns its network namespace (see package container).
type dockerProvider struct {
	c         *clusterRun
	image     string
	sandboxes []*container.Node // sandboxes[i] holds node i+1's namespace
}

func (d *dockerProvider) launcher(ctx context.Context, c plan.ClusterSpec, drv stores.Driver, _ Options) (stores.Launcher, error) {
	d.image = c.Image
	if d.image == "" {
		d.image = images.Default(c.Store, c.Version)
	}
	if err := images.Check(ctx, d.image, images.BaseImage); err != nil {
		return nil, err
	}
	return drv.Image.Launcher(c), nil
}

// prepare creates the run's Docker network and every node's network
// sandbox; the stores start later, in startCluster.
func (d *dockerProvider) prepare(ctx context.Context, run *process.Run, infra func(string, error) error) error {
	x := d.c.x
	if x.docker == nil {
		ctr, err := container.NewRun(ctx, container.Options{RunID: run.ID(), SandboxImage: images.BaseImage, Logger: x.log, StopGrace: x.stopGrace()})
		if err != nil {
			return infra("", err)
		}
		x.docker = &dockerRun{ctr: ctr}
	}
	ctr := x.docker.ctr
	fmt.Fprintf(x.opts.Progress, "docker: network %s, image %s\n", ctr.Network(), d.image)
	// In parallel: the engine takes over a second per container here.
	nodes := d.c.spec.Nodes
	d.sandboxes = make([]*container.Node, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		name := d.c.nodeName(i + 1)
		wg.Go(func() {
			dataDir, logPath := run.NodeDir(name)
			if err := os.MkdirAll(dataDir, 0o700); err != nil {
				errs[i] = infra(name, err)
				return
			}
			n, err := ctr.AddNode(ctx, name, container.NodeSpec{Image: d.image, DataDir: dataDir, LogPath: logPath})
			if err != nil {
				errs[i] = infra(name, err)
				return
			}
			d.sandboxes[i] = n
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // one node's failure says what is wrong
		}
	}
	return nil
}

func (d *dockerProvider) namespacePID(i int) int { return d.sandboxes[i-1].SandboxPID() }

func (d *dockerProvider) addrs() []netip.Addr {
	out := make([]netip.Addr, len(d.sandboxes))
	for i, n := range d.sandboxes {
		out[i] = n.Addr()
	}
	return out
}

func (d *dockerProvider) addNode(_ *process.Run, _ *fabric.Fabric, i int, _, path string, args []string) (node, error) {
	n := d.sandboxes[i-1]
	return n, n.SetCommand(path, args)
}

// sample reads a container's usage from its control groups.
func (d *dockerProvider) sample(coll *metrics.Collector, n node, id int) {
	cn := n.(*container.Node)
	coll.SetSource(n.Name(), id, func() (metrics.Usage, error) {
		u, err := cn.Usage()
		return metrics.Usage(u), err
	})
}
