// Package faults injects node and disk faults into running store nodes.
//
// Resolve turns a plan's target into node indexes from what the runner knows
// of the cluster at that moment; an Injector applies one plan.FaultSpec to
// those nodes and returns an Active fault, which Recover ends. The package
// neither schedules nor times faults: the runner walks the plan and calls
// Inject at a fault's Start and Recover at its recover event.
package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/coordlab/scenario/plan"
)

// Node is one store node as faults needs it; *process.Node satisfies it.
type Node interface {
	Name() string
	DataDir() string
	Kill() error
	Stop(ctx context.Context, grace time.Duration) error
	Restart(ctx context.Context) error
	Pause() error
	Resume() error
	Running() bool
	PID() int
}

// DefaultStopGrace is how long a stop fault waits between SIGTERM and
// SIGKILL when Options.StopGrace is 0.
const DefaultStopGrace = 5 * time.Second

// Options configure an Injector.
type Options struct {
	// StopGrace bounds a graceful stop; 0 means DefaultStopGrace.
	StopGrace time.Duration
	// Logger receives injections and recoveries; nil discards them.
	Logger *slog.Logger
}

// UnsupportedError is returned by Inject for a fault kind this package
// cannot apply yet. Match it with errors.As.
type UnsupportedError struct {
	Kind string
}

func (e UnsupportedError) Error() string {
	return fmt.Sprintf("%s faults need the network fabric, not implemented yet", e.Kind)
}

// Injector applies faults to the nodes of one cluster. It holds no state of
// its own between faults, so concurrent Injects on disjoint nodes are fine.
type Injector struct {
	nodes []Node
	grace time.Duration
	log   *slog.Logger
}

// NewInjector returns an Injector for nodes; nodes[i] is node i+1.
func NewInjector(nodes []Node, opts Options) *Injector {
	grace := opts.StopGrace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Injector{nodes: slices.Clone(nodes), grace: grace, log: log}
}

// Inject applies f to targets (1-based, as Resolve returns them) and returns
// once the fault has taken effect:
//
//   - kill: SIGKILL, waiting until the processes are reaped.
//   - stop: SIGTERM, SIGKILL after StopGrace.
//   - restart: as stop, then start again RestartAfter later (at once if 0).
//   - pause: SIGSTOP. The pause lasts until Recover, which the runner calls
//     at f.Start+f.Duration; Inject does not time it.
//   - disk: f.Disk.Parallelism writers per node, see DiskStats. They too run
//     until Recover.
//
// For kill and stop, f.RestartAfter > 0 schedules a start of the nodes that
// long after they went down. Scheduled restarts and disk writers run under
// ctx: it must last as long as the fault, and ending it abandons them.
//
// If the fault cannot be applied to every target, Inject undoes what it did
// (as Recover would) and returns an error and no Active. Network and
// partition faults return an UnsupportedError.
func (in *Injector) Inject(ctx context.Context, f plan.FaultSpec, targets []int) (*Active, error) {
	a, err := in.inject(ctx, f, targets)
	if err != nil {
		return nil, fmt.Errorf("inject fault %s (%s): %w", f.ID, f.Kind, err)
	}
	in.log.Info("fault injected", "fault", f.ID, "kind", f.Kind, "nodes", a.nodeNames())
	return a, nil
}

// kind is how one kind of node or disk fault is applied to its targets'
// nodes and undone. apply sets a.appliedAt once the fault has taken effect.
type kind struct {
	apply func(ctx context.Context, a *Active) error
	undo  func(ctx context.Context, a *Active) error
}

// kinds lists the fault kinds an Injector applies; network and partition
// faults act on the network fabric instead.
func kinds() map[string]kind {
	down := kind{apply: applyDown, undo: undoDown}
	return map[string]kind{
		plan.FaultKill:    down,
		plan.FaultStop:    down,
		plan.FaultRestart: down,
		plan.FaultPause:   {apply: applyPause, undo: undoPause},
		plan.FaultDisk:    {apply: applyDisk, undo: undoDisk},
	}
}

// Kinds lists the fault kinds an Injector applies, sorted.
func Kinds() []string {
	return slices.Sorted(maps.Keys(kinds()))
}

func (in *Injector) inject(ctx context.Context, f plan.FaultSpec, targets []int) (*Active, error) {
	k, ok := kinds()[f.Kind]
	switch {
	case f.Kind == plan.FaultNetwork || f.Kind == plan.FaultPartition:
		return nil, UnsupportedError{Kind: f.Kind}
	case !ok:
		return nil, fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	if len(targets) == 0 {
		return nil, errors.New("no target nodes")
	}
	targets = slices.Clone(targets)
	slices.Sort(targets)
	targets = slices.Compact(targets)
	a := &Active{in: in, kind: k, fault: f, targets: targets}
	for _, t := range targets {
		if t < 1 || t > len(in.nodes) {
			return nil, fmt.Errorf("target node %d out of range 1..%d", t, len(in.nodes))
		}
		a.nodes = append(a.nodes, in.nodes[t-1])
	}
	if err := k.apply(ctx, a); err != nil {
		// Leave no half-applied fault behind: the caller gets no Active to
		// recover, so the nodes must be back as they were.
		if rerr := a.Recover(ctx); rerr != nil {
			err = errors.Join(err, fmt.Errorf("undo: %w", rerr))
		}
		return nil, err
	}
	return a, nil
}

// applyDown kills or stops the nodes (restart: and starts them again at
// once), scheduling their restart when the fault asks for one.
func applyDown(ctx context.Context, a *Active) error {
	f := a.fault
	if f.Kind == plan.FaultKill {
		err := a.each(func(n Node) error { return n.Kill() })
		a.appliedAt = time.Now()
		if err == nil && f.RestartAfter > 0 {
			a.scheduleRestart(ctx, f.RestartAfter.D())
		}
		return err
	}
	err := a.each(func(n Node) error { return n.Stop(ctx, a.in.grace) })
	a.appliedAt = time.Now()
	switch {
	case err != nil:
		return err
	case f.RestartAfter > 0:
		a.scheduleRestart(ctx, f.RestartAfter.D())
	case f.Kind == plan.FaultRestart:
		return a.startDown(ctx)
	}
	return nil
}

// undoDown starts the nodes again. A restart fault's scheduled start is
// awaited, since it is the fault's own end and the plan recovers a restart
// right after injecting it; a kill or stop's scheduled restart is cancelled
// and the nodes started now.
func undoDown(ctx context.Context, a *Active) error {
	if a.done != nil {
		if a.fault.Kind != plan.FaultRestart {
			a.cancel()
		}
		select {
		case <-a.done:
		case <-ctx.Done():
			return fmt.Errorf("wait for scheduled restart: %w", ctx.Err())
		}
	}
	return a.startDown(ctx)
}

func applyPause(_ context.Context, a *Active) error {
	err := a.each(func(n Node) error { return n.Pause() })
	a.appliedAt = time.Now()
	return err
}

func undoPause(_ context.Context, a *Active) error {
	return a.each(func(n Node) error {
		// A node that died while paused has nothing to resume.
		if !n.Running() {
			return nil
		}
		return n.Resume()
	})
}

// applyDisk throttles the nodes' writes and starts competing writers, as
// the fault asks.
func applyDisk(ctx context.Context, a *Active) error {
	f := a.fault
	log := a.in.log.With("fault", f.ID)
	var err error
	switch {
	case f.Disk == nil:
		err = errors.New("disk fault without disk settings")
	case f.Disk.Throttle <= 0 && f.Disk.Parallelism == 0:
		err = errors.New("disk fault with neither competing writers nor a throttle")
	}
	if err == nil && f.Disk.Throttle > 0 {
		a.throttles, err = startThrottle(a.nodes, f.Disk.Throttle, log)
	}
	if err == nil && (f.Disk.Parallelism != 0 || f.Disk.Throttle <= 0) {
		a.disk, err = startDisk(ctx, f.Disk, a.nodes, log)
	}
	a.appliedAt = time.Now()
	return err
}

// undoDisk lifts the throttle and stops the writers.
func undoDisk(ctx context.Context, a *Active) error {
	var errs []error
	if a.throttles != nil {
		a.throttled = a.throttledLocked()
		for _, t := range a.throttles {
			if err := t.stop(); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			a.throttles = nil
		}
	}
	if a.disk != nil {
		errs = append(errs, a.disk.stop(ctx))
	}
	return errors.Join(errs...)
}

// Active is a fault that took effect. Its methods are safe for concurrent
// use.
type Active struct {
	in        *Injector
	kind      kind
	fault     plan.FaultSpec
	targets   []int
	nodes     []Node // nodes[i] is node targets[i]
	appliedAt time.Time
	disk      *diskLoad   // disk faults with competing writers
	throttles []*throttle // disk faults that throttle the nodes
	throttled int64       // bytes the throttled groups wrote, kept after recovery

	// A scheduled restart: cancel abandons it, done is closed when its
	// goroutine has returned. Nil when none was scheduled.
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex // serializes Recover
	recovered bool
}

// AppliedAt is the wall time at which the fault had taken effect on every
// target (for restart, when the nodes were down).
func (a *Active) AppliedAt() time.Time { return a.appliedAt }

// Targets are the faulted nodes, 1-based and sorted.
func (a *Active) Targets() []int { return slices.Clone(a.targets) }

// DiskStats reports what a disk fault's writers did so far, summed over
// every writer of every target; false for other kinds. It stays readable
// after Recover.
func (a *Active) DiskStats() (DiskStats, bool) {
	if a.fault.Disk == nil {
		return DiskStats{}, false
	}
	var s DiskStats
	if a.disk != nil {
		s = a.disk.stats()
	}
	if a.fault.Disk != nil && a.fault.Disk.Throttle > 0 {
		a.mu.Lock()
		s.ThrottleBPS, s.ThrottledBytes = a.fault.Disk.Throttle, a.throttledLocked()
		a.mu.Unlock()
	}
	return s, true
}

// throttledLocked sums what the throttled groups wrote. a.mu is held.
func (a *Active) throttledLocked() int64 {
	if a.throttles == nil {
		return a.throttled
	}
	var n int64
	for _, t := range a.throttles {
		n += t.written()
	}
	return n
}

// Recover ends the fault:
//
//   - kill, stop, restart: the nodes run again. A restart fault's scheduled
//     start is awaited, since it is the fault's own end and the plan
//     recovers a restart right after injecting it; a kill or stop's
//     scheduled restart is cancelled and the nodes started now.
//   - pause: the nodes are resumed.
//   - disk: the writers stop and their directories are removed.
//
// Recover returns once that is done, with no goroutine of the fault left.
// It is idempotent: after one call succeeded, more do nothing. After one
// failed (say ctx ended), another call tries again. A disk fault whose
// writers failed while it lasted is recovered but reports those errors, once.
func (a *Active) Recover(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.recovered {
		return nil
	}
	if err := a.kind.undo(ctx, a); err != nil {
		return fmt.Errorf("recover fault %s (%s): %w", a.fault.ID, a.fault.Kind, err)
	}
	a.recovered = true
	a.in.log.Info("fault recovered", "fault", a.fault.ID, "kind", a.fault.Kind, "nodes", a.nodeNames())
	if a.disk != nil {
		// Reported once, though the fault is over: a writer that died did
		// not load the disk for the whole window, and the results should
		// say so.
		if err := a.disk.err(); err != nil {
			return fmt.Errorf("fault %s: disk writers failed during the fault: %w", a.fault.ID, err)
		}
	}
	return nil
}

// scheduleRestart starts the nodes that are down after d, unless ctx ends or
// Recover cancels it first.
func (a *Active) scheduleRestart(ctx context.Context, d time.Duration) {
	ctx, a.cancel = context.WithCancel(ctx)
	a.done = make(chan struct{})
	go func() {
		defer close(a.done)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		// Recover tries again whatever failed here, so logging is enough.
		if err := a.startDown(ctx); err != nil && ctx.Err() == nil {
			a.in.log.Warn("scheduled restart failed", "fault", a.fault.ID, "err", err)
		}
	}()
}

// startDown restarts every target that is not running.
func (a *Active) startDown(ctx context.Context) error {
	return a.each(func(n Node) error {
		if n.Running() {
			return nil
		}
		return n.Restart(ctx)
	})
}

// each runs fn on every target at once, so that a fault on several nodes
// hits them together rather than one grace period after another. The
// errors come back in target order.
func (a *Active) each(fn func(Node) error) error {
	errs := make([]error, len(a.nodes))
	var wg sync.WaitGroup
	for i, n := range a.nodes {
		wg.Go(func() { errs[i] = fn(n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (a *Active) nodeNames() []string {
	names := make([]string, len(a.nodes))
	for i, n := range a.nodes {
		names[i] = n.Name()
	}
	return names
}
