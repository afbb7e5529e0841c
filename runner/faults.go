package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
)

const (
	// resolveTimeout bounds how long a fault that targets the leader waits
	// for one to be known (say, right after an earlier fault killed it).
	resolveTimeout = 10 * time.Second
	// resolveRetry is how often it looks again meanwhile.
	resolveRetry = 50 * time.Millisecond
	// statusTimeout bounds the fresh status poll a fault resolves against.
	statusTimeout = 500 * time.Millisecond
)

// faultDriver plays the plan's fault events. Each occurrence runs in its own
// goroutine, from injection to recovery, so that a slow injection (a graceful
// stop waits up to its grace period) never delays the timeline.
type faultDriver struct {
	c   *clusterRun
	inj *faults.Injector
	// ctx outlives every fault: scheduled restarts and disk writers run
	// under it. It ends with the run's own context (Ctrl-C), and teardown
	// then stops whatever is left.
	ctx context.Context
	wg  sync.WaitGroup

	mu   sync.Mutex
	byID map[string]*faultOcc
	all  []*faultOcc // in injection order
}

// faultOcc is one occurrence of a fault.
type faultOcc struct {
	spec    plan.FaultSpec
	phase   string
	recover chan struct{} // closed at the recover event (or at the end)
	once    sync.Once

	// Written by the occurrence's goroutine; read after wg.Wait.
	leader    int // the leader when the fault fired, 0 if none
	targets   []int
	watch     *metrics.Watch
	served    *metrics.Watch // the targets' first answers after the recovery
	active    *faults.Active // node and disk faults
	applied   time.Time      // zero if the fault never took effect
	undo      func(context.Context) error
	unchanged bool      // the fault found nothing to do
	done      time.Time // a transfer's request returned (see injection), set with applied
	recovered time.Time
	err       error
}

func (o *faultOcc) signalRecover() { o.once.Do(func() { close(o.recover) }) }

func newFaultDriver(ctx context.Context, c *clusterRun) *faultDriver {
	nodes := make([]faults.Node, len(c.nodes))
	for i, n := range c.nodes {
		nodes[i] = n
	}
	return &faultDriver{
		c:    c,
		inj:  faults.NewInjector(nodes, faults.Options{Logger: c.log}),
		ctx:  ctx,
		byID: map[string]*faultOcc{},
	}
}

// inject starts the occurrence ev describes and returns at once.
func (d *faultDriver) inject(ev plan.Event) {
	o := &faultOcc{spec: *ev.Fault, phase: ev.Phase, recover: make(chan struct{})}
	d.mu.Lock()
	d.byID[o.spec.ID] = o
	d.all = append(d.all, o)
	d.mu.Unlock()
	d.wg.Go(func() { d.play(o) })
}

// recoverAt signals the recovery of the occurrence ev names.
func (d *faultDriver) recoverAt(ev plan.Event) {
	d.mu.Lock()
	o := d.byID[ev.Fault.ID]
	d.mu.Unlock()
	if o != nil {
		o.signalRecover()
	}
}

// finish recovers every fault still in effect, including kills with no
// restart, so that the cluster is whole for the correctness checks, and
// waits for every occurrence to end.
func (d *faultDriver) finish(ctx context.Context) error {
	d.mu.Lock()
	for _, o := range d.all {
		o.signalRecover()
	}
	d.mu.Unlock()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("recover faults: %w", context.Cause(ctx))
	}
}

func (d *faultDriver) play(o *faultOcc) {
	log := d.c.log.With("fault", o.spec.ID, "kind", o.spec.Kind)
	o.targets, o.leader, o.err = d.resolve(o)
	if o.err != nil {
		log.Warn("fault not injected", "err", o.err)
		return
	}
	kind := faultKind(o.spec.Kind)
	takesDown := kind.TakesDown
	if takesDown {
		// Before the signal, so the node watcher never reports the exit as
		// unexpected.
		d.c.expectDown(o.targets, 1)
	}
	o.watch = d.c.coll.WatchWrites(time.Since(d.c.x.base))
	// Polled fast from before the fault acts: a transfer's new leader can
	// lead before the call that asked for it returns.
	d.c.leaders.faultActs()
	var in injection
	if in, o.err = injectors()[o.spec.Kind].inject(d, d.ctx, o.spec, o.targets); o.err == nil {
		o.applied, o.undo, o.active, o.unchanged, o.done = in.applied, in.undo, in.active, in.unchanged, in.done
		log.Info("fault injected", "nodes", o.targets)
	}
	if o.err != nil {
		o.watch.Stop()
		if takesDown {
			d.c.expectDown(o.targets, -1)
		}
		log.Warn("fault not injected", "err", o.err)
		return
	}
	o.watch.Fix(o.applied.Sub(d.c.x.base))
	select {
	case <-o.recover:
	case <-d.ctx.Done():
		return
	}
	if kind.Silences && len(o.targets) > 0 {
		o.served = d.c.coll.WatchServed(time.Since(d.c.x.base), o.targets)
	}
	d.c.leaders.faultActs()
	if err := o.undo(d.ctx); err != nil {
		o.err = err
		if o.served != nil {
			o.served.Stop()
			o.served = nil
		}
		log.Warn("fault not recovered", "err", err)
		return
	}
	o.recovered = time.Now()
	if o.served != nil {
		o.served.Fix(o.recovered.Sub(d.c.x.base))
	}
	if takesDown {
		d.c.expectDown(o.targets, -1)
	}
}

// resolve picks the occurrence's targets from what is known of the cluster
// now (see view).
// A target that needs the leader waits, up to resolveTimeout, for one to be
// known.
func (d *faultDriver) resolve(o *faultOcc) ([]int, int, error) {
	if o.spec.Target.Kind == "" {
		// A network or partition fault that names regions or groups.
		return nil, 0, nil
	}
	deadline := time.Now().Add(resolveTimeout)
	for {
		v := d.c.view(d.ctx)
		targets, err := faults.Resolve(o.spec.Target, v, occurrence(o.spec.ID))
		if err == nil && faultKind(o.spec.Kind).MovesLeader {
			if v.Leader == 0 {
				// A transfer needs a leader to hand over.
				err = faults.ErrNoLeader
			} else if len(targets) > 1 {
				// A region's nodes: the leadership goes to one of them.
				var to int
				to, err = faults.ToLead(targets, v)
				targets = []int{to}
			}
		}
		if err == nil {
			return targets, v.Leader, nil
		}
		if !errors.Is(err, faults.ErrNoLeader) || time.Now().After(deadline) {
			return nil, 0, err
		}
		select {
		case <-d.ctx.Done():
			return nil, 0, d.ctx.Err()
		case <-o.recover:
			return nil, 0, fmt.Errorf("%w until the fault's window ended", err)
		case <-time.After(resolveRetry):
		}
	}
}

// occurrence is the k of a repeated fault's ID "phase/name#k", 0 otherwise.
func occurrence(id string) int {
	_, k, ok := strings.Cut(id, "#")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(k)
	return n
}

// view is what the runner knows of the cluster now: which nodes run, and
// the leader. The leader by the watch's latest answers (at most
// pollInterval old, and not held back by a node that hangs, see
// leaderMerge.latest) is used when it names a running node, so that
// resolving costs no round trip
// and the fault lands on time; otherwise (no leader known, or it just went
// down) every node is asked afresh.
func (c *clusterRun) view(ctx context.Context) faults.View {
	v := faults.View{Nodes: len(c.nodes), Placement: c.spec.Placement, Up: make([]bool, len(c.nodes))}
	for i, n := range c.nodes {
		v.Up[i] = n.Running()
	}
	if cached := c.leaders.leader(); cached > 0 && v.Up[cached-1] {
		v.Leader = cached
		return v
	}
	var term uint64
	for _, s := range c.poller.Poll(ctx, statusTimeout) {
		if s.Err == nil && s.IsLeader && s.Term >= term && v.Up[s.Node-1] {
			v.Leader, term = s.Node, s.Term
		}
	}
	return v
}

// expectDown counts a fault in (delta 1) or out (-1) of the reasons each
// node may be down.
func (c *clusterRun) expectDown(nodes []int, delta int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.downs == nil {
		c.downs = map[int]downCount{}
	}
	for _, n := range nodes {
		d := c.downs[n]
		d.faults += delta
		d.changes++
		c.downs[n] = d
	}
}

// downCounts is every node's downCount now.
func (c *clusterRun) downCounts() map[int]downCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.downs)
}

// exitExpected reports whether node i, seen down by a look at the nodes
// that began when its downCount was before, went down on purpose: a fault
// held it down when the look began or holds it now, or one came and went
// in between. The last is a restart: it stops and starts the node, and is
// counted out, in the moment between the read of a node's state and this
// check (a CI run reported a restarted Consul member's exit as unexpected).
func (c *clusterRun) exitExpected(i int, before downCount) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.downs[i]
	return before.faults > 0 || now.faults > 0 || now.changes != before.changes
}

// failovers records every occurrence in res, with what the collector saw
// after it. It returns the errors of faults that could not be applied or
// undone.
func (d *faultDriver) failovers(res *results.Results) error {
	var errs []error
	for _, o := range d.all {
		f := results.Failover{
			FaultID:   o.spec.ID,
			Kind:      o.spec.Kind,
			PlannedMS: results.MS(o.spec.Start.D()),
		}
		for _, t := range o.targets {
			f.Targets = append(f.Targets, d.c.nodes[t-1].Name())
		}
		if o.err != nil {
			f.Error = o.err.Error()
			errs = append(errs, fmt.Errorf("phase %q: %w", o.phase, o.err))
		}
		if !o.applied.IsZero() {
			d.measure(&f, o)
		}
		if err := res.AddFailover(o.phase, f); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (d *faultDriver) measure(f *results.Failover, o *faultOcc) {
	c := d.c
	applied := o.applied.Sub(c.x.base)
	f.AppliedMS = msPtr(applied)
	f.LagMS = msPtr(applied - o.spec.Start.D())
	if !o.recovered.IsZero() && (o.spec.Duration > 0 || o.spec.Kind == plan.FaultRestart) {
		f.RecoveredMS = msPtr(o.recovered.Sub(c.x.base))
	}
	// A leader the fault took away, or moved away from, does not count as
	// the new one; one a transfer found leading already stayed, and does.
	excluded := 0
	kind := faultKind(o.spec.Kind)
	switch {
	case o.unchanged:
	case kind.MovesLeader, !kind.LeaderStays && slices.Contains(o.targets, o.leader):
		excluded = o.leader
	}
	dl, elected := c.coll.Leader().FirstLeaderAfter(applied, excluded)
	if elected {
		f.TimeToLeaderMS = msPtr(dl)
	}
	// Recovery is the first write the cluster accepted from a client that
	// asked after the fault; the outage is the longest stretch without a
	// completed write from the last one before the fault to that one.
	if first, ok := o.watch.First(); ok {
		last, ok := c.coll.LastWriteBefore(applied)
		if !ok {
			last = applied
		}
		to := first
		if kind.MovesLeader && !o.unchanged {
			// A transfer takes effect some way into the request: Consul's
			// leader went on committing writes for 10-40 ms after it was
			// asked, and the stretch its handover cost came after them.
			// So the outage is looked for up to the first write since
			// the new leader was seen, and recovery is its end. A new
			// leader never seen (killed at once, or the run ended) leaves
			// the request's return, by when the stores have handed over.
			over := o.done.Sub(c.x.base)
			if elected {
				over = applied + dl
			}
			if w, ok := c.coll.FirstWriteFrom(over); ok {
				to = max(to, w)
			}
		}
		start, end := c.coll.LongestWriteGap(last, to)
		if to != first {
			first = max(first, end)
		}
		f.TimeToWriteMS = msPtr(first - applied)
		f.Unavailable = &results.Window{StartMS: results.MS(start), EndMS: results.MS(end)}
	}
	if f.RecoveredMS != nil && o.served != nil {
		d.measureServed(f, o)
	}
	if o.active == nil {
		return
	}
	if s, ok := o.active.DiskStats(); ok {
		f.Disk = &results.DiskLoad{
			Writes: s.Writes, Bytes: s.Bytes,
			FsyncP50MS: results.MS(s.FsyncP50), FsyncP99MS: results.MS(s.FsyncP99), FsyncMaxMS: results.MS(s.FsyncMax),
			ThrottleBPS: s.ThrottleBPS, ThrottledBytes: s.ThrottledBytes,
		}
		if s.ThrottleBPS > 0 && s.ThrottledBytes == 0 {
			f.Disk.ThrottleNote = "throttle not effective: no write was charged to the throttled nodes (cgroup v1 charges only writes a process submits itself, not page-cache writeback)"
		}
	}
}

// measureServed records when each target answered clients again after
// the fault was undone. A target that answered no client before the fault
// (no workload sends to it, or its store's client cannot tell) is left
// out: its silence after says nothing.
func (d *faultDriver) measureServed(f *results.Failover, o *faultOcc) {
	c := d.c
	recovered := o.recovered.Sub(c.x.base)
	for _, t := range o.targets {
		if !c.coll.ServedBefore(t, o.applied.Sub(c.x.base)) {
			continue
		}
		s := results.NodeServed{Node: c.nodes[t-1].Name()}
		if first, ok := o.served.FirstServed(t); ok {
			s.TimeToServeMS = msPtr(first - recovered)
		}
		f.Served = append(f.Served, s)
	}
}

func msPtr(d time.Duration) *float64 {
	v := results.MS(d)
	return &v
}
