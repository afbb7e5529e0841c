//go:build linux

package etcd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

func TestRegistryMinTTL(t *testing.T) {
	ms := func(d int) plan.Duration { return plan.Duration(time.Duration(d) * time.Millisecond) }
	for _, tc := range []struct {
		knobs *plan.EtcdKnobs
		want  time.Duration
	}{
		{nil, 2 * time.Second}, // 15 heartbeats of 100 ms
		{&plan.EtcdKnobs{}, 2 * time.Second},
		{&plan.EtcdKnobs{ElectionTimeout: ms(2000)}, 3 * time.Second},
		{&plan.EtcdKnobs{ElectionTimeout: ms(2100)}, 4 * time.Second},
		{&plan.EtcdKnobs{HeartbeatInterval: ms(50), ElectionTimeout: ms(500)}, time.Second},
		// 13 whole heartbeats, then 19 of them (1.9 s), not 3/2 x 1.35 s.
		{&plan.EtcdKnobs{ElectionTimeout: ms(1350)}, 2 * time.Second},
		{&plan.EtcdKnobs{HeartbeatInterval: ms(500), ElectionTimeout: ms(5000)}, 8 * time.Second},
	} {
		got, why := minTTL(plan.ClusterSpec{Etcd: tc.knobs})
		if got != tc.want || why == "" {
			t.Errorf("minTTL(%+v) = %s, %q; want %s", tc.knobs, got, why, tc.want)
		}
	}
	if _, why := minTTL(plan.ClusterSpec{}); !strings.Contains(why, "1.5s") {
		t.Errorf("minTTL's reason %q does not name the 1.5s it rounds up", why)
	}
}

// watchLog is what one watcher learned, with when.
type watchLog struct {
	mu     sync.Mutex
	events []stores.WatchEvent
	at     []time.Time
}

func (w *watchLog) add(ev stores.WatchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, ev)
	w.at = append(w.at, time.Now())
}

func (w *watchLog) snapshot() []stores.WatchEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// seen is when the watcher learned of kind on key, zero if it has not.
func (w *watchLog) seen(kind, key string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, ev := range w.events {
		if ev.Kind == kind && ev.Key == key {
			return w.at[i]
		}
	}
	return time.Time{}
}

// changes are the puts and deletes in order, as "put key@rev".
func changes(evs []stores.WatchEvent) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == stores.WatchPut || ev.Kind == stores.WatchDelete {
			out = append(out, fmt.Sprintf("%s %s@%d", ev.Kind, ev.Key, ev.Revision))
		}
	}
	return out
}

// view is the keys a watcher believes exist: its last listing, changed by
// what followed it. It also checks that revisions only grow.
func view(evs []stores.WatchEvent) ([]string, error) {
	keys := map[string]bool{}
	var last int64
	for _, ev := range evs {
		if ev.Err != nil {
			continue
		}
		if ev.Revision <= last && !(ev.Kind == stores.WatchList && ev.Revision == last) {
			return nil, fmt.Errorf("%s %s at revision %d after revision %d", ev.Kind, ev.Key, ev.Revision, last)
		}
		last = ev.Revision
		switch ev.Kind {
		case stores.WatchList:
			clear(keys)
			for _, k := range ev.Keys {
				keys[k] = true
			}
		case stores.WatchPut:
			keys[ev.Key] = true
		case stores.WatchDelete:
			delete(keys, ev.Key)
		}
	}
	return slices.Sorted(maps.Keys(keys)), nil
}

// cutter dials, and severs what it dialed while it is set.
type cutter struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (c *cutter) dial(ctx context.Context, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		conn.Close()
		return nil, errors.New("cut off by the test")
	}
	c.conns = append(c.conns, conn)
	return conn, nil
}

func (c *cutter) set(cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = cut
	if cut {
		for _, conn := range c.conns {
			conn.Close()
		}
		c.conns = nil
	}
}

func TestRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: runs a 3-node etcd cluster (and builds etcd " + integrationVersion() + " on first use)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := Install(ctx, InstallOptions{Version: integrationVersion(), Progress: logWriter{t}})
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	spec := plan.ClusterSpec{
		Name: "reg", Store: plan.StoreEtcd, Version: integrationVersion(), Nodes: 3,
		Etcd: &plan.EtcdKnobs{HeartbeatInterval: plan.Duration(100 * time.Millisecond), ElectionTimeout: plan.Duration(time.Second)},
	}
	c := startCluster(t, bin, spec)
	if err := WaitReady(ctx, c.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	const ttl = 2 * time.Second
	if least, _ := minTTL(spec); least > ttl {
		t.Fatalf("the cluster's minimum TTL %s exceeds the test's %s", least, ttl)
	}

	// The registry's connections go through cut, which the test can
	// sever; they retry a connection at least every second, so that they
	// are back soon after.
	cut := &cutter{}
	reconnect := plan.WorkloadSpec{Client: plan.ClientSpec{ReconnectBackoffMax: plan.Duration(time.Second)}}
	reg, err := NewRegistry(ctx, stores.RegistryOptions{
		ClientOptions: stores.ClientOptions{Endpoints: c.eps, Dial: cut.dial, Conns: 2, Timeout: 5 * time.Second, Workload: reconnect},
		Prefix:        "svc/", TTL: ttl, Watchers: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := reg.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := reg.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}()
	if s := reg.Semantics(); s != stores.WatchEvents {
		t.Errorf("Semantics() = %q", s)
	}

	wctx, stopWatching := context.WithCancel(ctx)
	logs := []*watchLog{{}, {}}
	watchErrs := make(chan error, len(logs))
	for i, l := range logs {
		go func() { watchErrs <- reg.Watch(wctx, i, "svc/", l.add) }()
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		stopWatching()
		for range logs {
			if err := <-watchErrs; err != nil {
				t.Errorf("Watch after its context ended: %v", err)
			}
		}
	}
	defer stop()
	// waitAll waits until every watcher's log satisfies cond.
	waitAll := func(within time.Duration, what string, cond func(evs []stores.WatchEvent) string) {
		t.Helper()
		storetest.WaitFor(t, ctx, within, what, func() string {
			for i, l := range logs {
				if why := cond(l.snapshot()); why != "" {
					return fmt.Sprintf("watcher %d: %s", i, why)
				}
			}
			return ""
		})
	}
	waitAll(30*time.Second, "first listing", func(evs []stores.WatchEvent) string {
		if len(evs) == 0 || evs[0].Kind != stores.WatchList || len(evs[0].Keys) != 0 || evs[0].Revision == 0 {
			return fmt.Sprintf("%+v", evs)
		}
		return ""
	})

	var insts []stores.Instance
	var keys []string
	for i := range 5 {
		key := fmt.Sprintf("svc/i%d", i)
		in, err := reg.Register(ctx, key, []byte(fmt.Sprintf("10.0.0.%d:80", i)))
		if err != nil {
			t.Fatalf("Register %s: %v", key, err)
		}
		defer in.Close()
		insts = append(insts, in)
		keys = append(keys, key)
	}
	waitAll(10*time.Second, "five puts", func(evs []stores.WatchEvent) string {
		if got, err := view(evs); err != nil || !slices.Equal(got, keys) {
			return fmt.Sprintf("view %v (%v) of %v", got, err, changes(evs))
		}
		return ""
	})
	for i, in := range insts {
		if expired, err := in.KeepAlive(ctx); expired || err != nil {
			t.Fatalf("KeepAlive of instance %d: expired %v, %v", i, expired, err)
		}
	}

	// Goodbye: the key goes with the lease, and the lease is gone.
	deregistered := time.Now()
	if err := insts[0].Deregister(ctx); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	waitAll(10*time.Second, "delete of the deregistered instance", func(evs []stores.WatchEvent) string {
		if got, _ := view(evs); slices.Contains(got, keys[0]) {
			return fmt.Sprintf("still sees %v", got)
		}
		return ""
	})
	t.Logf("deregistered instance's delete seen %s after the revoke was sent", logs[0].seen(stores.WatchDelete, keys[0]).Sub(deregistered).Round(time.Millisecond))
	if expired, err := insts[0].KeepAlive(ctx); !expired || err != nil {
		t.Errorf("KeepAlive of a revoked instance: expired %v, %v; want expired", expired, err)
	}

	// Silence: the vanished instance's lease expires while the others
	// are kept alive.
	if expired, err := insts[1].KeepAlive(ctx); expired || err != nil {
		t.Fatalf("last KeepAlive of instance 1: expired %v, %v", expired, err)
	}
	lastBeat := time.Now()
	insts[1].Vanish()
	if expired, err := insts[1].KeepAlive(ctx); expired || err != nil {
		t.Errorf("KeepAlive of a vanished instance: expired %v, %v; want nothing done", expired, err)
	}
	beating := make(chan struct{})
	beatErrs := make(chan error, 1)
	go func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-beating:
				beatErrs <- nil
				return
			case <-tick.C:
			}
			for i, in := range insts[2:] {
				if expired, err := in.KeepAlive(ctx); expired || err != nil {
					beatErrs <- fmt.Errorf("KeepAlive of instance %d: expired %v, %v", i+2, expired, err)
					return
				}
			}
		}
	}()
	waitAll(ttl+2*time.Second, "delete of the vanished instance", func(evs []stores.WatchEvent) string {
		if got, _ := view(evs); slices.Contains(got, keys[1]) {
			return fmt.Sprintf("still sees %v, %s after its last keepalive", got, time.Since(lastBeat).Round(time.Millisecond))
		}
		return ""
	})
	for i, l := range logs {
		t.Logf("watcher %d saw the vanished instance's delete %s after its last keepalive returned (TTL %s)", i, l.seen(stores.WatchDelete, keys[1]).Sub(lastBeat).Round(time.Millisecond), ttl)
	}
	if ttlResp, err := insts[1].(*instance).cli.TimeToLive(ctx, insts[1].(*instance).id); err != nil || ttlResp.TTL != -1 {
		t.Errorf("TimeToLive of the vanished instance's lease: %+v, %v; want -1 (gone)", ttlResp, err)
	}
	// Twice the TTL more of heartbeats shows they, not luck, keep the
	// others; once they stop, the others expire too.
	time.Sleep(2 * ttl)
	close(beating)
	if err := <-beatErrs; err != nil {
		t.Fatal(err)
	}
	waitAll(ttl+5*time.Second, "the others expire once their heartbeats stop", func(evs []stores.WatchEvent) string {
		if got, _ := view(evs); len(got) != 0 {
			return fmt.Sprintf("still sees %v", got)
		}
		return ""
	})

	// A member dies under the watchers (and perhaps under the leader's
	// lessor): they go on from where they were.
	c.kill(1)
	key := "svc/after-kill"
	var in stores.Instance
	storetest.WaitFor(t, ctx, 30*time.Second, "Register with node 1 dead", func() string {
		if in, err = reg.Register(ctx, key, []byte("x")); err != nil {
			return err.Error()
		}
		return ""
	})
	defer in.Close()
	waitAll(30*time.Second, "the put after the kill", func(evs []stores.WatchEvent) string {
		if got, err := view(evs); err != nil || !slices.Equal(got, []string{key}) {
			return fmt.Sprintf("view %v (%v)", got, err)
		}
		return ""
	})
	// On a busy machine the lease may have expired first; the key goes
	// either way.
	if err := in.Deregister(ctx); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Errorf("Deregister with node 1 dead: %v", err)
	}
	waitAll(30*time.Second, "the delete after the kill", func(evs []stores.WatchEvent) string {
		if got, err := view(evs); err != nil || len(got) != 0 {
			return fmt.Sprintf("view %v (%v)", got, err)
		}
		return ""
	})

	// Cut off, the watchers miss changes that a compaction then erases:
	// resuming from their next revision fails as compacted, and they list
	// again.
	before := make([]int, len(logs))
	for i, l := range logs {
		before[i] = len(l.snapshot())
	}
	cut.set(true)
	raw, err := clientv3.New(clientConfig(clientURLs(c.eps[1:]), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Put(ctx, "svc/during-cut", "y"); err != nil {
		t.Fatal(err)
	}
	resp, err := raw.Put(ctx, "elsewhere", "z")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	cut.set(false)
	waitAll(30*time.Second, "a new listing after the compaction", func(evs []stores.WatchEvent) string {
		if got, err := view(evs); err != nil || !slices.Equal(got, []string{"svc/during-cut"}) {
			return fmt.Sprintf("view %v (%v)", got, err)
		}
		return ""
	})
	for i, l := range logs {
		evs := l.snapshot()[before[i]:]
		if len(evs) < 2 || !errors.Is(evs[0].Err, rpctypes.ErrCompacted) || evs[len(evs)-1].Kind != stores.WatchList {
			t.Errorf("watcher %d after the compaction: %+v; want the compaction's error, then a listing", i, evs)
		}
	}

	var listed []string
	storetest.WaitFor(t, ctx, 30*time.Second, "List", func() string {
		listed, err = reg.List(ctx, "svc/")
		if err != nil {
			return err.Error()
		}
		return ""
	})
	stop()

	first := changes(logs[0].snapshot())
	for i, l := range logs {
		evs := l.snapshot()
		got, err := view(evs)
		if err != nil {
			t.Errorf("watcher %d: %v", i, err)
		}
		if !slices.Equal(got, listed) {
			t.Errorf("watcher %d sees %v; List says %v", i, got, listed)
		}
		if ch := changes(evs); !slices.Equal(ch, first) {
			t.Errorf("watcher %d saw changes %v; watcher 0 saw %v", i, ch, first)
		}
		for _, ev := range evs {
			if ev.Err != nil {
				t.Logf("watcher %d restarted after: %v", i, ev.Err)
			}
		}
	}
	t.Logf("changes seen: %v", first)
}
