package runner

import (
	"cmp"
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
	// Network is where network faults act: KubeNetworkFabric,
	// KubeNetworkPods, or "" to choose by where the pods run.
	Network string
}

// kubeProvider runs each node as a pod in the run's namespace. The runner
// reaches the pods at their IPs, so it runs where those are routable: on
// a node of the cluster, in a pod, or beside a local cluster.
type kubeProvider struct {
	c       *clusterRun
	image   string
	nodes   []*kube.Node
	workers map[string][]*kube.Worker // by workload, in worker order
	pids    map[string]int            // localPID's answers, by pod UID
}

// localPID is kube.LocalPID, asked once per pod: each call walks the
// machine's control groups, and the pod's first process (its agent or
// sandbox) lives as long as the pod.
func (k *kubeProvider) localPID(uid string) int {
	if pid, ok := k.pids[uid]; ok {
		return pid
	}
	if k.pids == nil {
		k.pids = map[string]int{}
	}
	k.pids[uid] = kube.LocalPID(uid)
	return k.pids[uid]
}

// notLocal names the first of the cluster's pods that does not run on
// this machine, or "" when they all do.
func (k *kubeProvider) notLocal() string {
	for i, n := range k.nodes {
		if k.localPID(n.UID()) == 0 {
			return fmt.Sprintf("node %s (pod %s/%s)", k.c.nodeName(i+1), k.c.x.kube.Namespace(), n.Pod())
		}
	}
	for _, ws := range k.workers {
		for _, w := range ws {
			if k.localPID(w.UID()) == 0 {
				return fmt.Sprintf("load worker %s", w.Name())
			}
		}
	}
	return ""
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
			RunID: run.ID(), AgentImage: o.AgentImage, StopGrace: x.stopGrace(), Logger: x.log})
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
			spec := kube.NodeSpec{Image: k.image, DataDir: dataDir, LogPath: logPath, Placement: k.placement(k.c.spec.Placement[i])}
			if ks := k.c.spec.Kubernetes; ks != nil {
				spec.StorageClass, spec.StorageSize = ks.StorageClass, ks.StorageSize
			}
			n, err := x.kube.AddNode(ctx, name, spec)
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
		n := w.WorkerCount()
		k.workers[w.Name] = make([]*kube.Worker, n)
		for i := range n {
			wg.Go(func() {
				p, err := x.kube.AddWorker(ctx, plan.WorkerHost(w.Name, i), k.placement(w.Region))
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
		return k.chooseNetwork(infra)
	}
	return nil
}

// placement maps a scenario region to Kubernetes nodes: by the cluster's
// kubernetes block (region_label, regions), else by --kube-region-label
// with the region's own name, else anywhere.
func (k *kubeProvider) placement(region string) kube.Placement {
	label := k.c.x.opts.Kube.RegionLabel
	value := region
	if ks := k.c.spec.Kubernetes; ks != nil {
		label = cmp.Or(ks.RegionLabel, label)
		if v, ok := ks.Regions[region]; ok {
			value = v
		}
	}
	if label == "" {
		return kube.Placement{}
	}
	return kube.Placement{Label: label, Value: value}
}

// Where the kubernetes provider's network faults act (--kube-network).
const (
	// KubeNetworkFabric joins the pods' namespaces to the network fabric:
	// shaping and partitions, with the pods on this machine.
	KubeNetworkFabric = "fabric"
	// KubeNetworkPods puts partition rules in each store pod: any
	// cluster, partitions only.
	KubeNetworkPods = "pods"
)

// chooseNetwork picks the fabric when every pod runs on this machine
// (unless told otherwise) and rules in the pods when not, and refuses,
// before any store starts, what the choice cannot play.
func (k *kubeProvider) chooseNetwork(infra func(string, error) error) error {
	x := k.c.x
	notLocal := k.notLocal()
	mode := x.opts.Kube.Network
	if mode == "" && (notLocal != "" || x.podNet) && x.opts.Network == "" {
		mode = KubeNetworkPods
	}
	switch mode {
	case KubeNetworkPods:
		if err := podNetworkRefusal(x.plan); err != nil {
			return infra("", err)
		}
		for _, c := range x.clusters {
			if _, ok := c.prov.(*kubeProvider); !ok {
				return infra("", fmt.Errorf("partition rules in pods need every cluster on the kubernetes provider; cluster %s is not", c.spec.Name))
			}
		}
		if x.opts.Network != "" {
			return infra("", fmt.Errorf("the network option %q chooses a fabric mode, but the pods' network is rules in pods (--kube-network fabric to use the fabric)", x.opts.Network))
		}
		x.podNet = true
	case "", KubeNetworkFabric:
		if notLocal != "" {
			return infra("", fmt.Errorf("the network fabric joins the pods' namespaces, so it needs the pods on this machine; %s is not here (--kube-network pods cuts links with rules in the pods instead)", notLocal))
		}
	default:
		return infra("", fmt.Errorf("--kube-network %q: want %s or %s", mode, KubeNetworkFabric, KubeNetworkPods))
	}
	return nil
}

// workerHosts are the load workers' fabric hosts: each worker pod's
// namespace, in its workload's region.
func (k *kubeProvider) workerHosts() []netHost {
	var hs []netHost
	for _, w := range k.c.plan.Workloads {
		for i, p := range k.workers[w.Name] {
			hs = append(hs, netHost{name: plan.WorkerHost(w.Name, i), region: w.Region, attach: k.localPID(p.UID()), pod: p.Addr()})
		}
	}
	return hs
}

func (k *kubeProvider) namespacePID(i int) int { return k.localPID(k.nodes[i-1].UID()) }

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

// sample reads a node's usage through its pod's agent, which reads the
// store's process from /proc as the process provider does here.
func (k *kubeProvider) sample(coll *metrics.Collector, n node, id int) {
	coll.SetSource(n.Name(), id, n.(*kube.Node).Usage)
}
