package runner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/checker"
	"github.com/coordlab/scenario/runner/discovery"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
)

// openRegistry opens the store's registry recipe for registry workload w,
// from the workload's region like any client of it.
func (c *clusterRun) openRegistry(ctx context.Context, w plan.WorkloadSpec, opts stores.ClientOptions) error {
	if c.drv.NewRegistry == nil {
		return c.infra("", "startup", fmt.Errorf("workload %q: store %s has no registry recipe", w.Name, c.spec.Store))
	}
	reg, err := c.drv.NewRegistry(ctx, stores.RegistryOptions{
		ClientOptions: opts,
		Prefix:        w.KeyPrefix,
		TTL:           w.Registry.TTL.D(),
		Watchers:      w.Registry.Watchers,
		Recipe:        w.Registry.Recipe,
	})
	if err != nil {
		return c.infra("", "startup", fmt.Errorf("workload %q: open the registry: %w", w.Name, err))
	}
	c.registries[w.Name] = reg
	return nil
}

// openLocker opens the store's lock recipe for lock workload w.
func (c *clusterRun) openLocker(ctx context.Context, w plan.WorkloadSpec, opts stores.ClientOptions) error {
	if c.drv.NewLocker == nil {
		return c.infra("", "startup", fmt.Errorf("workload %q: store %s has no lock recipe", w.Name, c.spec.Store))
	}
	lk, err := c.drv.NewLocker(ctx, stores.LockerOptions{ClientOptions: opts, Key: w.KeyPrefix + "lock", TTL: w.Lock.TTL.D(), Recipe: w.Lock.Recipe})
	if err != nil {
		return c.infra("", "startup", fmt.Errorf("workload %q: open the lock recipe: %w", w.Name, err))
	}
	if c.lockers == nil {
		c.lockers, c.dials = map[string]stores.Locker{}, map[string]stores.DialFunc{}
	}
	c.lockers[w.Name], c.dials[w.Name] = lk, opts.DialFunc()
	return nil
}

// openWatchHolder opens the connections of watches workload w.
func (c *clusterRun) openWatchHolder(ctx context.Context, w plan.WorkloadSpec, opts stores.ClientOptions) error {
	if c.drv.NewWatchHolder == nil {
		return c.infra("", "startup", fmt.Errorf("workload %q: store %s cannot hold many watches", w.Name, c.spec.Store))
	}
	h, err := c.drv.NewWatchHolder(ctx, opts)
	if err != nil {
		return c.infra("", "startup", fmt.Errorf("workload %q: open the watch holder: %w", w.Name, err))
	}
	if c.holders == nil {
		c.holders = map[string]stores.WatchHolder{}
	}
	c.holders[w.Name] = h
	return nil
}

// openKeyWatcher opens the watches of key-value workload w's watchers.
func (c *clusterRun) openKeyWatcher(ctx context.Context, w plan.WorkloadSpec, opts stores.ClientOptions) error {
	if c.drv.NewKeyWatcher == nil {
		return c.infra("", "startup", fmt.Errorf("workload %q: store %s cannot watch keys", w.Name, c.spec.Store))
	}
	kw, err := c.drv.NewKeyWatcher(ctx, opts)
	if err != nil {
		return c.infra("", "startup", fmt.Errorf("workload %q: open the key watcher: %w", w.Name, err))
	}
	if c.keyWatchers == nil {
		c.keyWatchers = map[string]stores.KeyWatcher{}
	}
	c.keyWatchers[w.Name] = kw
	return nil
}

// listWatchers has the watchers of every key-value workload of the
// cluster list its keys, before the timeline: a listing of hundreds of
// keys beside a busy store takes seconds, which would otherwise come out
// of the workload's first load.
func (c *clusterRun) listWatchers(ctx context.Context) error {
	for _, w := range c.plan.Workloads {
		kw := c.keyWatchers[w.Name]
		if kw == nil {
			continue
		}
		push, err := discovery.NewPush(w, kw, c.log)
		if err != nil {
			return err
		}
		if c.pushes == nil {
			c.pushes = map[string]*discovery.PushEngine{}
		}
		c.pushes[w.Name] = push
		t0 := time.Now()
		if err := push.List(ctx); err != nil {
			return c.infra("", "startup", fmt.Errorf("workload %q: %w", w.Name, err))
		}
		fmt.Fprintf(c.x.opts.Progress, "workload %s: %d watchers listed its keys in %s\n", w.Name, w.Watchers, time.Since(t0).Round(time.Millisecond))
	}
	return nil
}

// newPush makes the engine of key-value workload w with watchers, whose
// watchers listed already: its own engine's writes go to the watchers'
// engine, which plays its loads.
func (c *clusterRun) newPush(w plan.WorkloadSpec) error {
	push := c.pushes[w.Name]
	if push == nil {
		return fmt.Errorf("workload %q: its watchers have not listed", w.Name)
	}
	record := c.historyFunc(w.Name, c.x.base)
	eng, err := workload.New(w, c.clients[w.Name], c.coll.NewSink, c.x.base, workload.WithLogger(c.log),
		workload.WithBusyPoll(c.x.opts.BusyPoll), workload.WithHistory(func(op workload.HistoryOp) {
			record(op)
			push.Written(op)
		}))
	if err != nil {
		return err
	}
	// The preload's writes, moved from the epoch's clock to the base's.
	shift := c.x.epoch.Sub(c.x.base)
	preloaded := slices.Clone(c.preloaded[w.Name])
	for i := range preloaded {
		preloaded[i].Call += shift
		preloaded[i].Return += shift
	}
	if err := push.Begin(discovery.PushConfig{Load: eng, Sink: c.coll.NewSink(), Base: c.x.base,
		End: c.workloadEnd(w.Name), Preloaded: preloaded}); err != nil {
		return err
	}
	c.engines[w.Name] = push
	return nil
}

// workloadEnd is when workload w's last load ends, from the base.
func (c *clusterRun) workloadEnd(w string) time.Duration {
	var end time.Duration
	for _, ev := range c.plan.Events {
		if ev.Kind == plan.EventLoad && ev.Load.Workload == w {
			end = max(end, ev.At.D()+ev.Load.Duration.D())
		}
	}
	return end
}

func (c *clusterRun) closeRegistries() {
	for _, p := range c.pushes {
		p.Close()
	}
	for name, kw := range c.keyWatchers {
		if err := kw.Close(); err != nil {
			c.log.Debug("close key watcher", "workload", name, "err", err)
		}
	}
	for name, h := range c.holders {
		if err := h.Close(); err != nil {
			c.log.Debug("close watch holder", "workload", name, "err", err)
		}
	}
	for name, r := range c.registries {
		if err := r.Close(); err != nil {
			c.log.Debug("close registry", "workload", name, "err", err)
		}
	}
	for name, l := range c.lockers {
		if err := l.Close(); err != nil {
			c.log.Debug("close locker", "workload", name, "err", err)
		}
	}
}

// startCoordination makes the engine of registry or lock workload w. It
// ends when the workload's last load ends.
func (c *clusterRun) startCoordination(w plan.WorkloadSpec) error {
	end := c.workloadEnd(w.Name)
	if w.Watches != nil {
		eng, err := discovery.NewHold(w, c.holders[w.Name], c.x.base, end, c.log)
		if err != nil {
			return err
		}
		if c.holds == nil {
			c.holds = map[string]*discovery.HoldEngine{}
		}
		c.holds[w.Name], c.engines[w.Name] = eng, eng
		return nil
	}
	if w.Lock != nil {
		eng, err := discovery.NewLock(w, discovery.LockConfig{
			Locker: c.lockers[w.Name], Classify: c.drv.Classify, Sink: c.coll.NewSink(),
			Base: c.x.base, End: end, Dial: c.dials[w.Name], Log: c.log,
		})
		if err != nil {
			return err
		}
		if c.locks == nil {
			c.locks = map[string]*discovery.LockEngine{}
		}
		c.locks[w.Name], c.engines[w.Name] = eng, eng
		return nil
	}
	eng, err := discovery.New(w, discovery.Config{
		Registry: c.registries[w.Name],
		Classify: c.drv.Classify,
		Sink:     c.coll.NewSink(),
		Base:     c.x.base,
		End:      end,
		Seed:     w.Seed,
		Log:      c.log,
		Baseline: func() {
			// Two samples: a node's first only primes its counters.
			r := c.coll.Resources()
			r.SampleAt(time.Since(c.x.base))
			time.Sleep(250 * time.Millisecond)
			r.SampleAt(time.Since(c.x.base))
		},
	})
	if err != nil {
		return err
	}
	if c.discovery == nil {
		c.discovery = map[string]*discovery.Engine{}
	}
	c.discovery[w.Name] = eng
	c.engines[w.Name] = eng
	return nil
}

// vanish is the vanish fault: instances of a registry stop without a word.
func (d *faultDriver) vanish(_ context.Context, f plan.FaultSpec) (injection, error) {
	eng := d.c.discovery[f.Vanish.Workload]
	if eng == nil {
		return injection{}, fmt.Errorf("workload %q is not a registry of cluster %q", f.Vanish.Workload, d.c.spec.Name)
	}
	applied, undo, err := eng.Vanish(*f.Vanish)
	return injection{applied: applied, undo: undo}, err
}

// pauseHolder is a pause fault on a lock workload: its holder freezes.
func (d *faultDriver) pauseHolder(f plan.FaultSpec) (injection, error) {
	eng := d.c.locks[f.Workload]
	if eng == nil {
		return injection{}, fmt.Errorf("workload %q is not a lock workload of cluster %q", f.Workload, d.c.spec.Name)
	}
	applied, undo, err := eng.Pause()
	return injection{applied: applied, undo: undo}, err
}

// registryResults puts every registry's own figures in res, and the
// offending events of a broken watch promise in a file beside it.
func (c *clusterRun) registryResults(res *results.Results) error {
	for _, w := range c.plan.Workloads {
		eng := c.discovery[w.Name]
		if eng == nil {
			continue
		}
		rep := eng.Report()
		r := results.Registry{
			Workload: w.Name, Store: c.spec.Store, Instances: rep.Instances, Watchers: rep.Watchers,
			TTLMS: results.MS(w.Registry.TTL.D()), HeartbeatMS: results.MS(w.Registry.Heartbeat.D()),
			RegistrationsPerS: rep.RegistrationsPerS, Registered: rep.Registered,
			Vanished: rep.Vanished, Detected: rep.Detected, Expired: rep.Expired, WatchErrors: rep.WatchErrors,
			Watch: results.WatchVerdict{OK: rep.Watch.OK(), Model: rep.Model, Events: rep.Watch.Events,
				Skipped: rep.Watch.Skipped, Returns: rep.Watch.Returns, Violations: len(rep.Watch.Violations)},
			MemoryPerInstanceKiB: memoryPerInstance(res.Resources, rep),
		}
		if rep.Watchers > 0 {
			if err := c.watchVerdict(&r.Watch, &r.ViolationsFile, w.Name, rep.Watch); err != nil {
				return err
			}
		}
		res.Registries = append(res.Registries, r)
	}
	for _, w := range c.plan.Workloads {
		eng := c.pushes[w.Name]
		if eng == nil {
			continue
		}
		rep := eng.Report()
		k := results.KeyWatch{Workload: w.Name, Store: c.spec.Store, Watchers: rep.Watchers,
			Writes: rep.Writes, FannedOut: rep.FannedOut, WatchErrors: rep.WatchErrors,
			Watch: results.WatchVerdict{OK: rep.Watch.OK(), Model: rep.Model, Events: rep.Watch.Events,
				Skipped: rep.Watch.Skipped, Violations: len(rep.Watch.Violations)}}
		if err := c.watchVerdict(&k.Watch, &k.ViolationsFile, w.Name, rep.Watch); err != nil {
			return err
		}
		res.KeyWatches = append(res.KeyWatches, k)
	}
	for _, w := range c.plan.Workloads {
		eng := c.holds[w.Name]
		if eng == nil {
			continue
		}
		held, took, err := eng.Report()
		h := results.WatchHold{Workload: w.Name, Store: c.spec.Store, Keys: w.Watches.Keys, Held: held, SetMS: results.MS(took)}
		if took > 0 {
			h.SetPerS = float64(held) / took.Seconds()
		}
		if err != nil {
			h.Error = err.Error()
		}
		res.Watches = append(res.Watches, h)
	}
	for _, w := range c.plan.Workloads {
		eng := c.locks[w.Name]
		if eng == nil {
			continue
		}
		rep := eng.Report()
		l := results.Lock{Workload: w.Name, Store: c.spec.Store, Contenders: rep.Contenders,
			TTLMS: results.MS(w.Lock.TTL.D()), HoldMS: results.MS(w.Lock.Hold.D()),
			Holds: rep.Holds, Lost: rep.Lost, Paused: rep.Paused,
			MutexOK: len(rep.Overlaps) == 0, Overlaps: len(rep.Overlaps)}
		if !l.MutexOK {
			o := rep.Overlaps[0]
			l.Detail = o.Detail + ": the recipe has no fencing token, so a holder paused past its lease cannot know it lost the lock"
			name := "lock-overlaps-" + w.Name + ".json"
			if err := c.writeJSON(name, rep.Overlaps); err != nil {
				return err
			}
			l.OverlapsFile = c.outPath(name)
		}
		res.Locks = append(res.Locks, l)
	}
	return nil
}

// watchVerdict completes v with why the watches of workload w failed, and
// writes the offending events to a file named in file.
func (c *clusterRun) watchVerdict(v *results.WatchVerdict, file *string, w string, res checker.WatchResult) error {
	switch {
	case res.Watchers == 0:
		v.OK = false
		v.Detail = "the watches were not judged: the workload did not reach the end of its last load"
	case !v.OK:
		first := res.Violations[0]
		v.Detail = fmt.Sprintf("%d broken promise(s); first: watcher %d, %s: %s", len(res.Violations), first.Watcher, first.Kind, first.Detail)
		name := "watch-violations-" + w + ".json"
		if err := c.writeJSON(name, res.Violations); err != nil {
			return err
		}
		*file = c.outPath(name)
	}
	return nil
}

// memoryPerInstance is the growth of the members' mean resident memory,
// from the last sample before the registry's first registration to its
// fullest while it lived, over the instances registered.
func memoryPerInstance(nodes []results.NodeResources, rep discovery.Report) *float64 {
	if rep.Registered == 0 || len(nodes) == 0 {
		return nil
	}
	mean := func(at func(results.ResourcePoint) bool) (float64, bool) {
		var sum float64
		var n int
		for _, nd := range nodes {
			var last *results.ResourcePoint
			for i := range nd.Points {
				if at(nd.Points[i]) {
					last = &nd.Points[i]
				}
			}
			if last != nil {
				sum += float64(last.RSSBytes)
				n++
			}
		}
		return sum / float64(max(n, 1)), n == len(nodes)
	}
	startMS := results.MS(rep.Started)
	before, ok := mean(func(p results.ResourcePoint) bool { return p.AtMS <= startMS })
	if !ok {
		return nil
	}
	var peak float64
	for _, nd := range nodes {
		for _, p := range nd.Points {
			if p.AtMS < results.MS(rep.Up) {
				continue
			}
			at := p.AtMS
			if m, ok := mean(func(q results.ResourcePoint) bool { return q.AtMS <= at }); ok {
				peak = max(peak, m)
			}
		}
	}
	if peak == 0 {
		return nil
	}
	v := (peak - before) / float64(rep.Registered) / 1024
	return &v
}
