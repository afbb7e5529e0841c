package kube

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/internal/netcut"
	"github.com/coordlab/scenario/internal/podagent"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
)

// SetCuts replaces the partition rules in the node's pod (its network
// namespace, which the store's container shares): netfilter rules the
// agent puts in, as the container has NET_ADMIN.
func (n *Node) SetCuts(ctx context.Context, r netcut.Rules) error {
	_, err := n.call(ctx, podagent.Request{Verb: "net", Net: &r})
	return err
}

// usageTimeout bounds a usage sample: the sampler asks every node each
// second, and a late answer is worth less than a missing one.
const usageTimeout = 2 * time.Second

// Usage is the store process's resource use, read by the agent in the pod
// from /proc as the runner reads a process node's.
func (n *Node) Usage() (metrics.Usage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), usageTimeout)
	defer cancel()
	e, err := n.call(ctx, podagent.Request{Verb: "usage"})
	if err != nil {
		return metrics.Usage{}, err
	}
	if e.Usage == nil {
		return metrics.Usage{}, fmt.Errorf("node %s: the agent sent no usage", n.name)
	}
	return *e.Usage, nil
}

// contentionDir is where a disk fault's writers go in the pod: a second
// mount of the data volume (the same filesystem as the store's data, but
// outside its directory), at the path faults.ContentionDir gives for a
// local node.
func (n *Node) contentionDir() string {
	return filepath.Join(filepath.Dir(n.spec.DataDir), "disk-contention-"+n.name)
}

// StartDiskLoad starts a disk fault's writers in the pod, on the data
// volume, through the agent; they run until the part is stopped.
func (n *Node) StartDiskLoad(ctx context.Context, spec plan.DiskSpec) (faults.DiskPart, error) {
	n.mu.Lock()
	n.disks++
	id := fmt.Sprintf("disk-%d", n.disks)
	n.mu.Unlock()
	// A directory of the fault's own under the mount point, which cannot
	// itself be removed.
	req := &podagent.DiskRequest{ID: id, Dir: filepath.Join(n.contentionDir(), id), Spec: &spec}
	if _, err := n.call(ctx, podagent.Request{Verb: "disk-start", Disk: req}); err != nil {
		return nil, err
	}
	return &diskPart{n: n, id: id}, nil
}

// diskPart is a disk fault's writers in one pod. What they did is known
// once they stopped.
type diskPart struct {
	n  *Node
	id string

	mu      sync.Mutex
	stopped bool
	totals  faults.DiskTotals
	failed  error
}

func (p *diskPart) Stop(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil
	}
	e, err := p.n.call(ctx, podagent.Request{Verb: "disk-stop", Disk: &podagent.DiskRequest{ID: p.id}})
	if err != nil {
		return err
	}
	p.stopped = true
	if e.Disk != nil {
		p.totals = *e.Disk
	}
	if e.DiskError != "" {
		p.failed = fmt.Errorf("node %s: %w", p.n.name, errors.New(e.DiskError))
	}
	return nil
}

func (p *diskPart) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

func (p *diskPart) Totals() faults.DiskTotals {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.totals
}

var _ faults.DiskContender = (*Node)(nil)
