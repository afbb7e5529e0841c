package runner

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/coordlab/scenario/fabric/shaper"
	"github.com/coordlab/scenario/internal/netcut"
	"github.com/coordlab/scenario/plan"
)

// cutter is a pod that takes partition rules: a store node's, through its
// agent.
type cutter interface {
	SetCuts(ctx context.Context, r netcut.Rules) error
}

// podLinks is the link backend of a remote Kubernetes cluster, where the
// fabric cannot join the pods' namespaces: it cuts links with netfilter
// rules in the store pods, as the kernel reference network does in its
// hosts (fabric/kernel.go), and shapes none (netem in pods is not built).
// A cut into a node pod is made at its input; a cut from a node pod to a
// pod that takes no rules (a load worker) at the node's output. Hosts
// without a pod (the observer, the unused client hosts) are never cut.
type podLinks struct {
	addrs []netip.Addr // per network host; invalid for hosts without a pod
	pods  []cutter     // per network host; nil for pods that take no rules

	mu    sync.Mutex
	cuts  map[[2]int]bool // (from, to) → reject; present when down
	rules []netcut.Rules  // per host, as last applied
}

func newPodLinks(addrs []netip.Addr, pods []cutter) *podLinks {
	return &podLinks{addrs: addrs, pods: pods, cuts: map[[2]int]bool{}, rules: make([]netcut.Rules, len(pods))}
}

func (p *podLinks) setLinks(ctx context.Context, changes []linkChange) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range changes {
		l := c.link
		l.Down, l.Reject = false, false
		if !c.link.Down && l != (shaper.Link{}) {
			return fmt.Errorf("shaping links between pods of a remote cluster is not built (netem in pods): host %d -> %d asks for %+v", c.from, c.to, c.link)
		}
		if c.link.Down {
			p.cuts[[2]int{c.from, c.to}] = c.link.Reject
		} else {
			delete(p.cuts, [2]int{c.from, c.to})
		}
	}
	next := podRules(p.cuts, p.addrs, p.pods)
	var wg sync.WaitGroup
	errs := make([]error, len(p.pods))
	for i, pod := range p.pods {
		if pod == nil || rulesEqual(next[i], p.rules[i]) {
			continue
		}
		wg.Go(func() {
			if errs[i] = pod.SetCuts(ctx, next[i]); errs[i] == nil {
				p.rules[i] = next[i]
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// podRules places every cut in a pod's rules: at the destination's input
// when it takes rules, else at the source's output. It is pure.
func podRules(cuts map[[2]int]bool, addrs []netip.Addr, pods []cutter) []netcut.Rules {
	out := make([]netcut.Rules, len(pods))
	keys := make([][2]int, 0, len(cuts))
	for k := range cuts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	for _, k := range keys {
		from, to := k[0], k[1]
		if !addrs[from].IsValid() || !addrs[to].IsValid() {
			continue
		}
		reject := cuts[k]
		switch {
		case pods[to] != nil:
			out[to].In = append(out[to].In, netcut.Cut{Addr: addrs[from], Reject: reject})
		case pods[from] != nil:
			out[from].Out = append(out[from].Out, netcut.Cut{Addr: addrs[to], Reject: reject})
		}
	}
	return out
}

func rulesEqual(a, b netcut.Rules) bool {
	return slices.Equal(a.In, b.In) && slices.Equal(a.Out, b.Out)
}

func (p *podLinks) describe(hosts int) string {
	return fmt.Sprintf("%d pods, partitions by netfilter rules in each store pod (no shaping)", hosts)
}

// podNetworkRefusal says why the plan's network cannot be played by rules
// in pods, or nil: pods cut links but shape none.
func podNetworkRefusal(p *plan.Plan) error {
	var shaped []string
	if p.Network.Shaped() {
		shaped = append(shaped, "the network block")
	}
	for _, e := range p.Events {
		if e.Kind == plan.EventFaultInject && e.Fault.Kind == plan.FaultNetwork {
			shaped = append(shaped, fmt.Sprintf("network fault %q", e.Fault.ID))
		}
	}
	if len(shaped) == 0 {
		return nil
	}
	return fmt.Errorf("link shaping (rtt, jitter, loss, bandwidth: %s) on a remote Kubernetes cluster needs netem in each pod, which is not built; partitions work there (netfilter rules in each store pod), and shaping works when the pods run on the runner's own machine (--kube-network fabric)", joinShort(shaped))
}

// joinShort lists up to three items and counts the rest.
func joinShort(items []string) string {
	if len(items) <= 3 {
		return fmt.Sprint(items)
	}
	return fmt.Sprintf("%v and %d more", items[:3], len(items)-3)
}

// startPodNetwork puts the plan's partitions into force in the pods.
func (x *execution) startPodNetwork(ctx context.Context) error {
	hosts := x.fabricHosts()
	addrs := make([]netip.Addr, len(hosts))
	pods := make([]cutter, len(hosts))
	for i, h := range hosts {
		switch {
		case h.node > 0:
			k := x.cluster(h.cluster).prov.(*kubeProvider)
			n := k.nodes[h.node-1]
			addrs[i], pods[i] = n.Addr(), n
		case h.pod.IsValid():
			addrs[i] = h.pod
		}
	}
	var err error
	if x.net, err = newNetwork(ctx, newPodLinks(addrs, pods), hosts, x.plan.Network); err != nil {
		return x.infra("", "startup", fmt.Errorf("partition rules in pods: %w", err))
	}
	fmt.Fprintf(x.opts.Progress, "network: %s\n", x.net.describe())
	return nil
}
