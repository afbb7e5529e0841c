//go:build linux

package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// acquired is the outcome of an Acquire run in the background.
type acquired struct {
	err error
	at  time.Time
}

func acquireAsync(ctx context.Context, c stores.Contender) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		err := c.Acquire(ctx)
		ch <- acquired{err, time.Now()}
	}()
	return ch
}

// closedAt reports when ch closes, or nothing if ctx ends first.
func closedAt(ctx context.Context, ch <-chan struct{}) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		select {
		case <-ch:
			at <- time.Now()
		case <-ctx.Done():
		}
	}()
	return at
}

// lockTTL is the contenders' TTL in the lock tests.
const lockTTL = 2 * time.Second

// lockSetup starts a 3-node cluster and a locker of recipe on it, with
// three contenders (ids 1 to 3), each dialing through a pauser of its own.
// Everything is closed when the test ends.
func lockSetup(t *testing.T, ctx context.Context, recipe, key string) (*testCluster, []*stores.Pauser, []stores.Contender) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped in -short mode: runs a 3-node etcd cluster (and builds etcd " + integrationVersion() + " on first use)")
	}
	bin, err := Install(ctx, InstallOptions{Version: integrationVersion(), Progress: logWriter{t}})
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	spec := plan.ClusterSpec{
		Name: "lock", Store: plan.StoreEtcd, Version: integrationVersion(), Nodes: 3,
		Etcd: &plan.EtcdKnobs{HeartbeatInterval: plan.Duration(100 * time.Millisecond), ElectionTimeout: plan.Duration(time.Second)},
	}
	c := startCluster(t, bin, spec)
	if err := WaitReady(ctx, c.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if least, _ := minTTL(spec); least > lockTTL {
		t.Fatalf("the cluster's minimum TTL %s exceeds the test's %s", least, lockTTL)
	}

	locker, err := Driver().NewLocker(ctx, stores.LockerOptions{
		ClientOptions: stores.ClientOptions{Endpoints: c.eps, Timeout: 5 * time.Second},
		Key:           key, TTL: lockTTL, Recipe: recipe,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := locker.Close(); err != nil {
			t.Errorf("locker Close: %v", err)
		}
	})
	pausers := make([]*stores.Pauser, 3)
	cs := make([]stores.Contender, 3)
	for i := range cs {
		pausers[i] = stores.NewPauser(nil)
		cs[i], err = locker.Contender(ctx, i+1, pausers[i].Dial)
		if err != nil {
			t.Fatalf("Contender %d: %v", i+1, err)
		}
		t.Cleanup(cs[i].Close)
		// A contender left frozen by a failure must not stall its Close.
		t.Cleanup(pausers[i].Thaw)
	}
	return c, pausers, cs
}

func TestLock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ttl = lockTTL
	const key = "/scenario/lock/test"
	c, pausers, cs := lockSetup(t, ctx, "", key)

	if err := cs[0].Acquire(ctx); err != nil {
		t.Fatalf("contender 1 Acquire: %v", err)
	}
	second := acquireAsync(ctx, cs[1])
	select {
	case r := <-second:
		t.Fatalf("contender 2's Acquire returned (%v) while contender 1 holds the lock", r.err)
	case <-time.After(500 * time.Millisecond):
	}
	released := time.Now()
	if err := cs[0].Release(ctx); err != nil {
		t.Fatalf("contender 1 Release: %v", err)
	}
	select {
	case r := <-second:
		if r.err != nil {
			t.Fatalf("contender 2 Acquire: %v", r.err)
		}
		t.Logf("handover: contender 2 acquired %s after contender 1's Release was called", r.at.Sub(released).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("contender 2 did not acquire within 10s of contender 1's Release")
	}

	// The holder is frozen: its lease expires on the server while it
	// still believes it holds the lock, and contender 3 takes over.
	lost := cs[1].Lost()
	lostAt := closedAt(ctx, lost)
	third := acquireAsync(ctx, cs[2])
	select {
	case r := <-third:
		t.Fatalf("contender 3's Acquire returned (%v) while contender 2 holds the lock", r.err)
	case <-time.After(500 * time.Millisecond):
	}
	frozen := time.Now()
	pausers[1].Freeze()
	select {
	case r := <-third:
		if r.err != nil {
			t.Fatalf("contender 3 Acquire: %v", r.err)
		}
		t.Logf("takeover: contender 3 acquired %s after contender 2 was frozen (TTL %s); contender 2's Lost closed by then: %v",
			r.at.Sub(frozen).Round(time.Millisecond), ttl, isClosed(lost))
	case <-time.After(ttl + 2*time.Second):
		t.Fatalf("contender 3 did not acquire within %s of contender 2's freeze", ttl+2*time.Second)
	}

	thawed := time.Now()
	pausers[1].Thaw()
	select {
	case at := <-lostAt:
		// Often before the thaw: see contender 3's freeze below.
		t.Logf("contender 2's Lost closed %s after its freeze; the thaw came %s after the freeze", at.Sub(frozen).Round(time.Millisecond), thawed.Sub(frozen).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("contender 2's Lost did not close within 5s of its thaw")
	}
	for _, step := range []struct {
		what string
		do   func()
	}{
		{"Release", func() {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			// Its key went with its lease; deleting it again is no error.
			if err := cs[1].Release(rctx); err != nil {
				t.Errorf("contender 2 Release after losing the lock: %v", err)
			}
		}},
		{"Close", cs[1].Close},
	} {
		start := time.Now()
		step.do()
		if d := time.Since(start); d > closeWait+time.Second {
			t.Errorf("contender 2's %s after losing the lock took %s", step.what, d)
		} else {
			t.Logf("contender 2's %s after losing the lock took %s", step.what, d.Round(time.Millisecond))
		}
	}

	// Only contender 3's key is left, and a contender whose session ended
	// competes again on a fresh one.
	raw, err := clientv3.New(clientConfig(clientURLs(c.eps), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	resp, err := raw.Get(ctx, key+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Errorf("keys under %s/ while contender 3 holds the lock: %v; want one", key, resp.Kvs)
	}
	// Still frozen, contender 3 learns of its loss all the same: clientv3
	// gives a lease up once no keepalive answer came for a TTL, checking
	// every second.
	frozen = time.Now()
	pausers[2].Freeze()
	if err := cs[0].Acquire(ctx); err != nil {
		t.Fatalf("contender 1 Acquire after contender 3's freeze: %v", err)
	}
	select {
	case <-cs[2].Lost():
		t.Logf("frozen contender 3's Lost closed %s after its freeze, without a thaw", time.Since(frozen).Round(time.Millisecond))
	case <-time.After(ttl + 2*time.Second - time.Since(frozen)):
		t.Fatalf("frozen contender 3's Lost did not close within %s of its freeze", ttl+2*time.Second)
	}
	pausers[2].Thaw()
	reacquired := acquireAsync(ctx, cs[2])
	if err := cs[0].Release(ctx); err != nil {
		t.Fatalf("contender 1 Release: %v", err)
	}
	select {
	case r := <-reacquired:
		if r.err != nil {
			t.Fatalf("contender 3 Acquire after losing its session: %v", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("contender 3 did not reacquire within 10s")
	}
	if isClosed(cs[2].Lost()) {
		t.Error("contender 3's Lost is closed after it acquired on a fresh session")
	}
	if err := cs[2].Release(ctx); err != nil {
		t.Errorf("contender 3 Release: %v", err)
	}
	// A frozen contender's Close cannot revoke its lease: it gives up.
	pausers[0].Freeze()
	start := time.Now()
	cs[0].Close()
	if d := time.Since(start); d > closeWait+time.Second {
		t.Errorf("Close of a frozen contender took %s", d)
	} else {
		t.Logf("Close of a frozen contender took %s", d.Round(time.Millisecond))
	}
	for _, cn := range cs {
		cn.Close()
	}
}

// TestElection runs TestLock's handover and takeover with etcd's
// leader-election recipe, and checks what a fresh client reads as the
// leader.
func TestElection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const ttl = lockTTL
	const key = "/scenario/election/test"
	c, pausers, cs := lockSetup(t, ctx, plan.LockElection, key)

	raw, err := clientv3.New(clientConfig(clientURLs(c.eps), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	observer, err := concurrency.NewSession(raw, concurrency.WithTTL(int(ttl.Seconds())))
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	// leader reads the leader's value as an observer does.
	leader := func() string {
		t.Helper()
		resp, err := concurrency.NewElection(observer, key).Leader(ctx)
		if err != nil {
			t.Fatalf("Leader: %v", err)
		}
		return string(resp.Kvs[0].Value)
	}

	if err := cs[0].Acquire(ctx); err != nil {
		t.Fatalf("contender 1 Acquire: %v", err)
	}
	if got := leader(); got != "contender-1" {
		t.Errorf("leader %q after contender 1 won; want contender-1", got)
	}
	second := acquireAsync(ctx, cs[1])
	select {
	case r := <-second:
		t.Fatalf("contender 2's Acquire returned (%v) while contender 1 leads", r.err)
	case <-time.After(500 * time.Millisecond):
	}
	released := time.Now()
	if err := cs[0].Release(ctx); err != nil {
		t.Fatalf("contender 1 Release: %v", err)
	}
	select {
	case r := <-second:
		if r.err != nil {
			t.Fatalf("contender 2 Acquire: %v", r.err)
		}
		t.Logf("handover: contender 2 leads %s after contender 1's Release was called", r.at.Sub(released).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("contender 2 did not lead within 10s of contender 1's Release")
	}

	// The leader is frozen: its lease expires on the server and
	// contender 3 takes over.
	lost := cs[1].Lost()
	lostAt := closedAt(ctx, lost)
	third := acquireAsync(ctx, cs[2])
	select {
	case r := <-third:
		t.Fatalf("contender 3's Acquire returned (%v) while contender 2 leads", r.err)
	case <-time.After(500 * time.Millisecond):
	}
	frozen := time.Now()
	pausers[1].Freeze()
	select {
	case r := <-third:
		if r.err != nil {
			t.Fatalf("contender 3 Acquire: %v", r.err)
		}
		t.Logf("takeover: contender 3 leads %s after contender 2 was frozen (TTL %s); contender 2's Lost closed by then: %v",
			r.at.Sub(frozen).Round(time.Millisecond), ttl, isClosed(lost))
	case <-time.After(ttl + 2*time.Second):
		t.Fatalf("contender 3 did not lead within %s of contender 2's freeze", ttl+2*time.Second)
	}
	if got := leader(); got != "contender-3" {
		t.Errorf("leader %q after contender 3's takeover; want contender-3", got)
	}

	pausers[1].Thaw()
	select {
	case <-lostAt:
	case <-time.After(5 * time.Second):
		t.Fatal("contender 2's Lost did not close within 5s of its thaw")
	}
	// Its resign is conditional on its key, which went with its lease: it
	// must not remove contender 3's.
	if err := cs[1].Release(ctx); err != nil {
		t.Errorf("contender 2 Release after losing: %v", err)
	}
	if got := leader(); got != "contender-3" {
		t.Errorf("leader %q after contender 2's late Release; want contender-3", got)
	}

	// A campaign whose lease goes while it waits fails, rather than wait
	// for a leader that may never resign. Contender 2 campaigns on a fresh
	// session behind contender 3; its lease is revoked under it.
	waiting := acquireAsync(ctx, cs[1])
	select {
	case r := <-waiting:
		t.Fatalf("contender 2's Acquire returned (%v) while contender 3 leads", r.err)
	case <-time.After(500 * time.Millisecond):
	}
	resp, err := raw.Get(ctx, key+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var lease clientv3.LeaseID
	for _, kv := range resp.Kvs {
		if string(kv.Value) == "contender-2" {
			lease = clientv3.LeaseID(kv.Lease)
		}
	}
	if lease == 0 {
		t.Fatalf("no key of contender 2 under %s/: %v", key, resp.Kvs)
	}
	revoked := time.Now()
	if _, err := raw.Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-waiting:
		if !errors.Is(r.err, concurrency.ErrSessionExpired) {
			t.Errorf("contender 2's campaign after its lease was revoked: %v; want %v", r.err, concurrency.ErrSessionExpired)
		}
		t.Logf("contender 2's campaign failed %s after its lease was revoked: %v", r.at.Sub(revoked).Round(time.Millisecond), r.err)
	case <-time.After(ttl + 2*time.Second):
		t.Fatalf("contender 2's campaign did not fail within %s of its lease's revoke", ttl+2*time.Second)
	}

	// Contender 2 campaigns again on a fresh session and leads once
	// contender 3 resigns.
	again := acquireAsync(ctx, cs[1])
	select {
	case r := <-again:
		t.Fatalf("contender 2's Acquire returned (%v) while contender 3 leads", r.err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := cs[2].Release(ctx); err != nil {
		t.Fatalf("contender 3 Release: %v", err)
	}
	select {
	case r := <-again:
		if r.err != nil {
			t.Fatalf("contender 2 Acquire on a fresh session: %v", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("contender 2 did not lead within 10s of contender 3's Release")
	}
	if isClosed(cs[1].Lost()) {
		t.Error("contender 2's Lost is closed after it won on a fresh session")
	}
	if got := leader(); got != "contender-2" {
		t.Errorf("leader %q after contender 3 resigned; want contender-2", got)
	}

	// A frozen contender's Close gives up on its revoke.
	pausers[1].Freeze()
	start := time.Now()
	cs[1].Close()
	if d := time.Since(start); d > closeWait+time.Second {
		t.Errorf("Close of a frozen contender took %s", d)
	} else {
		t.Logf("Close of a frozen contender took %s", d.Round(time.Millisecond))
	}
}
