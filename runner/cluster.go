package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/process"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
)

// startCluster starts every node on loopback ports of its own and waits until
// the cluster is ready. A node that exits while the others are still coming
// up fails the start at once, naming that node.
func (c *clusterRun) startCluster(ctx context.Context, launch stores.Launcher) error {
	x, spec := c.x, c.spec
	if err := c.endpoints(); err != nil {
		return err
	}
	fmt.Fprintf(x.opts.Progress, "starting %s: %d %s %s node(s) (run %s)\n", spec.Name, spec.Nodes, spec.Store, spec.Version, x.proc.ID())
	for i := 1; i <= spec.Nodes; i++ {
		name := c.nodeName(i)
		dataDir, _ := x.proc.NodeDir(name)
		path, args, err := launch(spec, i, c.eps, dataDir)
		if err != nil {
			return c.infra(name, "startup", fmt.Errorf("configure: %w", err))
		}
		n, err := c.prov.addNode(x.proc, x.fab, i, name, path, args)
		if err != nil {
			return c.infra(name, "startup", err)
		}
		c.nodes = append(c.nodes, n)
		if err := n.Start(ctx); err != nil {
			return c.infra(name, "startup", err)
		}
	}

	// Readiness is cut short by the first node to exit.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	for _, n := range c.nodes {
		go func() {
			select {
			case <-n.Exited():
				cancel(&nodeExit{node: n.Name(), err: n.Err()})
			case <-wctx.Done():
			}
		}()
	}
	start := time.Now()
	err := c.drv.WaitReady(wctx, c.eps, spec.ReadyTimeout.D())
	var ne *nodeExit
	switch {
	case errors.As(context.Cause(wctx), &ne):
		return c.infra(ne.node, "startup", fmt.Errorf("node exited while the cluster was starting: %v", ne.err))
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return c.infra("", "startup", fmt.Errorf("%w (ready_timeout is %s; node logs are in %s)", err, spec.ReadyTimeout, x.logsDir()))
	}
	fmt.Fprintf(x.opts.Progress, "cluster %s ready in %s\n", spec.Name, time.Since(start).Round(time.Millisecond))
	return nil
}

// endpoints gives every node its addresses: loopback ports of its own, its
// sandbox's address on the run's Docker network, or its host's address in
// the fabric, where the runner reaches it through the observer host.
func (c *clusterRun) endpoints() error {
	x := c.x
	if addrs := c.prov.addrs(); x.fab == nil && addrs != nil {
		for i, a := range addrs {
			c.eps = append(c.eps, endpoint(i+1, a.String(), c.drv.Ports))
		}
		return nil
	}
	if x.fab != nil {
		observer := x.fab.Host(observerHost)
		for i := 1; i <= c.spec.Nodes; i++ {
			ep := endpoint(i, x.fab.Host(c.nodeName(i)).Addr.String(), c.drv.Ports)
			ep.Dial = observer.Dial
			c.eps = append(c.eps, ep)
		}
		return nil
	}
	per := len(c.drv.Ports)
	ports, err := x.proc.AllocatePorts(per * c.spec.Nodes)
	if err != nil {
		return c.infra("", "startup", fmt.Errorf("allocate ports: %w", err))
	}
	for i := 1; i <= c.spec.Nodes; i++ {
		c.eps = append(c.eps, endpoint(i, "127.0.0.1", ports[per*(i-1):per*i]))
	}
	return nil
}

// endpoint is node's endpoint at host with ports in the order of
// driver.ports: client, peer, extras.
func endpoint(node int, host string, ports []int) stores.Endpoint {
	ep := stores.Endpoint{
		Node:       node,
		ClientAddr: net.JoinHostPort(host, strconv.Itoa(ports[0])),
		PeerAddr:   net.JoinHostPort(host, strconv.Itoa(ports[1])),
	}
	for _, p := range ports[2:] {
		ep.Extra = append(ep.Extra, net.JoinHostPort(host, strconv.Itoa(p)))
	}
	return ep
}

// logsDir is where node logs can be found after the run.
func (x *execution) logsDir() string {
	if x.opts.OutDir != "" {
		return x.opts.OutDir + "/logs"
	}
	return x.proc.Dir()
}

type nodeExit struct {
	node string
	err  error
}

func (e *nodeExit) Error() string { return fmt.Sprintf("node %s exited: %v", e.node, e.err) }

// openClients gives every workload its own client, with its own connections.
func (c *clusterRun) openClients(ctx context.Context) error {
	c.clients = map[string]stores.Client{}
	c.registries = map[string]stores.Registry{}
	for _, w := range c.plan.Workloads {
		var dial stores.DialFunc
		if c.x.fab != nil {
			dial = c.x.fab.Host(plan.ClientHost(w.Region)).Dial
		}
		opts := stores.ClientOptions{
			Dial:        dial,
			Endpoints:   c.clientEndpoints(w),
			Conns:       w.Conns,
			Consistency: w.Consistency,
			Timeout:     w.Timeout.D(),
			Workload:    w,
		}
		if w.Registry != nil {
			if err := c.openRegistry(ctx, w, opts); err != nil {
				return err
			}
			continue
		}
		if w.Lock != nil {
			if err := c.openLocker(ctx, w, opts); err != nil {
				return err
			}
			continue
		}
		if w.Watches != nil {
			if err := c.openWatchHolder(ctx, w, opts); err != nil {
				return err
			}
			continue
		}
		cl, err := c.drv.NewClient(ctx, opts)
		if err != nil {
			return c.infra("", "startup", fmt.Errorf("workload %q: connect: %w", w.Name, err))
		}
		c.clients[w.Name] = cl
		if w.Watchers > 0 {
			if err := c.openKeyWatcher(ctx, w, opts); err != nil {
				return err
			}
		}
	}
	return nil
}

// clientEndpoints are the members a workload's clients connect to: all of
// them, or with endpoints = "local" those in the clients' region (all if
// none is there).
func (c *clusterRun) clientEndpoints(w plan.WorkloadSpec) []stores.Endpoint {
	if w.Endpoints != plan.EndpointsLocal {
		return c.eps
	}
	var local []stores.Endpoint
	for _, ep := range c.eps {
		if c.spec.Placement[ep.Node-1] == w.Region {
			local = append(local, ep)
		}
	}
	if len(local) == 0 {
		return c.eps
	}
	return local
}

func (c *clusterRun) closeClients() {
	c.closeRegistries()
	for name, cl := range c.clients {
		if err := cl.Close(); err != nil {
			c.log.Debug("close client", "workload", name, "err", err)
		}
	}
}

// preload writes the keyspace of every workload that asks for it, before
// the timeline starts. Its operations are not measured.
func (c *clusterRun) preload(ctx context.Context) error {
	for _, w := range c.plan.Workloads {
		if !w.Preload {
			continue
		}
		discard := func() metrics.Sink { return discardSink{} }
		base := time.Now()
		record := c.historyFunc(w.Name, base)
		if w.Watchers > 0 {
			// The watchers list what the preload wrote: its values are
			// known writes to them.
			shift, checked := base.Sub(c.x.epoch), record
			if c.preloaded == nil {
				c.preloaded = map[string][]workload.HistoryOp{}
			}
			record = func(op workload.HistoryOp) {
				checked(op)
				op.Call += shift
				op.Return += shift
				c.preloadMu.Lock()
				c.preloaded[w.Name] = append(c.preloaded[w.Name], op)
				c.preloadMu.Unlock()
			}
		}
		tenth := int64(0) // a line per 10%: a million keys take minutes
		progress := func(done, total int64) {
			if t := done * 10 / total; t > tenth && done < total {
				tenth = t
				fmt.Fprintf(c.x.opts.Progress, "preloading %s: %d of %d keys (%d%%) after %s\n", w.Name, done, total, t*10, time.Since(base).Round(time.Second))
			}
		}
		eng, err := workload.New(w, c.clients[w.Name], discard, base, workload.WithLogger(c.log), workload.WithHistory(record), workload.WithProgress(progress))
		if err != nil {
			return err
		}
		start := time.Now()
		fmt.Fprintf(c.x.opts.Progress, "preloading %d keys for workload %s\n", w.Keyspace, w.Name)
		if err := eng.Preload(ctx, preloadWriters); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return c.infra("", "preload", fmt.Errorf("workload %q: %w", w.Name, err))
		}
		took := time.Since(start)
		c.log.Info("preload done", "workload", w.Name, "keys", w.Keyspace, "took", took)
		c.preloads = append(c.preloads, results.Preload{Workload: w.Name, Keys: w.Keyspace,
			Bytes: w.Keyspace * int64(w.KeySize+w.ValueSize), DurationMS: results.MS(took), KeysPerS: float64(w.Keyspace) / took.Seconds()})
	}
	return nil
}

type discardSink struct{}

func (discardSink) Record(metrics.Sample) {}

func processSpec(bin string, args []string) process.NodeSpec {
	return process.NodeSpec{Path: bin, Args: args}
}
