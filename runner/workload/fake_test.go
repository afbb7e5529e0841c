package workload

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/stores"
)

var errInjected = errors.New("injected failure")

// fakeStore is an in-memory stores.Client. Its settings are fixed before a
// run starts, so reading them needs no lock.
type fakeStore struct {
	latency   time.Duration
	failEvery int64  // every failEvery-th op fails with failClass
	failClass string // class of injected failures
	// The first op on every failFirstEvery-th key to be used fails with
	// failClass; later ops on it pass. Unlike failEvery, which keys fail
	// does not depend on how concurrent workers interleave.
	failFirstEvery int64
	// Ops that start in [stallFrom, stallTo) block until stallTo (or their
	// deadline), like a store that lost its leader.
	stallFrom, stallTo time.Time

	calls atomic.Int64
	mu    sync.Mutex
	data  map[string][]byte
	used  map[string]bool // keys seen, kept only with failFirstEvery
}

func newFakeStore(latency time.Duration) *fakeStore {
	return &fakeStore{latency: latency, data: map[string][]byte{}, used: map[string]bool{}}
}

func (f *fakeStore) Do(ctx context.Context, op stores.Op) stores.Result {
	n := f.calls.Add(1)
	delay := f.latency
	if now := time.Now(); !f.stallFrom.IsZero() && !now.Before(f.stallFrom) && now.Before(f.stallTo) {
		delay = f.stallTo.Sub(now)
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return stores.Result{Err: ctx.Err(), Class: plan.ErrTimeout}
		}
	}
	if f.failEvery > 0 && n%f.failEvery == 0 {
		return stores.Result{Err: errInjected, Class: f.failClass}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failFirstEvery > 0 && !f.used[op.Key] {
		f.used[op.Key] = true
		if int64(len(f.used))%f.failFirstEvery == 0 {
			return stores.Result{Err: errInjected, Class: f.failClass}
		}
	}
	switch op.Kind {
	case plan.OpPut, plan.OpTxn:
		f.data[op.Key] = op.Value
	case plan.OpDelete:
		delete(f.data, op.Key)
	case plan.OpGet:
		v, ok := f.data[op.Key]
		return stores.Result{Found: ok, Value: v}
	}
	return stores.Result{}
}

func (f *fakeStore) Close() error { return nil }

func (f *fakeStore) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.data)
}

// collector hands each worker its own sink and merges them after a run.
type collector struct {
	mu    sync.Mutex
	sinks []*sliceSink
}

type sliceSink struct{ samples []metrics.Sample }

func (s *sliceSink) Record(x metrics.Sample) { s.samples = append(s.samples, x) }

func (c *collector) newSink() metrics.Sink {
	s := &sliceSink{}
	c.mu.Lock()
	c.sinks = append(c.sinks, s)
	c.mu.Unlock()
	return s
}

// samples returns every sample recorded, by intended time. Call it only
// after Run returned.
func (c *collector) samples() []metrics.Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	var all []metrics.Sample
	for _, s := range c.sinks {
		all = append(all, s.samples...)
	}
	slices.SortStableFunc(all, func(a, b metrics.Sample) int { return int(a.Intended - b.Intended) })
	return all
}

// historyLog collects HistoryOps from many goroutines.
type historyLog struct {
	mu  sync.Mutex
	ops []HistoryOp
}

func (h *historyLog) add(op HistoryOp) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

func (h *historyLog) all() []HistoryOp {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}
