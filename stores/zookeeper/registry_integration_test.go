//go:build linux

package zookeeper

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

func TestRegistryMinTTL(t *testing.T) {
	for _, tc := range []struct {
		knobs *plan.ZooKeeperKnobs
		want  time.Duration
	}{
		{nil, 4 * time.Second},
		{&plan.ZooKeeperKnobs{}, 4 * time.Second},
		{&plan.ZooKeeperKnobs{TickTime: plan.Duration(500 * time.Millisecond)}, time.Second},
	} {
		got, why := Driver().MinTTL(plan.ClusterSpec{Store: plan.StoreZooKeeper, ZooKeeper: tc.knobs})
		if got != tc.want || !strings.Contains(why, "tick") {
			t.Errorf("MinTTL with %+v = %s, %q; want %s and a reason", tc.knobs, got, why, tc.want)
		}
	}
}

// listing is what a watcher was told, and when.
type listing struct {
	at   time.Time
	keys []string
	rev  int64
}

// regWatcher collects one watcher's listings.
type regWatcher struct {
	mu       sync.Mutex
	lists    []listing
	errs     []error
	problems []string
	done     chan error
}

func (w *regWatcher) event(ev stores.WatchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev.Err != nil {
		w.errs = append(w.errs, ev.Err)
		return
	}
	if ev.Kind != stores.WatchList {
		w.problems = append(w.problems, fmt.Sprintf("event of kind %q; want only %q", ev.Kind, stores.WatchList))
	}
	if n := len(w.lists); n > 0 && ev.Revision < w.lists[n-1].rev {
		w.problems = append(w.problems, fmt.Sprintf("revision %d after %d", ev.Revision, w.lists[n-1].rev))
	}
	if !slices.IsSorted(ev.Keys) {
		w.problems = append(w.problems, fmt.Sprintf("unsorted keys %v", ev.Keys))
	}
	w.lists = append(w.lists, listing{time.Now(), ev.Keys, ev.Revision})
}

func (w *regWatcher) last() listing {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lists) == 0 {
		return listing{rev: -1}
	}
	return w.lists[len(w.lists)-1]
}

// firstWithout is the time of the first listing after since that lacks
// key.
func (w *regWatcher) firstWithout(since time.Time, key string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.lists {
		if l.at.After(since) && !slices.Contains(l.keys, key) {
			return l.at, true
		}
	}
	return time.Time{}, false
}

// expiredInLogs reports whether a node logged that it expired session id
// (ZooKeeperServer.expire, on the leader): what a closeSession never logs.
func expiredInLogs(t *testing.T, e *testEnsemble, id int64) bool {
	t.Helper()
	line := fmt.Sprintf("Expiring session 0x%x,", id)
	for n := 1; n <= e.spec.Nodes; n++ {
		b, err := os.ReadFile(e.logPath(n))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), line) {
			return true
		}
	}
	return false
}

// closedByClient reports whether a node logged that the client of
// session id closed its connection (NIOServerCnxn, at WARN).
func closedByClient(t *testing.T, e *testEnsemble, id int64) bool {
	t.Helper()
	for n := 1; n <= e.spec.Nodes; n++ {
		b, err := os.ReadFile(e.logPath(n))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "probably closed the socket") && strings.Contains(line, fmt.Sprintf("session = 0x%x", id)) {
				return true
			}
		}
	}
	return false
}

// zkLoops counts go-zookeeper's connection loops, one per open session.
func zkLoops() int {
	buf := make([]byte, 4<<20)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), "zk.(*Conn).loop(")
}

func TestRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: runs a 3-node ZooKeeper ensemble")
	}
	inst, err := Find("", "")
	if err != nil {
		t.Skipf("ZooKeeper is not installed (apt-get install zookeeper): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The default tickTime (2 s), so the shortest TTL is 4 s. Eight
	// sessions from one address stay well under ZooKeeper's default of 60
	// connections per client address and server (the max_client_cnxns
	// knob at 0 keeps that default).
	spec := plan.ClusterSpec{
		Name: "reg", Store: plan.StoreZooKeeper, Version: inst.Version, Nodes: 3,
		ZooKeeper: &plan.ZooKeeperKnobs{JVMHeap: 128 << 20},
	}
	const ttl = 4 * time.Second
	if least, why := minTTL(spec); ttl < least {
		t.Fatalf("TTL %s below MinTTL %s: %s", ttl, least, why)
	}
	e := startEnsemble(t, inst, spec)
	if err := WaitReady(ctx, e.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}

	const prefix = "/scenario/reg/svc/"
	reg, err := Driver().NewRegistry(ctx, stores.RegistryOptions{
		ClientOptions: stores.ClientOptions{Endpoints: e.eps, Timeout: 5 * time.Second},
		Prefix:        prefix, TTL: ttl, Watchers: 2,
	})
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	defer reg.Close()
	if s := reg.Semantics(); s != stores.WatchSnapshots {
		t.Errorf("Semantics() = %q; want %q", s, stores.WatchSnapshots)
	}

	wctx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	watchers := []*regWatcher{{done: make(chan error, 1)}, {done: make(chan error, 1)}}
	for i, w := range watchers {
		go func() { w.done <- reg.Watch(wctx, i, prefix, w.event) }()
	}
	// Every watcher agrees with want, and so does List.
	agree := func(within time.Duration, what string, want []string) {
		t.Helper()
		storetest.WaitFor(t, ctx, within, what, func() string {
			for i, w := range watchers {
				if l := w.last(); l.rev < 0 || !slices.Equal(l.keys, want) {
					return fmt.Sprintf("watcher %d's last listing %v (revision %d); want %v", i, l.keys, l.rev, want)
				}
			}
			got, err := reg.List(ctx, prefix)
			if err != nil || !slices.Equal(got, want) {
				return fmt.Sprintf("List: %v, %v; want %v", got, err, want)
			}
			return ""
		})
	}
	agree(30*time.Second, "watchers' first, empty listing", []string{})

	for _, bad := range []string{"/elsewhere/i00001-g1", prefix, prefix + "a/b"} {
		if i, err := reg.Register(ctx, bad, nil); err == nil {
			i.Close()
			t.Errorf("Register(%q) succeeded; want an error", bad)
		}
	}

	var keys []string
	var insts []*instance
	servers := map[string]bool{}
	for n := range 5 {
		key := fmt.Sprintf("%si%05d-g1", prefix, n)
		start := time.Now()
		i, err := reg.Register(ctx, key, []byte(fmt.Sprintf(`{"port":%d}`, 9000+n)))
		if err != nil {
			t.Fatalf("Register(%q): %v", key, err)
		}
		t.Logf("registered %s in %s on %s, session 0x%x", key, time.Since(start).Round(time.Millisecond), i.(*instance).conn.Server(), i.(*instance).conn.SessionID())
		defer i.Close()
		keys = append(keys, key)
		insts = append(insts, i.(*instance))
		servers[i.(*instance).conn.Server()] = true
	}
	if len(servers) != 3 {
		t.Errorf("5 instances on servers %v; want them spread over all 3", servers)
	}
	agree(30*time.Second, "5 registered", keys)
	for n, i := range insts {
		if expired, err := i.KeepAlive(ctx); expired || err != nil {
			t.Errorf("KeepAlive of instance %d: expired %v, %v", n, expired, err)
		}
	}

	// Goodbye: the node goes at once, the session is closed, not expired.
	goneID := insts[0].conn.SessionID()
	if err := insts[0].Deregister(ctx); err != nil {
		t.Fatalf("Deregister: %v", err)
	}
	agree(10*time.Second, "instance 0 deregistered", keys[1:])

	// Silence: instance 1 vanishes while the others heartbeat every
	// second; the server expires its session.
	vanished, vanishedID := insts[1], insts[1].conn.SessionID()
	hctx, stopHeartbeats := context.WithCancel(ctx)
	var hmu sync.Mutex
	var heartbeats int
	var heartbeatProblems []string
	var hwg sync.WaitGroup
	hwg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			for n, i := range insts[2:] {
				expired, err := i.KeepAlive(hctx)
				if hctx.Err() != nil {
					return
				}
				hmu.Lock()
				heartbeats++
				if expired || err != nil {
					heartbeatProblems = append(heartbeatProblems, fmt.Sprintf("instance %d: expired %v, %v", n+2, expired, err))
				}
				hmu.Unlock()
			}
			select {
			case <-tick.C:
			case <-hctx.Done():
				return
			}
		}
	})
	silent := time.Now()
	vanished.Vanish()
	if _, err := vanished.KeepAlive(ctx); err == nil {
		t.Errorf("KeepAlive after Vanish succeeded; want an error")
	}
	storetest.WaitFor(t, ctx, ttl+3*time.Second, "the vanished instance's node gone for every watcher", func() string {
		for i, w := range watchers {
			if _, ok := w.firstWithout(silent, keys[1]); !ok {
				return fmt.Sprintf("watcher %d: last listing %v", i, w.last().keys)
			}
		}
		return ""
	})
	stopHeartbeats()
	hwg.Wait()
	var detect []time.Duration
	for _, w := range watchers {
		at, _ := w.firstWithout(silent, keys[1])
		detect = append(detect, at.Sub(silent).Round(time.Millisecond))
	}
	t.Logf("vanished instance gone from the watchers' listings %v after Vanish (TTL %s); %d heartbeats of the others meanwhile", detect, ttl, heartbeats)
	if slices.Min(detect) < ttl/2 {
		t.Errorf("vanished instance gone after %v: sooner than an expiry of a %s session can be; did it say goodbye?", detect, ttl)
	}
	for _, p := range heartbeatProblems {
		t.Errorf("heartbeat during the vanish: %s", p)
	}
	agree(10*time.Second, "instance 1 expired", keys[2:])
	storetest.WaitFor(t, ctx, 10*time.Second, "the server's log of the vanished session's expiry", func() string {
		if !expiredInLogs(t, e, vanishedID) {
			return fmt.Sprintf("no node logged %q", fmt.Sprintf("Expiring session 0x%x,", vanishedID))
		}
		return ""
	})
	if closedByClient(t, e, vanishedID) {
		t.Errorf("the server saw the vanished instance's connection closed before its session expired")
	}
	if expiredInLogs(t, e, goneID) {
		t.Errorf("the deregistered instance's session 0x%x expired; want it closed", goneID)
	}

	// An instance registering again while the node of its earlier
	// incarnation still exists replaces it; the earlier one then finds
	// its node gone.
	again, err := reg.Register(ctx, keys[2], []byte("again"))
	if err != nil {
		t.Fatalf("Register over a live node: %v", err)
	}
	if expired, err := insts[2].KeepAlive(ctx); !expired || err != nil {
		t.Errorf("KeepAlive of the replaced incarnation: expired %v, %v; want expired", expired, err)
	}
	if err := again.Deregister(ctx); err != nil {
		t.Errorf("Deregister of the new incarnation: %v", err)
	}
	again.Close()
	agree(10*time.Second, "instance 2 replaced, then deregistered", keys[3:])

	// Close releases without a word, however the instance ended; the
	// remaining sessions then expire.
	for n, i := range insts {
		start := time.Now()
		i.Close()
		i.Close()
		took := time.Since(start)
		t.Logf("Close of instance %d: %s", n, took.Round(time.Millisecond))
		if took > 3*time.Second {
			t.Errorf("Close of instance %d took %s", n, took)
		}
	}
	closed := time.Now()
	agree(ttl+10*time.Second, "the closed instances' sessions expired", []string{})
	t.Logf("closed instances gone %s after Close", time.Since(closed).Round(time.Millisecond))
	for n, i := range insts[3:] {
		if !expiredInLogs(t, e, i.conn.SessionID()) {
			t.Errorf("instance %d closed without a word, but its session did not expire", n+3)
		}
	}

	stopWatching()
	for i, w := range watchers {
		select {
		case err := <-w.done:
			if err != nil {
				t.Errorf("Watch %d returned %v; want nil", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Watch %d still running 10 s after its context ended", i)
		}
		w.mu.Lock()
		t.Logf("watcher %d: %d listings, %d errors %v", i, len(w.lists), len(w.errs), w.errs)
		for _, p := range w.problems {
			t.Errorf("watcher %d: %s", i, p)
		}
		w.mu.Unlock()
	}
	// Only the registry's own session is left.
	storetest.WaitFor(t, ctx, 5*time.Second, "go-zookeeper's loops of the closed sessions ended", func() string {
		if n := zkLoops(); n != 1 {
			return fmt.Sprintf("%d loops; want the registry's own", n)
		}
		return ""
	})
	if err := reg.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
