package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/coordlab/scenario/internal/cpuwake"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/internal/rtprio"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/servermetrics"
	"github.com/coordlab/scenario/runner/workload"
)

// play runs the timeline: every load at its offset, every event on time,
// every cluster's leader polled throughout. It returns the results with
// checks evaluated and written to OutDir.
func (x *execution) play(ctx context.Context) (*results.Results, error) {
	for _, c := range x.clusters {
		if err := c.listWatchers(ctx); err != nil {
			return nil, err
		}
	}
	if x.opts.Realtime {
		restore, err := rtprio.Raise(rtprio.Priority)
		if err != nil {
			return nil, x.infra("", "startup", fmt.Errorf("--realtime: %w", err))
		}
		defer restore()
	}
	if x.opts.PollIdle {
		r, err := cpuwake.Hold(0)
		if err != nil {
			return nil, x.infra("", "startup", fmt.Errorf("--poll-idle: %w", err))
		}
		defer r.Close()
	}
	// A short lead lets every goroutine be waiting before offset 0.
	x.base = time.Now().Add(50 * time.Millisecond)
	for _, c := range x.clusters {
		err := c.startPlay()
		if c.coll != nil {
			// Deferred before the background's stop is, so it runs after
			// it and after the outputs: nothing reads a closed spool. The
			// files themselves go with the run directory at teardown.
			defer func() {
				if err := c.coll.Close(); err != nil {
					c.log.Warn("metrics spool", "err", err)
				}
			}()
		}
		if err != nil {
			return nil, err
		}
		defer c.poller.Close()
		if c.scraper != nil {
			defer c.scraper.Close()
		}
	}

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	for _, c := range x.clusters {
		c.faults = newFaultDriver(ctx, c)
	}
	bgCtx, stopBackground := context.WithCancel(ctx)
	var bg sync.WaitGroup
	spreadScrapes(x.clusters)
	for _, c := range x.clusters {
		bg.Go(func() { c.coll.Run(bgCtx) })
		bg.Go(func() { c.leaders.run(bgCtx) })
		bg.Go(func() { c.watchNodes(bgCtx) })
		if c.server != nil {
			bg.Go(func() { c.server.Run(bgCtx, serverScrapeInterval) })
		}
	}
	bg.Go(func() { x.progress(bgCtx) })
	defer func() {
		stopBackground()
		bg.Wait()
	}()

	var loads sync.WaitGroup
	loadErrs := make(chan error, len(x.plan.Events))
	for _, ev := range x.plan.Events {
		if ev.Kind != plan.EventLoad {
			continue
		}
		eng, l := x.engine(ev.Load.Workload), *ev.Load
		loads.Go(func() {
			if _, err := eng.Run(runCtx, l, ev.At.D()); err != nil && runCtx.Err() == nil {
				loadErrs <- fmt.Errorf("phase %q: %w", ev.Phase, err)
			}
		})
	}

	walkErr := x.walk(runCtx, stopRun)
	loads.Wait()
	close(loadErrs)
	finished := time.Now()
	// Every fault ends before the background stops, so that restarted nodes
	// are watched and the leader they elect is seen.
	fctx, cancel := context.WithTimeout(ctx, recoveryTimeout)
	var finishErrs []error
	for _, c := range x.clusters {
		finishErrs = append(finishErrs, c.faults.finish(fctx))
	}
	cancel()
	stopBackground()
	bg.Wait()
	for _, c := range x.clusters {
		c.coll.Flush()
	}
	x.endProgress()

	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var errs []error
	for err := range loadErrs {
		errs = append(errs, err)
	}
	if walkErr != nil && !errors.Is(walkErr, context.Canceled) {
		errs = append(errs, walkErr)
	}
	errs = append(errs, finishErrs...)
	if err := errors.Join(errs...); err != nil {
		return nil, x.infra("", x.currentPhase(), err)
	}

	per := make([]*results.Results, len(x.clusters))
	names := make([]string, len(x.clusters))
	var faultErrs []error
	for i, c := range x.clusters {
		res := c.coll.Results()
		c.describe(res, finished)
		if err := c.registryResults(res); err != nil {
			faultErrs = append(faultErrs, c.infra("", "", err))
		}
		c.serverResults(res)
		c.floorResults(res)
		if err := c.faults.failovers(res); err != nil {
			faultErrs = append(faultErrs, c.infra("", "", fmt.Errorf("faults: %w", err)))
		}
		if err := c.checkCorrectness(ctx, res); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			c.log.Warn("correctness checks did not run", "err", err)
			res.Notes["correctness"] = err.Error()
		}
		if err := c.coll.SpoolErr(); err != nil {
			res.Notes["spool"] = err.Error()
		}
		per[i], names[i] = res, c.spec.Name
	}
	// Notes is never nil here: describe makes each cluster's, and Combine
	// the combined one.
	res := results.Combine(names, per)
	if x.traffic != nil {
		x.traffic.fill(res)
	}
	if x.opts.Realtime {
		note, heavy := realtimeNote(res)
		res.Notes[results.NoteRealtime] = note
		if len(heavy) > 0 {
			x.log.Warn("--realtime under a heavy load: the runner took the cores from the stores", "phases", heavy)
		}
	}
	if x.opts.BusyPoll > 0 {
		note, heavy := busyPollNote(res, x.opts.BusyPoll)
		res.Notes[results.NoteBusyPoll] = note
		if len(heavy) > 0 {
			x.log.Warn("--busy-poll took a large share of the machine's CPUs from the stores", "phases", heavy)
		}
	}
	x.mu.Lock()
	if x.abort != "" {
		res.Notes["aborted"] = x.abort
	}
	x.mu.Unlock()
	evalChecks(x.plan, res)
	if err := x.writeOutputs(res); err != nil {
		return res, err
	}
	// A fault that could not be applied or undone means the run measured
	// something other than what the scenario asked for: its results are
	// kept, but it does not count as a pass.
	return res, errors.Join(faultErrs...)
}

// startPlay makes what the cluster measures the timeline with: its status
// poller, collector and workload engines.
func (c *clusterRun) startPlay() error {
	pl, err := c.drv.NewPoller(c.eps)
	if err != nil {
		return c.infra("", "startup", fmt.Errorf("status poller: %w", err))
	}
	c.poller = pl
	c.coll = metrics.NewCollector(c.plan.Phases, c.plan.Workloads, c.x.base)
	c.leaders = newLeaderWatch(pl, len(c.eps), c.drv.ElectionWindow(c.spec), c.observeLeader)
	// What the collector keeps of every second (interval logs, write times)
	// would grow with the request rate for the whole run in memory.
	spool := c.spec.Name
	if spool == "" {
		spool = "run"
	}
	if err := c.coll.SpoolTo(filepath.Join(c.x.proc.Dir(), "spool", spool)); err != nil {
		c.log.Warn("metrics kept in memory", "err", err)
	}
	if c.drv.NewMetricScraper != nil {
		sc, err := c.drv.NewMetricScraper(c.eps)
		if err != nil {
			return c.infra("", "startup", fmt.Errorf("server metrics: %w", err))
		}
		c.scraper = sc
		var cuts []time.Duration // the windows serverResults asks for end at these
		for _, p := range c.plan.Phases {
			cuts = append(cuts, p.Start.D(), p.End().D())
		}
		c.server = servermetrics.New(sc, c.drv.ServerMetrics, len(c.eps), c.x.base, cuts, c.log)
	}
	c.engines = map[string]loadRunner{}
	if k, ok := c.prov.(*kubeProvider); ok {
		return c.startWorkers(k)
	}
	for _, w := range c.plan.Workloads {
		if w.Registry != nil || w.Lock != nil || w.Watches != nil {
			if err := c.startCoordination(w); err != nil {
				return err
			}
			continue
		}
		if w.Watchers > 0 {
			if err := c.newPush(w); err != nil {
				return err
			}
			continue
		}
		eng, err := workload.New(w, c.clients[w.Name], c.coll.NewSink, c.x.base,
			workload.WithLogger(c.log), c.recordHistory(w.Name, c.x.base), workload.WithBusyPoll(c.x.opts.BusyPoll))
		if err != nil {
			return err
		}
		c.engines[w.Name] = eng
	}
	return nil
}

// spreadScrapes gives every node whose metrics are scraped, over every
// cluster, its own moment of the second: the clusters' collectors and
// recorders start together.
func spreadScrapes(clusters []*clusterRun) {
	total := 0
	for _, c := range clusters {
		if c.server != nil {
			total += c.server.Nodes()
		}
	}
	first := 0
	for _, c := range clusters {
		if c.server != nil {
			c.server.Spread(first, total)
			first += c.server.Nodes()
		}
	}
}

// serverScrapeInterval is how often the stores' own metrics are read: a
// phase's figures are exact to it.
const serverScrapeInterval = time.Second

// serverResults puts what the store's own metrics say of each phase, and
// of the whole timeline, in res.
func (c *clusterRun) serverResults(res *results.Results) {
	if c.server == nil {
		return
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	var end time.Duration
	for i := range res.Phases {
		p := &res.Phases[i]
		start := ms(p.StartMS)
		end = max(end, start+ms(p.DurationMS))
		p.Server = c.server.Window(start, start+ms(p.DurationMS))
	}
	res.Run.Server = c.server.Window(-time.Hour, end)
	if n := c.server.Errors(); n > 0 {
		res.Notes["server_metrics"] = fmt.Sprintf("%d scrapes of the store's own metrics failed (a node down or cut off); the next answer of each covers what it missed", n)
	}
}

// engine is the workload engine named w, in whichever cluster runs it.
func (x *execution) engine(w string) loadRunner {
	for _, c := range x.clusters {
		if eng, ok := c.engines[w]; ok {
			return eng
		}
	}
	return nil
}

// snapshot is the run so far, for progress and abort_on_fail checks.
func (x *execution) snapshot() *results.Results {
	per := make([]*results.Results, len(x.clusters))
	names := make([]string, len(x.clusters))
	for i, c := range x.clusters {
		per[i], names[i] = c.coll.Snapshot(), c.spec.Name
	}
	return results.Combine(names, per)
}

// walk plays the timeline's events at their offsets until the end of the
// last phase. It calls stop when a check marked abort_on_fail fails.
func (x *execution) walk(ctx context.Context, stop context.CancelFunc) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var ended []string
	for _, ev := range x.plan.Events {
		if err := sleepUntil(ctx, timer, x.base.Add(ev.At.D())); err != nil {
			return err
		}
		switch ev.Kind {
		case plan.EventPhaseStart:
			x.mu.Lock()
			x.phase = ev.Phase
			x.mu.Unlock()
			x.log.Info("phase starts", "phase", ev.Phase, "at", ev.At)
			if x.traffic != nil {
				x.traffic.sample(ev.Phase, false)
			}
		case plan.EventPhaseEnd:
			if x.traffic != nil {
				x.traffic.sample(ev.Phase, true)
			}
			ended = append(ended, ev.Phase)
			if x.opts.AbortOnFail {
				if failed := x.abortingCheck(ended); failed != "" {
					x.mu.Lock()
					x.abort = fmt.Sprintf("check %q failed at the end of phase %q", failed, ev.Phase)
					x.mu.Unlock()
					stop()
					return nil
				}
			}
		case plan.EventFaultInject:
			x.cluster(ev.Fault.Cluster).faults.inject(ev)
		case plan.EventFaultRecover:
			x.cluster(ev.Fault.Cluster).faults.recoverAt(ev)
		}
	}
	return sleepUntil(ctx, timer, x.base.Add(x.plan.Duration.D()))
}

// sleepUntil waits for the wall-clock instant at (monotonic) or ctx.
func sleepUntil(ctx context.Context, t *time.Timer, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	t.Reset(d)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (x *execution) currentPhase() string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.phase
}

// observeLeader records one state of the leader watch.
func (c *clusterRun) observeLeader(s leaderState) {
	if at := s.at.Sub(c.x.base); at >= 0 {
		if s.unanswered {
			c.coll.ObserveUnanswered(at)
		} else {
			c.coll.ObserveLeader(at, s.leader, s.term)
		}
	}
}

// watchNodes keeps the resource sampler pointed at each node's current
// process, and notes a node that exits when no fault asked it to.
func (c *clusterRun) watchNodes(ctx context.Context) {
	x := c.x
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	pids := make([]int, len(c.nodes))
	for {
		before := c.downCounts()
		for i, n := range c.nodes {
			pid := 0
			if n.Running() {
				pid = n.PID()
			}
			if pid != pids[i] {
				c.prov.sample(c.coll, n, pid)
				if pid == 0 && !c.exitExpected(i+1, before[i+1]) {
					msg := fmt.Sprintf("exited unexpectedly at %s during phase %q (%v); log: %s",
						time.Since(x.base).Round(time.Millisecond), x.currentPhase(), n.Err(), x.keptLogPath(n.Name()))
					c.log.Warn("node " + n.Name() + " " + msg)
					c.note("node."+n.Name(), msg)
				}
				pids[i] = pid
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// describe fills in what the collector does not know of the cluster's
// share of the run.
func (c *clusterRun) describe(res *results.Results, finished time.Time) {
	x := c.x
	res.RunID = x.proc.ID()
	res.Scenario = x.plan.Scenario
	res.Description = x.plan.Description
	res.ScenarioFile = x.opts.ScenarioFile
	res.Started = x.base
	res.Finished = finished
	res.DurationMS = results.MS(x.plan.Duration.D())
	res.Seeds = map[string]int64{}
	for _, w := range c.plan.Workloads {
		res.Seeds["workload."+w.Name] = w.Seed
	}
	for _, e := range c.plan.Events {
		if e.Kind == plan.EventFaultInject && e.Fault.Target.Seed != 0 {
			res.Seeds["fault."+e.Fault.ID] = e.Fault.Target.Seed
		}
	}
	for _, p := range x.plan.Point {
		res.Point = append(res.Point, results.SweepValue{Variable: p.Variable, Value: p.Value})
	}
	if res.Backend == nil {
		res.Backend = map[string]string{}
	}
	res.Backend["provider"] = c.spec.Provider
	res.Backend["network"] = "loopback"
	if x.opts.Realtime {
		res.Backend["realtime"] = fmt.Sprintf("the runner's threads at SCHED_FIFO %d during the timeline", rtprio.Priority)
	}
	if x.opts.BusyPoll > 0 {
		res.Backend["busy_poll"] = x.opts.BusyPoll.String()
	}
	if x.opts.PollIdle {
		res.Backend["poll_idle"] = "every CPU's wake-up latency held at 0 during the timeline (" + cpuwake.Device + "): idle CPUs polled rather than halted"
	}
	if x.fab != nil {
		res.Backend["network"] = "namespaces"
		res.Backend["shaper"] = x.fab.Backend()
		res.Seeds["network"] = networkSeed(x.plan)
	}
	if x.podNet {
		res.Backend["network"] = "pods"
		res.Backend["shaper"] = "netfilter rules in each store pod (partitions only)"
	}
	res.Backend["store"] = c.spec.Store + " " + c.spec.Version
	res.Clients = map[string]map[string]string{}
	for _, w := range c.plan.Workloads {
		res.Clients[w.Name] = c.drv.ClientSettings(w.Client)
	}
	if k := keyOrder(c.plan.Workloads); k != "" {
		res.Backend[results.BackendSequentialKeys] = k
	}
	res.Preloads = c.preloads
	if res.Notes == nil {
		res.Notes = map[string]string{}
	}
	c.mu.Lock()
	for k, v := range c.notes {
		res.Notes[k] = v
	}
	c.mu.Unlock()
}

// keyOrder is what results.json says of how the workloads' sequential keys
// were walked, "" when none has them. It is said because the order changed
// on 2026-12-07: runs before walked a lap per worker, which cost etcd 4-6%
// more CPU a put at 1000 clients, and compare warns across the change.
func keyOrder(ws []plan.WorkloadSpec) string {
	for _, w := range ws {
		if w.Distribution == plan.DistSequential {
			return results.SequentialKeysShared
		}
	}
	return ""
}
