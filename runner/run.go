// Package runner plays a compiled scenario against real store nodes: it
// brings the cluster up, drives every workload's load along the timeline,
// injects faults, measures, evaluates the checks and writes the results. It
// tears everything down on every exit path.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/internal/cpuwake"
	"github.com/coordlab/scenario/internal/hrsleep"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/internal/rtprio"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/checker"
	"github.com/coordlab/scenario/runner/discovery"
	"github.com/coordlab/scenario/runner/kube"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/process"
	"github.com/coordlab/scenario/runner/servermetrics"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/registry"
)

// Options configure Run.
type Options struct {
	// OutDir receives results.json, junit.xml, the interval logs and a copy
	// of every node's log. It is created if needed.
	OutDir string
	// Keep leaves the nodes' data directories and logs in the state
	// directory after the run (the processes are stopped either way).
	Keep bool
	// StateDir holds run workspaces; "" means process.DefaultStateDir().
	StateDir string
	// CacheDir holds store binaries; "" means each store's default.
	CacheDir string
	// AbortOnFail stops the run at the end of the first phase after which a
	// check marked abort_on_fail fails.
	AbortOnFail bool
	// Realtime runs the runner's threads (the shaper, the load generator,
	// the collector) at real-time priority during the timeline, so that
	// other work on the machine delays neither packets nor sends; the
	// stores and every process the run starts keep the normal policy.
	Realtime bool
	// BusyPoll has the shaper's schedulers and the open-loop dispatchers
	// (remote workers' too) spin through the last BusyPoll before each
	// due time instead of sleeping through it: packets and requests leave
	// within microseconds of it on a quiet machine, where a sleeping
	// thread wakes some tens of microseconds late, for up to a core each
	// while due times come closer together than BusyPoll. 0 sleeps; at
	// most hrsleep.MaxBusyPoll.
	BusyPoll time.Duration
	// PollIdle holds every CPU's wake-up latency at 0 while the timeline
	// plays (cpuwake): idle CPUs poll rather than halt, so that a thread
	// woken on one, the runner's or a store's, runs at once rather than
	// when the host wakes a halted vCPU.
	PollIdle bool
	// ScenarioFile is recorded in results.json.
	ScenarioFile string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Progress receives progress lines (installs, startup, the live line);
	// nil discards them.
	Progress io.Writer
	// Live redraws one progress line in place (a terminal) instead of
	// printing a plain line every few seconds.
	Live bool
	// Network forces the network fabric on a plan that shapes nothing,
	// for overhead measurements: NetworkBypass as a shaped run uses it,
	// pairs whose link shapes nothing through the kernel (a bridge) and
	// the others through the shaper; NetworkEngaged with every packet
	// queued through the shaper's per-pair scheduler, as a shaped pair's
	// are; NetworkDirect with packets on unshaped links written straight
	// from the reader instead; NetworkEngagedNoOffload engaged with the TUN
	// devices' TCP segmentation offload off, every packet of the MTU (what
	// the offload saves); NetworkEngagedPlain engaged with each frame
	// read by a read(2) of its own instead of in batches through io_uring
	// (what the ring saves); NetworkEngagedPacketWrites engaged with a
	// pair's frames delivered in batches through a packet socket and a
	// veth instead of a write(2) a frame to the TUN device
	// (fabric.Options.PacketWrites). NetworkKernel builds the kernel
	// reference instead of the shaper (veth links to a bridge, partitions
	// by iptables; no shaping), to check the shaper's faults against. ""
	// leaves the choice to the plan.
	Network string
	// Provider runs every cluster with this provider (one of
	// plan.Providers) whatever the plan says; "" keeps the plan's.
	Provider string
	// Kube configures the kubernetes provider.
	Kube KubeOptions
	// Report, if set, draws a report of the results into OutDir (the CLI
	// passes report.WriteInto) before results.json is written, from the
	// interval logs in hlogDir. Its failure is noted in the results, not
	// returned: a report is a convenience.
	Report func(dir string, res *results.Results, hlogDir string) error
}

// Values of Options.Network.
const (
	NetworkBypass              = "bypass"
	NetworkEngaged             = "engaged"
	NetworkEngagedNoOffload    = "engaged-no-offload"
	NetworkEngagedPlain        = "engaged-plain"
	NetworkEngagedPacketWrites = "engaged-packet-writes"
	NetworkDirect              = "direct"
	NetworkKernel              = "kernel"
)

const (
	// pollInterval is how often every node is asked for its leader.
	pollInterval = 100 * time.Millisecond
	// teardownTimeout bounds teardown, which runs on a fresh context so that
	// Ctrl-C does not skip it.
	teardownTimeout = 30 * time.Second
	// teardownGrace is how long teardown of a kept run (--keep) waits
	// after SIGTERM. Short: an etcd leader stopped with its peers tries to
	// hand over leadership to members that are going away too, and waits
	// for nothing. A run that is not kept is killed at once (see
	// execution.stopGrace): the node logs were copied before teardown,
	// and the data goes with the run directory.
	teardownGrace = 2 * time.Second
	// preloadWriters is how many writers preload the keyspace at once.
	preloadWriters = 32
	// logTailLines is how much of a failed node's log an error quotes.
	logTailLines = 15
)

// Run plays plan once and returns its results, checks evaluated. The error
// is an *UnsupportedError when the plan needs something not implemented, an
// *InfraError when the cluster could not be brought up, or ctx's error when
// the run was interrupted; a failed check is not an error (see
// results.Results.Passed). Every process and directory the run created is
// removed before Run returns, unless opts.Keep.
func Run(ctx context.Context, pl *plan.Plan, opts Options) (*results.Results, error) {
	pl, err := withProvider(pl, opts.Provider)
	if err != nil {
		return nil, err
	}
	if opts.Kube.Network == KubeNetworkPods {
		if err := podNetworkRefusal(pl); err != nil {
			return nil, &UnsupportedError{Features: []string{err.Error()}}
		}
	}
	if err := checkSupported(pl, fabric.Available); err != nil {
		return nil, err
	}
	if opts.Network == NetworkKernel && pl.Network.Shaped() {
		return nil, &UnsupportedError{Features: []string{"link shaping on the kernel reference network (it only cuts links: this kernel has no netem)"}}
	}
	if opts.BusyPoll < 0 || opts.BusyPoll > hrsleep.MaxBusyPoll {
		return nil, fmt.Errorf("busy-poll window %v: want 0 to %v", opts.BusyPoll, hrsleep.MaxBusyPoll)
	}
	if opts.PollIdle {
		// Refused before anything starts where the process may not hold
		// it; the timeline holds it again (play).
		r, err := cpuwake.Hold(0)
		if err != nil {
			return nil, &UnsupportedError{Features: []string{"--poll-idle: " + err.Error()}}
		}
		r.Close()
	}
	if opts.Realtime {
		// Refused before anything starts where the process may not
		// raise itself; the timeline raises it again (play).
		restore, err := rtprio.Raise(rtprio.Priority)
		if err != nil {
			return nil, &UnsupportedError{Features: []string{"--realtime: " + err.Error()}}
		}
		restore()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if opts.StateDir == "" {
		opts.StateDir = process.DefaultStateDir()
	}
	x := &execution{plan: pl, opts: opts, log: opts.Logger}
	for _, spec := range pl.Clusters {
		x.clusters = append(x.clusters, newClusterRun(x, spec))
	}
	return x.run(ctx)
}

// execution is the state of one Run: what its clusters share (the
// workspace, the network, the clocks, the timeline).
type execution struct {
	plan *plan.Plan
	opts Options
	log  *slog.Logger

	proc     *process.Run
	docker   *dockerRun     // the run's containers, made by the first docker cluster
	kube     *kube.Run      // the run's namespace, made by the first kubernetes cluster
	fab      *fabric.Fabric // nil when the run needs no network shaping
	net      *network
	podNet   bool       // network faults act through rules in pods, not the fabric
	traffic  *netCounts // with a shaper: its frames and undeclared drops per phase
	clusters []*clusterRun

	// epoch is the one clock of the recorded history: every engine's
	// times are moved onto it.
	epoch time.Time
	base  time.Time

	mu    sync.Mutex
	abort string // why the run stopped early, "" if it did not
	phase string // the phase in progress
}

// clusterRun is one cluster of a run: its nodes, clients, measurements,
// faults and history, as a one-cluster run has them. Its plan is the run's
// cut down to the cluster (see clusterPlan).
type clusterRun struct {
	x    *execution
	spec plan.ClusterSpec
	plan *plan.Plan
	log  *slog.Logger
	drv  stores.Driver
	prov provider

	nodes   []node // nodes[i] is node i+1
	eps     []stores.Endpoint
	clients map[string]stores.Client

	coll    *metrics.Collector
	engines map[string]loadRunner
	// registries are the store recipes and engines of registry workloads.
	registries map[string]stores.Registry
	discovery  map[string]*discovery.Engine
	// lockers are the store recipes and engines of lock workloads.
	lockers map[string]stores.Locker
	locks   map[string]*discovery.LockEngine
	// dials are the lock workloads' dials from their regions.
	dials map[string]stores.DialFunc
	// holders and holds are the watches workloads' connections and engines.
	holders map[string]stores.WatchHolder
	holds   map[string]*discovery.HoldEngine
	// scraper and server read and keep the store's own metrics.
	scraper stores.MetricScraper
	server  *servermetrics.Recorder
	// keyWatchers and pushes are the watchers of key-value workloads.
	keyWatchers map[string]stores.KeyWatcher
	pushes      map[string]*discovery.PushEngine
	// preloaded are the preload's operations of watched workloads, their
	// times offsets from the run's epoch.
	preloadMu sync.Mutex
	preloaded map[string][]workload.HistoryOp
	// preloads is what each workload's preload cost, for the results.
	preloads []results.Preload
	remotes  []*remoteWorker // load workers away from the runner (kubernetes)
	poller   stores.Poller
	leaders  *leaderWatch
	faults   *faultDriver
	rec      *checker.Recorder

	mu    sync.Mutex
	notes map[string]string
	downs map[int]downCount // node -> the faults that took it down on purpose
}

// downCount is how many faults hold a node down on purpose, and how often
// that number has changed.
type downCount struct {
	faults  int
	changes uint64
}

func newClusterRun(x *execution, spec plan.ClusterSpec) *clusterRun {
	c := &clusterRun{x: x, spec: spec, plan: clusterPlan(x.plan, spec.Name), log: x.log}
	if len(x.plan.Clusters) > 1 {
		c.log = x.log.With("cluster", spec.Name)
	}
	c.drv, _ = registry.Lookup(spec.Store) // checkSupported refused unknown stores
	c.prov = newProvider(c)
	return c
}

// clusterPlan is pl cut down to one cluster: its workloads, their loads,
// its faults, every phase; no checks (they read the whole run).
func clusterPlan(pl *plan.Plan, cluster string) *plan.Plan {
	p := *pl
	p.Clusters, p.Workloads, p.Events, p.Checks = nil, nil, nil, nil
	mine := map[string]bool{}
	for _, c := range pl.Clusters {
		if c.Name == cluster {
			p.Clusters = append(p.Clusters, c)
		}
	}
	for _, w := range pl.Workloads {
		if w.Cluster == cluster {
			p.Workloads = append(p.Workloads, w)
			mine[w.Name] = true
		}
	}
	for _, e := range pl.Events {
		switch {
		case e.Load != nil && !mine[e.Load.Workload]:
		case e.Fault != nil && e.Fault.Cluster != cluster:
		default:
			p.Events = append(p.Events, e)
		}
	}
	return &p
}

// nodeName is the run-wide name of node i (1-based) of the cluster: n1,
// n2, ... with one cluster, else prefixed by the cluster's name, so that
// workspaces, network hosts, containers and results never mix two
// clusters' nodes.
func (c *clusterRun) nodeName(i int) string { return c.x.plan.NodeHost(c.spec.Name, i) }

// cluster returns the run's cluster named name.
func (x *execution) cluster(name string) *clusterRun {
	for _, c := range x.clusters {
		if c.spec.Name == name {
			return c
		}
	}
	return nil
}

func (x *execution) run(ctx context.Context) (res *results.Results, err error) {
	// What earlier, killed runs left behind goes first (see Reap); a
	// failure only costs a warning, since this run does not need it gone.
	reaped, _ := Reap(ctx, ReapOptions{StateDir: x.opts.StateDir, Logger: x.log})
	for _, line := range reaped.Lines() {
		fmt.Fprintln(x.opts.Progress, line)
	}
	// One warning per reaper that failed; each error names its reaper.
	for _, e := range reaped.Failed {
		x.log.Warn("cleaning up after earlier runs", "err", e)
	}

	launches := make([]stores.Launcher, len(x.clusters))
	for i, c := range x.clusters {
		launch, err := c.prov.launcher(ctx, c.spec, c.drv, x.opts)
		if err != nil {
			return nil, c.infra("", "install", err)
		}
		launches[i] = launch
	}

	x.proc, err = process.NewRun(process.RunOptions{StateDir: x.opts.StateDir, Keep: x.opts.Keep, Logger: x.log, StopGrace: teardownGrace, KillAtClose: true})
	if err != nil {
		return nil, x.infra("", "startup", err)
	}
	defer func() {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
		defer cancel()
		for _, c := range x.clusters {
			c.closeClients()
			c.closeWorkers()
		}
		// Containers before the run directory their volumes point into.
		if x.kube != nil {
			if cerr := x.kube.Close(tctx); cerr != nil {
				err = errors.Join(err, fmt.Errorf("teardown of run %s: kubernetes: %w", x.proc.ID(), cerr))
			}
		}
		if cerr := x.docker.close(tctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("teardown of run %s: %w", x.proc.ID(), cerr))
		}
		if cerr := x.proc.Close(tctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("teardown of run %s: %w", x.proc.ID(), cerr))
		}
		// After the processes: a namespace lives on while a process is in it.
		if x.fab != nil {
			if cerr := x.fab.Close(tctx); cerr != nil {
				err = errors.Join(err, fmt.Errorf("teardown of run %s: network: %w", x.proc.ID(), cerr))
			}
			rc := x.fab.Reads()
			if rc.Lost > 0 {
				fmt.Fprintf(x.opts.Progress, "warning: the network shaper lost %d frames after reading them (a bug in scenario; the log names each host): TCP retransmitted them, and the latencies measured carry it\n", rc.Lost)
			}
			if werr := x.noteReads(res, rc); werr != nil {
				err = errors.Join(err, werr)
			}
		}
		if x.opts.Keep {
			fmt.Fprintf(x.opts.Progress, "kept node data and logs in %s\n", x.proc.Dir())
		}
	}()

	// Before the fabric: it shapes the namespaces of docker's sandboxes.
	for _, c := range x.clusters {
		if err := c.prov.prepare(ctx, x.proc, func(node string, err error) error { return c.infra(node, "startup", err) }); err != nil {
			return nil, err
		}
	}
	switch {
	case x.podNet:
		if err := x.startPodNetwork(ctx); err != nil {
			return nil, err
		}
	case needsFabric(x.plan) || x.opts.Network != "":
		if err := x.startFabric(ctx); err != nil {
			return nil, err
		}
	}
	// One cluster after the other: each waits for its own readiness, and
	// the machine's cores are better spent on one start at a time.
	for i, c := range x.clusters {
		if err := c.startCluster(ctx, launches[i]); err != nil {
			x.copyLogs()
			return nil, err
		}
	}
	for _, c := range x.clusters {
		if err := c.openClients(ctx); err != nil {
			x.copyLogs()
			return nil, err
		}
	}
	x.epoch = time.Now()
	for _, c := range x.clusters {
		c.rec = c.newRecorder()
	}
	for _, c := range x.clusters {
		if err := c.preload(ctx); err != nil {
			x.copyLogs()
			return nil, err
		}
	}
	res, err = x.play(ctx)
	x.copyLogs()
	return res, err
}

// startFabric gives every node, client region and the runner a network
// namespace of its own and shapes the links between them as declared.
func (x *execution) startFabric(ctx context.Context) error {
	hosts := x.fabricHosts()
	specs := make([]fabric.HostSpec, len(hosts))
	for i, h := range hosts {
		specs[i] = fabric.HostSpec{Name: h.name, Region: h.region}
		if h.node > 0 {
			specs[i].AttachPID = x.cluster(h.cluster).prov.namespacePID(h.node)
		}
		if h.attach > 0 {
			specs[i].AttachPID = h.attach
		}
	}
	fab, err := fabric.New(ctx, specs, fabric.Options{
		RunID: x.proc.ID(),
		Seed:  networkSeed(x.plan),
		// Engaged even on unshaped links: the per-pair schedulers write
		// to the destinations while the readers go on reading, which
		// measured faster for etcd than writing from the reader (put
		// throughput 0.81-0.88 of loopback engaged, 0.72-0.84 direct).
		Engage: x.opts.Network != NetworkDirect,
		// Pairs whose link shapes nothing skip the shaper: they cost
		// what the kernel's own path costs, not a read and a write of
		// every packet in this process (see fabric.Options.Bypass).
		Bypass:       x.opts.Network == "" || x.opts.Network == NetworkBypass,
		Kernel:       x.opts.Network == NetworkKernel,
		NoOffload:    x.opts.Network == NetworkEngagedNoOffload,
		PlainReads:   x.opts.Network == NetworkEngagedPlain,
		PacketWrites: x.opts.Network == NetworkEngagedPacketWrites,
		BusyPoll:     x.opts.BusyPoll,
		Logger:       x.log,
	})
	if err != nil {
		return x.infra("", "startup", fmt.Errorf("network fabric: %w", err))
	}
	x.fab = fab
	if fab.Backend() != fabric.KernelBackend {
		// The kernel reference has no shaper whose queues could overrun.
		x.traffic = newNetCounts(fab, x.log)
	}
	if x.net, err = newNetwork(ctx, fabricLinks{fab}, hosts, x.plan.Network); err != nil {
		return x.infra("", "startup", fmt.Errorf("network fabric: %w", err))
	}
	fmt.Fprintf(x.opts.Progress, "network: %s\n", x.net.describe())
	return nil
}

// networkSeed seeds the shaper's loss and jitter draws from the plan, so a
// rerun draws the same.
func networkSeed(p *plan.Plan) int64 {
	var seed int64 = 1
	for _, w := range p.Workloads {
		seed = seed*31 + w.Seed
	}
	return seed
}

// infra wraps err as an InfraError about the run: its one cluster, or
// every cluster.
func (x *execution) infra(node, phase string, err error) error {
	if len(x.clusters) == 1 {
		return x.clusters[0].infra(node, phase, err)
	}
	return &InfraError{Node: node, Phase: phase, Err: err}
}

// infra wraps err as an InfraError about the cluster's node (a name, or "").
func (c *clusterRun) infra(node, phase string, err error) error {
	ie := &InfraError{Cluster: c.spec.Name, Node: node, Phase: phase, Err: err}
	for _, n := range c.nodes {
		if n.Name() == node {
			ie.Log = c.x.keptLogPath(node)
			ie.Tail = n.Tail(logTailLines)
		}
	}
	return ie
}

// keptLogPath is where a node's log can be read after the run: the copy in
// the output directory, or the original when there is no output directory.
func (x *execution) keptLogPath(node string) string {
	if x.opts.OutDir != "" {
		return filepath.Join(x.opts.OutDir, "logs", node+".log")
	}
	_, p := x.proc.NodeDir(node)
	return p
}

func (c *clusterRun) note(key, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.notes == nil {
		c.notes = map[string]string{}
	}
	c.notes[key] = value
}

// copyLogs copies every node's log into OutDir/logs, so they outlive the
// run directory.
func (x *execution) copyLogs() {
	if x.opts.OutDir == "" || x.proc == nil {
		return
	}
	dir := filepath.Join(x.opts.OutDir, "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		x.log.Warn("copy node logs", "err", err)
		return
	}
	for _, c := range x.clusters {
		for _, n := range c.nodes {
			if err := copyFile(n.LogPath(), filepath.Join(dir, n.Name()+".log")); err != nil {
				x.log.Warn("copy node log", "node", n.Name(), "err", err)
			}
		}
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// stopGrace is how long teardown lets each store in a container or a pod
// stop after SIGTERM: a kept run's stores stop gracefully, so that their
// data directories are those of a clean shutdown; the others are killed at
// once, since nothing a graceful stop does outlives the run (their logs
// were copied before). The processes provider decides the same from its
// own Keep (process.RunOptions.KillAtClose).
func (x *execution) stopGrace() time.Duration {
	if x.opts.Keep {
		return teardownGrace
	}
	return 0
}
