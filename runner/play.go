package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
)

// play runs the timeline: every load at its offset, every event on time,
// the leader polled throughout. It returns the results with checks
// evaluated and written to OutDir.
func (x *execution) play(ctx context.Context) (*results.Results, error) {
	pl, err := x.drv.NewPoller(x.eps)
	if err != nil {
		return nil, x.infra("", "startup", fmt.Errorf("status poller: %w", err))
	}
	defer pl.Close()
	x.poller = pl

	// A short lead lets every goroutine be waiting before offset 0.
	x.base = time.Now().Add(50 * time.Millisecond)
	x.coll = metrics.NewCollector(x.plan.Phases, x.plan.Workloads, x.base)
	x.engines = map[string]*workload.Engine{}
	for _, w := range x.plan.Workloads {
		eng, err := workload.New(w, x.clients[w.Name], x.coll.NewSink, x.base,
			workload.WithLogger(x.log), x.recordHistory(w.Name, x.base))
		if err != nil {
			return nil, err
		}
		x.engines[w.Name] = eng
	}

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	x.faults = newFaultDriver(ctx, x)
	bgCtx, stopBackground := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Go(func() { x.coll.Run(bgCtx) })
	bg.Go(func() { x.pollLeader(bgCtx, pl) })
	bg.Go(func() { x.watchNodes(bgCtx) })
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
		eng, l := x.engines[ev.Load.Workload], *ev.Load
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
	finishErr := x.faults.finish(fctx)
	cancel()
	stopBackground()
	bg.Wait()
	x.coll.Flush()
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
	if finishErr != nil {
		errs = append(errs, finishErr)
	}
	if len(errs) > 0 {
		return nil, x.infra("", x.currentPhase(), errors.Join(errs...))
	}

	res := x.coll.Results()
	x.describe(res, finished)
	faultErr := x.faults.failovers(res)
	if err := x.checkCorrectness(ctx, res); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		x.note("correctness", err.Error())
		x.log.Warn("correctness checks did not run", "err", err)
		res.Notes["correctness"] = err.Error()
	}
	evalChecks(x.plan, res)
	if err := x.writeOutputs(res); err != nil {
		return res, err
	}
	if faultErr != nil {
		// The run measured something other than what the scenario asked
		// for: its results are kept, but it does not count as a pass.
		return res, x.infra("", "", fmt.Errorf("faults: %w", faultErr))
	}
	return res, nil
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
		case plan.EventPhaseEnd:
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
			x.faults.inject(ev)
		case plan.EventFaultRecover:
			x.faults.recoverAt(ev)
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

// pollLeader asks every node for its status every pollInterval and feeds
// the leader timeline.
func (x *execution) pollLeader(ctx context.Context, pl stores.Poller) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		at := time.Since(x.base)
		leader, term := 0, uint64(0)
		for _, s := range pl.Poll(ctx, pollInterval*5) {
			if s.Err == nil && s.IsLeader && s.Term >= term {
				leader, term = s.Node, s.Term
			}
		}
		if ctx.Err() != nil {
			return
		}
		if at >= 0 {
			x.coll.ObserveLeader(at, leader, term)
		}
		x.mu.Lock()
		x.leader = leader
		x.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// watchNodes keeps the resource sampler pointed at each node's current
// process, and notes a node that exits when no fault asked it to.
func (x *execution) watchNodes(ctx context.Context) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	pids := make([]int, len(x.nodes))
	for {
		for i, n := range x.nodes {
			pid := 0
			if n.Running() {
				pid = n.PID()
			}
			if pid != pids[i] {
				x.prov.sample(x.coll, n, pid)
				if pid == 0 && !x.expectedDown(i+1) {
					msg := fmt.Sprintf("exited unexpectedly at %s during phase %q (%v); log: %s",
						time.Since(x.base).Round(time.Millisecond), x.currentPhase(), n.Err(), x.keptLogPath(n.Name()))
					x.log.Warn("node " + n.Name() + " " + msg)
					x.note("node."+n.Name(), msg)
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

// describe fills in what the collector does not know.
func (x *execution) describe(res *results.Results, finished time.Time) {
	res.RunID = x.proc.ID()
	res.Scenario = x.plan.Scenario
	res.Description = x.plan.Description
	res.ScenarioFile = x.opts.ScenarioFile
	res.Started = x.base
	res.Finished = finished
	res.DurationMS = results.MS(x.plan.Duration.D())
	res.Seeds = map[string]int64{}
	for _, w := range x.plan.Workloads {
		res.Seeds["workload."+w.Name] = w.Seed
	}
	for _, e := range x.plan.Events {
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
	res.Backend["provider"] = x.cluster.Provider
	res.Backend["network"] = "loopback"
	if x.fab != nil {
		res.Backend["network"] = "namespaces"
		res.Backend["shaper"] = x.fab.Backend()
		res.Seeds["network"] = networkSeed(x.plan)
	}
	res.Backend["store"] = x.cluster.Store + " " + x.cluster.Version
	res.Clients = map[string]map[string]string{}
	for _, w := range x.plan.Workloads {
		res.Clients[w.Name] = x.drv.ClientSettings(w.Client)
	}
	if res.Notes == nil {
		res.Notes = map[string]string{}
	}
	x.mu.Lock()
	for k, v := range x.notes {
		res.Notes[k] = v
	}
	if x.abort != "" {
		res.Notes["aborted"] = x.abort
	}
	x.mu.Unlock()
}
