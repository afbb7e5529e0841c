package runner

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/container"
	"github.com/coordlab/scenario/runner/metrics"
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
	case plan.ProviderProcess, plan.ProviderDocker:
	default:
		return nil, &UnsupportedError{Features: []string{fmt.Sprintf("provider %q (want %q or %q)", provider, plan.ProviderProcess, plan.ProviderDocker)}}
	}
	p := *pl
	p.Clusters = slices.Clone(pl.Clusters)
	for i := range p.Clusters {
		p.Clusters[i].Provider = provider
	}
	return &p, nil
}

// docker reports whether the cluster runs in containers.
func (x *execution) docker() bool { return x.cluster.Provider == plan.ProviderDocker }

// install returns how to launch the cluster's nodes: the store's server on
// this machine, or in its image.
func (x *execution) install(ctx context.Context) (stores.Launcher, error) {
	c := x.cluster
	if !x.docker() {
		launch, err := x.drv.Launcher(ctx, c, x.opts.CacheDir, x.opts.Progress)
		if err != nil {
			return nil, fmt.Errorf("get %s %s: %w", c.Store, c.Version, err)
		}
		return launch, nil
	}
	x.image = c.Image
	if x.image == "" {
		x.image = images.Default(c.Store, c.Version)
	}
	if err := images.Check(ctx, x.image, images.BaseImage); err != nil {
		return nil, err
	}
	return x.drv.Image.Launcher(c), nil
}

// startSandboxes creates the run's Docker network and every node's network
// sandbox; the stores start later, in startCluster.
func (x *execution) startSandboxes(ctx context.Context) error {
	var err error
	x.ctr, err = container.NewRun(ctx, container.Options{RunID: x.proc.ID(), SandboxImage: images.BaseImage, Logger: x.log, StopGrace: teardownGrace})
	if err != nil {
		return x.infra("", "startup", err)
	}
	fmt.Fprintf(x.opts.Progress, "docker: network %s, image %s\n", x.ctr.Network(), x.image)
	// In parallel: the engine takes over a second per container here.
	x.sandboxes = make([]*container.Node, x.cluster.Nodes)
	errs := make([]error, x.cluster.Nodes)
	var wg sync.WaitGroup
	for i := range x.cluster.Nodes {
		name := plan.NodeName(i + 1)
		wg.Go(func() {
			dataDir, logPath := x.proc.NodeDir(name)
			if err := os.MkdirAll(dataDir, 0o700); err != nil {
				errs[i] = x.infra(name, "startup", err)
				return
			}
			n, err := x.ctr.AddNode(ctx, name, container.NodeSpec{Image: x.image, DataDir: dataDir, LogPath: logPath})
			if err != nil {
				errs[i] = x.infra(name, "startup", err)
				return
			}
			x.sandboxes[i] = n
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

// sampleNode points the resource sampler at n's current process: its pid
// in /proc, or its container's control groups. id is n's pid, 0 while it
// is down.
func (x *execution) sampleNode(n node, id int) {
	cn, ok := n.(*container.Node)
	if !ok {
		x.coll.SetPID(n.Name(), id)
		return
	}
	x.coll.SetSource(n.Name(), id, func() (metrics.Usage, error) {
		u, err := cn.Usage()
		return metrics.Usage(u), err
	})
}
