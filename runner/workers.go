package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/kube"
	"github.com/coordlab/scenario/runner/worker"
	"github.com/coordlab/scenario/runner/workload"
)

// loadRunner plays one phase's load of a workload: the engine in the
// runner, or the workload's remote workers together.
type loadRunner interface {
	Run(ctx context.Context, l plan.LoadSpec, start time.Duration) (workload.Stats, error)
}

// remoteWorker is one worker's exec stream and the runner's end of it.
type remoteWorker struct {
	name   string
	remote *worker.Remote
	cancel context.CancelFunc
	done   chan error // the exec's end
}

// close ends the worker: its input first, so it stops on its own, then
// the stream.
func (r *remoteWorker) close() {
	if r.remote != nil {
		_ = r.remote.Close()
	}
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
	}
	r.cancel()
	<-r.done
}

// startWorkers connects every workload of the cluster to its workers'
// pods: each takes its share of the clients and rate, dials the members
// itself (their fabric addresses when the network is shaped, their pod
// IPs otherwise), and sends back its samples and history.
func (c *clusterRun) startWorkers(k *kubeProvider) error {
	x := c.x
	for _, w := range c.plan.Workloads {
		n := w.WorkerCount()
		var eps []worker.Endpoint
		for _, ep := range c.clientEndpoints(w) {
			eps = append(eps, worker.Endpoint{Node: ep.Node, ClientAddr: ep.ClientAddr, PeerAddr: ep.PeerAddr, Extra: ep.Extra})
		}
		m := &multiRunner{}
		for i, pod := range k.workers[w.Name] {
			rw, err := c.connectWorker(pod, worker.Setup{
				Store:     c.spec.Store,
				Workload:  worker.SplitWorkload(w, i, n),
				Endpoints: eps,
				FirstID:   (i + 1) * workload.IDStride,
				BusyPoll:  x.opts.BusyPoll,
			}, w.Name)
			if err != nil {
				return c.infra("", "startup", fmt.Errorf("workload %q: %w", w.Name, err))
			}
			c.remotes = append(c.remotes, rw)
			off, margin := rw.remote.Offset()
			c.log.Info("load worker ready", "worker", rw.name, "clock_offset", off, "margin", margin)
			m.parts = append(m.parts, rw.remote)
		}
		fmt.Fprintf(x.opts.Progress, "workload %s: %d load worker(s) in pods\n", w.Name, len(m.parts))
		c.engines[w.Name] = m
	}
	return nil
}

func (c *clusterRun) connectWorker(pod *kube.Worker, setup worker.Setup, workload string) (*remoteWorker, error) {
	x := c.x
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	rw := &remoteWorker{name: pod.Name(), cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := pod.Exec(ctx, inR, outW)
		outW.CloseWithError(fmt.Errorf("worker %s: stream ended: %v", pod.Name(), err))
		inR.Close()
		rw.done <- err
		close(rw.done)
	}()
	cctx, ccancel := context.WithTimeout(ctx, time.Minute)
	defer ccancel()
	r, err := worker.Connect(cctx, inW, outR, setup, worker.RemoteOptions{
		Name:    pod.Name(),
		Sink:    c.coll.NewSink(),
		History: c.historyFunc(workload, x.base),
		Now:     func() time.Duration { return time.Since(x.base) },
	})
	if err != nil {
		inW.Close()
		cancel()
		<-rw.done
		return nil, err
	}
	rw.remote = r
	return rw, nil
}

// closeWorkers ends every remote worker.
func (c *clusterRun) closeWorkers() {
	var wg sync.WaitGroup
	for _, r := range c.remotes {
		wg.Go(r.close)
	}
	wg.Wait()
}

// multiRunner plays a load on every worker of a workload at once, each its
// share, and adds up what they did.
type multiRunner struct {
	parts []*worker.Remote
}

func (m *multiRunner) Run(ctx context.Context, l plan.LoadSpec, start time.Duration) (workload.Stats, error) {
	n := len(m.parts)
	stats := make([]workload.Stats, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, p := range m.parts {
		share := worker.Split(l, i, n)
		if l.Mode == plan.LoadClosed && share.ClientsFrom == 0 && share.ClientsTo == 0 {
			continue // fewer clients than workers: this one idles
		}
		wg.Go(func() { stats[i], errs[i] = p.Run(ctx, share, start) })
	}
	wg.Wait()
	var total workload.Stats
	for _, s := range stats {
		total.Sent += s.Sent
		total.Failed += s.Failed
		total.LateStarts += s.LateStarts
		total.Expired += s.Expired
		total.Dropped += s.Dropped
		total.Workers += s.Workers
		total.MaxQueue = max(total.MaxQueue, s.MaxQueue)
	}
	return total, errors.Join(errs...)
}
