package discovery

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/stores"
)

// fakeRegistry is an in-memory store with etcd's watch model and leases
// that expire a TTL after their last keepalive. dropNth, when set, loses
// the nth event sent to watcher 1: a planted broken promise.
type fakeRegistry struct {
	ttl     time.Duration
	dropNth int

	mu    sync.Mutex
	rev   int64
	keys  map[string]*fakeInstance
	subs  map[int]chan stores.WatchEvent
	sent  map[int]int
	close chan struct{}
}

type fakeInstance struct {
	r        *fakeRegistry
	key      string
	deadline time.Time
	gone     bool
}

func newFake(ttl time.Duration) *fakeRegistry {
	r := &fakeRegistry{ttl: ttl, keys: map[string]*fakeInstance{}, subs: map[int]chan stores.WatchEvent{},
		sent: map[int]int{}, close: make(chan struct{})}
	go r.expire()
	return r
}

func (r *fakeRegistry) expire() {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.close:
			return
		case now := <-t.C:
			r.mu.Lock()
			for k, in := range r.keys {
				if now.After(in.deadline) {
					r.remove(k)
				}
			}
			r.mu.Unlock()
		}
	}
}

// publish sends ev to every watcher. r.mu must be held.
func (r *fakeRegistry) publish(ev stores.WatchEvent) {
	for w, ch := range r.subs {
		r.sent[w]++
		if w == 1 && r.sent[w] == r.dropNth {
			continue
		}
		ch <- ev
	}
}

func (r *fakeRegistry) remove(key string) {
	in := r.keys[key]
	if in == nil {
		return
	}
	in.gone = true
	delete(r.keys, key)
	r.rev++
	r.publish(stores.WatchEvent{Kind: stores.WatchDelete, Key: key, Revision: r.rev})
}

func (r *fakeRegistry) Register(_ context.Context, key string, _ []byte) (stores.Instance, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := &fakeInstance{r: r, key: key, deadline: time.Now().Add(r.ttl)}
	r.keys[key] = in
	r.rev++
	r.publish(stores.WatchEvent{Kind: stores.WatchPut, Key: key, Revision: r.rev})
	return in, nil
}

func (r *fakeRegistry) Watch(ctx context.Context, watcher int, _ string, fn func(stores.WatchEvent)) error {
	ch := make(chan stores.WatchEvent, 1<<16)
	r.mu.Lock()
	var keys []string
	for k := range r.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	list := stores.WatchEvent{Kind: stores.WatchList, Keys: keys, Revision: r.rev}
	r.subs[watcher] = ch
	r.mu.Unlock()
	fn(list)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-ch:
			fn(ev)
		}
	}
}

func (r *fakeRegistry) List(context.Context, string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	for k := range r.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

func (r *fakeRegistry) Semantics() stores.WatchSemantics { return stores.WatchEvents }
func (r *fakeRegistry) Close() error                     { close(r.close); return nil }

func (in *fakeInstance) KeepAlive(context.Context) (bool, error) {
	in.r.mu.Lock()
	defer in.r.mu.Unlock()
	if in.gone {
		return true, nil
	}
	in.deadline = time.Now().Add(in.r.ttl)
	return false, nil
}

func (in *fakeInstance) Deregister(context.Context) error {
	in.r.mu.Lock()
	defer in.r.mu.Unlock()
	if in.gone {
		return errors.New("no such lease")
	}
	in.r.remove(in.key)
	return nil
}

func (in *fakeInstance) Vanish() {}
func (in *fakeInstance) Close()  {}

// samples collects what the engine records.
type samples struct {
	mu  sync.Mutex
	all []metrics.Sample
}

func (s *samples) Record(x metrics.Sample) {
	s.mu.Lock()
	s.all = append(s.all, x)
	s.mu.Unlock()
}

func (s *samples) of(op string) []metrics.Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []metrics.Sample
	for _, x := range s.all {
		if x.Op == op {
			out = append(out, x)
		}
	}
	return out
}

// play runs a registry of 10 instances on reg through two loads, with two
// of them vanishing in the second.
func play(t *testing.T, reg *fakeRegistry) (Report, *samples) {
	t.Helper()
	ttl := 150 * time.Millisecond
	spec := plan.WorkloadSpec{Name: "svc", KeyPrefix: "/svc/", Clients: 4, ValueSize: 64,
		Registry: &plan.RegistrySpec{Instances: 10, TTL: plan.Duration(ttl), Heartbeat: plan.Duration(30 * time.Millisecond), Watchers: 2, Churn: 40}}
	sink := &samples{}
	base := time.Now()
	load := plan.LoadSpec{Workload: "svc", Mode: plan.LoadClosed, Duration: plan.Duration(400 * time.Millisecond)}
	e, err := New(spec, Config{Registry: reg, Classify: func(error) string { return plan.ErrOther }, Sink: sink,
		Base: base, End: 800 * time.Millisecond, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.Run(ctx, load, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		_, err := e.Run(ctx, load, 400*time.Millisecond)
		done <- err
	}()
	time.Sleep(time.Until(base.Add(450 * time.Millisecond)))
	_, undo, err := e.Vanish(plan.VanishSpec{Workload: "svc", Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	return e.Report(), sink
}

func TestEngine(t *testing.T) {
	reg := newFake(150 * time.Millisecond)
	defer reg.Close()
	rep, s := play(t, reg)
	if rep.Registered != 10 || rep.RegistrationsPerS <= 0 {
		t.Errorf("registered %d at %.0f/s", rep.Registered, rep.RegistrationsPerS)
	}
	if rep.Vanished != 2 || rep.Detected != 2 {
		t.Errorf("vanished %d, detected %d; want 2 and 2", rep.Vanished, rep.Detected)
	}
	left, _ := reg.List(context.Background(), "")
	if !rep.Watch.OK() || rep.Watch.Watchers != 2 || rep.Final != 0 {
		t.Logf("left in the store: %v", left)
		t.Errorf("watch verdict %+v, final %d; want kept promises and an empty registry", rep.Watch, rep.Final)
	}
	for _, op := range []string{plan.OpRegister, plan.OpKeepalive, plan.OpDeregister, plan.OpNotify, plan.OpFanout} {
		if len(s.of(op)) == 0 {
			t.Errorf("no %s sample", op)
		}
	}
	if n, want := len(s.of(plan.OpFanout)), len(s.of(plan.OpRegister)); n != want {
		t.Errorf("%d fan-outs for %d registrations: every registration is told to both watchers", n, want)
	}
	for _, x := range s.of(plan.OpDetect) {
		// From its last heartbeat, a vanished instance lasts its TTL.
		if raw := x.End - x.Start; raw < 150*time.Millisecond || x.Start > x.Intended {
			t.Errorf("detected %v after the last heartbeat (silent at %v, last beat %v); want at least the TTL", raw, x.Intended, x.Start)
		}
	}
	for _, x := range s.all {
		if x.Intended > 800*time.Millisecond {
			t.Errorf("%s sample intended at %v, after the registry's last load", x.Op, x.Intended)
		}
	}
}

func TestEngineCatchesADroppedEvent(t *testing.T) {
	reg := newFake(150 * time.Millisecond)
	reg.dropNth = 5
	defer reg.Close()
	rep, _ := play(t, reg)
	if rep.Watch.OK() {
		t.Fatalf("watcher 1 lost an event, but the verdict is %+v", rep.Watch)
	}
	for _, v := range rep.Watch.Violations {
		if v.Watcher != 1 {
			t.Errorf("violation blamed on watcher %d: %+v", v.Watcher, v)
		}
	}
}
