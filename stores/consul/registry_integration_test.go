//go:build linux

package consul

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

// listing is one listing a watcher reported, and when.
type listing struct {
	at   time.Time
	keys []string
	rev  int64
}

// watchLog is what one watcher learned.
type watchLog struct {
	mu       sync.Mutex
	listings []listing
	errs     []error
}

func (w *watchLog) record(ev stores.WatchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev.Err != nil {
		w.errs = append(w.errs, ev.Err)
		return
	}
	w.listings = append(w.listings, listing{time.Now(), ev.Keys, ev.Revision})
}

// latest is the last listing, ok false before the first.
func (w *watchLog) latest() (listing, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.listings) == 0 {
		return listing{}, false
	}
	return w.listings[len(w.listings)-1], true
}

// firstWithout is the first listing after since that lacks key.
func (w *watchLog) firstWithout(since time.Time, key string) (listing, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.listings {
		if l.at.After(since) && !slices.Contains(l.keys, key) {
			return l, true
		}
	}
	return listing{}, false
}

// waitListing waits until every watcher's latest listing is want.
func waitListing(t *testing.T, ctx context.Context, logs []*watchLog, within time.Duration, what string, want []string) {
	t.Helper()
	storetest.WaitFor(t, ctx, within, what, func() string {
		for i, w := range logs {
			l, ok := w.latest()
			if !ok {
				return fmt.Sprintf("watcher %d has no listing yet", i)
			}
			if !slices.Equal(l.keys, want) {
				return fmt.Sprintf("watcher %d lists %q at %d, want %q", i, l.keys, l.rev, want)
			}
		}
		return ""
	})
}

func TestRegistryNextIndex(t *testing.T) {
	for _, c := range []struct{ prev, last, want uint64 }{
		{0, 7, 7},   // the first listing
		{7, 7, 7},   // a wait that timed out
		{7, 9, 9},   // a change
		{9, 4, 0},   // backwards: start over
		{0, 0, 1},   // never block on 0
		{5, 0, 0},   // backwards to 0 first starts over
		{0, 12, 12}, // the listing after starting over
	} {
		if got := nextIndex(c.prev, c.last); got != c.want {
			t.Errorf("nextIndex(%d, %d) = %d, want %d", c.prev, c.last, got, c.want)
		}
	}
	if got := callerKeys("/p/", []string{"p/b", "p/a"}); !slices.Equal(got, []string{"/p/a", "/p/b"}) {
		t.Errorf("callerKeys with a leading slash: %q", got)
	}
	if got := callerKeys("p/", nil); got == nil || len(got) != 0 {
		t.Errorf("callerKeys of no keys: %#v, want an empty listing", got)
	}
}

func TestRegistryIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: builds consul " + integrationVersion() + " on first use and runs a 3-server cluster for about a minute")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 35*time.Minute)
	defer cancel()
	version := integrationVersion()
	bin := install(t, ctx, version)
	spec := plan.ClusterSpec{Name: "reg", Store: plan.StoreConsul, Version: version, Nodes: 3, Consul: &plan.ConsulKnobs{RaftMultiplier: 1}}
	c := startCluster(t, bin, spec, loopbackEndpoints(t, spec.Nodes))
	if err := WaitReady(ctx, c.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	admin, err := newAPIClient(c.eps[0].ClientAddr, newTransport(nil, 1))
	if err != nil {
		t.Fatal(err)
	}

	ttl, why := MinTTL(spec)
	t.Logf("MinTTL: %s: %s", ttl, why)
	const prefix = "scenario/reg/svc/"
	reg, err := NewRegistry(ctx, stores.RegistryOptions{
		ClientOptions: stores.ClientOptions{Endpoints: c.eps, Conns: 2, Timeout: 5 * time.Second},
		Prefix:        prefix, TTL: ttl, Watchers: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if s := reg.Semantics(); s != stores.WatchSnapshots {
		t.Errorf("Semantics = %q", s)
	}

	logs := []*watchLog{{}, {}}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var wg sync.WaitGroup
	for i, w := range logs {
		wg.Go(func() {
			if err := reg.Watch(wctx, i, prefix, w.record); err != nil {
				t.Errorf("watcher %d: Watch returned %v", i, err)
			}
		})
	}
	waitListing(t, ctx, logs, 15*time.Second, "the first, empty listing", []string{})

	if _, err := reg.Register(ctx, "elsewhere/x", nil); err == nil {
		t.Error("Register of a key outside the prefix succeeded")
	}

	var keys []string
	var insts []stores.Instance
	for i := range 5 {
		key := fmt.Sprintf("%si%d", prefix, i)
		in, err := reg.Register(ctx, key, []byte(fmt.Sprintf("10.0.0.%d:80", i)))
		if err != nil {
			t.Fatalf("Register %s: %v", key, err)
		}
		defer in.Close()
		keys, insts = append(keys, key), append(insts, in)
	}
	waitListing(t, ctx, logs, 15*time.Second, "the 5 registrations", keys)

	// The sessions are what the recipe asked for: TTL-only, deleting
	// their key, with the shortest lock-delay the api can send.
	for i, in := range insts {
		id := in.(*instance).session
		info, _, err := admin.Session().Info(id, nil)
		if err != nil || info == nil {
			t.Fatalf("session of %s: %v, %v", keys[i], info, err)
		}
		if info.TTL != "10s" || info.Behavior != "delete" || info.LockDelay != time.Millisecond || len(info.NodeChecks)+len(info.ServiceChecks)+len(info.Checks) != 0 || info.Name != keys[i] {
			t.Errorf("session of %s: %+v", keys[i], info)
		}
		pair, _, err := admin.KV().Get(keys[i], nil)
		if err != nil || pair == nil || pair.Session != id || string(pair.Value) != fmt.Sprintf("10.0.0.%d:80", i) {
			t.Errorf("key %s: %+v, %v", keys[i], pair, err)
		}
	}

	// A second registration of a held key fails, and leaves nothing.
	if _, err := reg.Register(ctx, keys[2], []byte("dup")); err == nil {
		t.Error("a second Register of a held key succeeded")
	} else {
		t.Logf("second Register of %s: %v", keys[2], err)
	}

	for i, in := range insts {
		if expired, err := in.KeepAlive(ctx); err != nil || expired {
			t.Errorf("KeepAlive %s: expired %v, %v", keys[i], expired, err)
		}
	}

	// Goodbye: the key goes with the session.
	if err := insts[0].Deregister(ctx); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	waitListing(t, ctx, logs, 15*time.Second, "the deregistration", keys[1:])
	if expired, err := insts[0].KeepAlive(ctx); err != nil || !expired {
		t.Errorf("KeepAlive on a destroyed session: expired %v, %v; want expired", expired, err)
	}

	// Silence: the others heartbeat every 3s, instance 1 stops.
	for i, in := range insts[1:] {
		if expired, err := in.KeepAlive(ctx); err != nil || expired {
			t.Fatalf("KeepAlive %s: expired %v, %v", keys[i+1], expired, err)
		}
	}
	vanished := time.Now()
	insts[1].Vanish()
	if _, err := insts[1].KeepAlive(ctx); err == nil {
		t.Error("KeepAlive after Vanish sent a heartbeat")
	}
	hbCtx, stopHB := context.WithCancel(ctx)
	var hb sync.WaitGroup
	hb.Go(func() {
		tick := time.NewTicker(3 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-tick.C:
			}
			for i, in := range insts[2:] {
				if expired, err := in.KeepAlive(hbCtx); hbCtx.Err() == nil && (err != nil || expired) {
					t.Errorf("heartbeat of %s: expired %v, %v", keys[i+2], expired, err)
				}
			}
		}
	})
	waitListing(t, ctx, logs, 2*ttl+5*time.Second, "the vanished instance's expiry", keys[2:])
	for i, w := range logs {
		l, ok := w.firstWithout(vanished, keys[1])
		if !ok {
			t.Fatalf("watcher %d: no listing without %s", i, keys[1])
		}
		took := l.at.Sub(vanished)
		t.Logf("watcher %d saw %s go %s after its last heartbeat (TTL %s, %.2f x TTL), at index %d",
			i, keys[1], took.Round(time.Millisecond), ttl, took.Seconds()/ttl.Seconds(), l.rev)
		// Consul's promise: not before the TTL.
		if took < ttl {
			t.Errorf("watcher %d: %s expired %s after its last heartbeat, before its TTL %s", i, keys[1], took, ttl)
		}
	}

	// The heartbeats kept the others through the wait.
	list, err := reg.List(ctx, prefix)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if !slices.Equal(list, keys[2:]) {
		t.Errorf("List = %q, want %q", list, keys[2:])
	}
	for i, w := range logs {
		if l, _ := w.latest(); !slices.Equal(l.keys, list) {
			t.Errorf("watcher %d ends with %q, List says %q", i, l.keys, list)
		}
	}
	stopHB()
	hb.Wait()

	for _, in := range insts[2:] {
		if err := in.Deregister(ctx); err != nil {
			t.Errorf("Deregister: %v", err)
		}
	}
	waitListing(t, ctx, logs, 15*time.Second, "every deregistration", []string{})
	stopWatch()
	wg.Wait()

	for i, w := range logs {
		w.mu.Lock()
		var prev int64
		for _, l := range w.listings {
			if l.rev < prev {
				t.Errorf("watcher %d: listing at index %d after one at %d", i, l.rev, prev)
			}
			prev = l.rev
		}
		for _, err := range w.errs {
			t.Errorf("watcher %d: %v", i, err)
		}
		t.Logf("watcher %d: %d listings, %d errors", i, len(w.listings), len(w.errs))
		w.mu.Unlock()
	}
}
