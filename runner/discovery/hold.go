package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
)

// HoldEngine is a watches workload: at its first load it sets a watch on
// each of its keys, and holds them until its last load ends.
type HoldEngine struct {
	spec   plan.WorkloadSpec
	holder stores.WatchHolder
	base   time.Time
	end    time.Duration
	log    *slog.Logger

	once    sync.Once
	mu      sync.Mutex
	held    int
	setTook time.Duration
	err     error
}

// NewHold returns the engine of spec, which must have a watches block.
func NewHold(spec plan.WorkloadSpec, holder stores.WatchHolder, base time.Time, end time.Duration, log *slog.Logger) (*HoldEngine, error) {
	if spec.Watches == nil || holder == nil {
		return nil, fmt.Errorf("workload %q: not a watches workload, or no watch holder", spec.Name)
	}
	return &HoldEngine{spec: spec, holder: holder, base: base, end: end, log: log}, nil
}

// Keys are the workload's keys: its prefix and an index.
func (e *HoldEngine) Keys() []string {
	keys := make([]string, e.spec.Watches.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%sk%07d", e.spec.KeyPrefix, i)
	}
	return keys
}

// Run sets the watches at the first load; later loads only let them live.
func (e *HoldEngine) Run(ctx context.Context, l plan.LoadSpec, start time.Duration) (workload.Stats, error) {
	if err := sleepUntil(ctx, e.base.Add(start)); err != nil {
		return workload.Stats{}, nil
	}
	var err error
	e.once.Do(func() {
		t0 := time.Now()
		err = e.holder.Hold(ctx, e.Keys(), max(e.spec.Clients, 1))
		e.mu.Lock()
		e.setTook, e.err = time.Since(t0), err
		if err == nil {
			e.held = e.spec.Watches.Keys
		}
		e.mu.Unlock()
		e.log.Info("watches set", "workload", e.spec.Name, "keys", e.spec.Watches.Keys, "took", e.setTook, "err", err)
	})
	if err != nil && ctx.Err() == nil {
		return workload.Stats{}, fmt.Errorf("watches %q: %w", e.spec.Name, err)
	}
	_ = sleepUntil(ctx, e.base.Add(start+l.Duration.D()))
	return workload.Stats{}, nil
}

// Report says how many watches were held and how fast they were set.
func (e *HoldEngine) Report() (held int, took time.Duration, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held, e.setTook, e.err
}
