package runner

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"

	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/kube"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/process"
	"github.com/coordlab/scenario/stores"
)

// KubeOptions configure the kubernetes provider (see package kube).
type KubeOptions struct {
	Kubeconfig, Context string
	AllowNonTest        bool
	AgentImage          string
	RegionLabel         string
}

// kubeProvider runs each node as a pod in the run's namespace. The runner
// reaches the pods at their IPs, so it runs where those are routable: on
// a node of the cluster, in a pod, or beside a local cluster.
type kubeProvider struct {
	c       *clusterRun
	image   string
	nodes   []*kube.Node
	workers map[string][]*kube.Worker // by workload, in worker order
}

func (k *kubeProvider) launcher(_ context.Context, c plan.ClusterSpec, drv stores.Driver, _ Options) (stores.Launcher, error) {
	k.image = c.Image
	if k.image == "" {
		k.image = images.Default(c.Store, c.Version)
	}
	// The cluster pulls the image (or has it loaded): nothing to check
	// here; a pod that cannot get it says so when it is created.
	return drv.Image.Launcher(c), nil
}

func (k *kubeProvider) prepare(ctx context.Context, run *process.Run, infra func(string, error) error) error {
	x := k.c.x
	if x.kube == nil {
		o := x.opts.Kube
		if o.AgentImage == "" {
			return infra("", errors.New("the kubernetes provider needs an agent image (--agent-image)"))
		}
		kr, err := kube.NewRun(ctx, kube.Options{Kubeconfig: o.Kubeconfig, Context: o.Context, AllowNonTest: o.AllowNonTest,
			RunID: run.ID(), AgentImage: o.AgentImage, RegionLabel: o.RegionLabel, StopGrace: teardownGrace, Logger: x.log})
		if err != nil {
			return infra("", err)
		}
		x.kube = kr
		if removed, err := kube.Reap(ctx, kr.Cluster(), x.log); err != nil {
			x.log.Warn("cleaning up namespaces of earlier runs", "err", err)
		} else if len(removed) > 0 {
			fmt.Fprintf(x.opts.Progress, "removed %d namespace(s) left behind by an earlier, killed scenario\n", len(removed))
		}
		fmt.Fprintf(x.opts.Progress, "kubernetes: context %s, namespace %s, agent %s\n", kr.Context(), kr.Namespace(), o.AgentImage)
	}
	nodes := k.c.spec.Nodes
	k.nodes = make([]*kube.Node, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		name := k.c.nodeName(i + 1)
		wg.Go(func() {
			dataDir, logPath := run.NodeDir(name)
			if err := os.MkdirAll(dataDir, 0o700); err != nil {
				errs[i] = infra(name, err)
				return
			}
			n, err := x.kube.AddNode(ctx, name, kube.NodeSpec{Image: k.image, DataDir: dataDir, LogPath: logPath, Region: k.c.spec.Placement[i]})
			if err != nil {
				errs[i] = infra(name, err)
				return
			}
			k.nodes[i] = n
		})
	}
	// The load workers' pods, beside the nodes'.
	var wmu sync.Mutex // guards werrs and the workers map's slices
	var werrs []error
	k.workers = map[string][]*kube.Worker{}
	for _, w := range k.c.plan.Workloads {
		n := workerCount(w)
		k.workers[w.Name] = make([]*kube.Worker, n)
		for i := range n {
			wg.Go(func() {
				p, err := x.kube.AddWorker(ctx, workerName(w.Name, i), w.Region)
				wmu.Lock()
				defer wmu.Unlock()
				if err != nil {
					werrs = append(werrs, infra("", err))
					return
				}
				k.workers[w.Name][i] = p
			})
		}
	}
	wg.Wait()
	if err := errors.Join(append(errs, werrs...)...); err != nil {
		return err
	}
	if needsFabric(x.plan) {
		for i, n := range k.nodes {
			if kube.LocalPID(n.UID()) == 0 {
				return infra(k.c.nodeName(i+1), fmt.Errorf("network shaping and partitions with the kubernetes provider need the pods on this machine (a single-node cluster the runner shares), so that the network fabric can join their namespaces; pod %s/%s is not here", x.kube.Namespace(), n.Pod()))
			}
		}
	}
	return nil
}

// workerHosts are the load workers' fabric hosts: each worker pod's
// namespace, in its workload's region.
func (k *kubeProvider) workerHosts() []netHost {
	var hs []netHost
	for _, w := range k.c.plan.Workloads {
		for i, p := range k.workers[w.Name] {
			hs = append(hs, netHost{name: workerName(w.Name, i), region: w.Region, attach: kube.LocalPID(p.UID())})
		}
	}
	return hs
}

func (k *kubeProvider) namespacePID(i int) int { return kube.LocalPID(k.nodes[i-1].UID()) }

func (k *kubeProvider) addrs() []netip.Addr {
	out := make([]netip.Addr, len(k.nodes))
	for i, n := range k.nodes {
		out[i] = n.Addr()
	}
	return out
}

func (k *kubeProvider) addNode(_ *process.Run, _ *fabric.Fabric, i int, _, path string, args []string) (node, error) {
	n := k.nodes[i-1]
	return n, n.SetCommand(path, args)
}

// sample does nothing: a pod's usage is not read yet.
func (k *kubeProvider) sample(*metrics.Collector, node, int) {}
