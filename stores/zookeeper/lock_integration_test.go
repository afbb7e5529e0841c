//go:build linux

package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

func TestLockOptions(t *testing.T) {
	eps := []stores.Endpoint{{Node: 1, ClientAddr: "127.0.0.1:1"}}
	for _, opts := range []stores.LockerOptions{
		{Key: "/scenario/lock/x", TTL: 4 * time.Second},
		{ClientOptions: stores.ClientOptions{Endpoints: eps}, Key: "scenario/lock/x", TTL: 4 * time.Second},
		{ClientOptions: stores.ClientOptions{Endpoints: eps}, Key: "/", TTL: 4 * time.Second},
		{ClientOptions: stores.ClientOptions{Endpoints: eps}, Key: "/scenario/lock/x"},
	} {
		if l, err := NewLocker(context.Background(), opts); err == nil {
			l.Close()
			t.Errorf("NewLocker(%+v) succeeded; want an error", opts)
		}
	}
}

// lockChildren lists the lock's children after a sync, each with the
// session that owns it.
func lockChildren(ctx context.Context, conn *zk.Conn, path string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := await(ctx, func() (string, error) { return conn.Sync(path) }); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	names, err := await(ctx, func() ([]string, error) {
		names, _, err := conn.Children(path)
		return names, err
	})
	if err != nil {
		return nil, fmt.Errorf("children: %w", err)
	}
	owners := map[string]int64{}
	for _, n := range names {
		stat, err := await(ctx, func() (*zk.Stat, error) {
			_, stat, err := conn.Exists(path + "/" + n)
			return stat, err
		})
		if err != nil {
			return nil, fmt.Errorf("exists %s: %w", n, err)
		}
		if stat != nil && stat.EphemeralOwner != 0 {
			owners[n] = stat.EphemeralOwner
		}
	}
	return owners, nil
}

func TestLock(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: runs a 3-node ZooKeeper ensemble")
	}
	inst, err := Find("", "")
	if err != nil {
		t.Skipf("ZooKeeper is not installed (apt-get install zookeeper): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The default tickTime (2 s), so the shortest TTL is 4 s.
	spec := plan.ClusterSpec{
		Name: "lock", Store: plan.StoreZooKeeper, Version: inst.Version, Nodes: 3,
		ZooKeeper: &plan.ZooKeeperKnobs{JVMHeap: 128 << 20},
	}
	const ttl = 4 * time.Second
	if least, why := minTTL(spec); ttl < least {
		t.Fatalf("TTL %s below MinTTL %s: %s", ttl, least, why)
	}
	loops := zkLoops()
	e := startEnsemble(t, inst, spec)
	if err := WaitReady(ctx, e.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}

	const key = "/scenario/lock/test"
	locker, err := Driver().NewLocker(ctx, stores.LockerOptions{
		ClientOptions: stores.ClientOptions{Endpoints: e.eps, Timeout: 5 * time.Second},
		Key:           key, TTL: ttl,
	})
	if err != nil {
		t.Fatalf("NewLocker: %v", err)
	}
	defer locker.Close()

	// An observer of the lock's children, on a session of its own.
	var addrs []string
	for _, ep := range e.eps {
		addrs = append(addrs, ep.ClientAddr)
	}
	observer, _, err := connectRotated(addrs, 0, 10*time.Second, zkDialer(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	// The children are exactly one per session of owners.
	childrenOf := func(within time.Duration, what string, owners ...int64) {
		t.Helper()
		storetest.WaitFor(t, ctx, within, what, func() string {
			got, err := lockChildren(ctx, observer, key)
			if err != nil {
				return err.Error()
			}
			have := slices.Sorted(maps.Values(got))
			if want := slices.Sorted(slices.Values(owners)); !slices.Equal(have, want) {
				return fmt.Sprintf("children %v; want one owned by each of %x", got, want)
			}
			return ""
		})
	}
	childrenOf(10*time.Second, "no children at first")

	pausers := make([]*stores.Pauser, 4)
	cs := make([]*contender, 4)
	for i := range cs {
		pausers[i] = stores.NewPauser(nil)
		c, err := locker.Contender(ctx, i+1, pausers[i].Dial)
		if err != nil {
			t.Fatalf("Contender(%d): %v", i+1, err)
		}
		defer c.Close()
		cs[i] = c.(*contender)
		t.Logf("contender %d: session 0x%x on %s", i+1, cs[i].conn.SessionID(), cs[i].conn.Server())
	}
	acquire := func(c *contender, ctx context.Context) <-chan error {
		done := make(chan error, 1)
		go func() { done <- c.Acquire(ctx) }()
		return done
	}
	sessionOf := func(i int) int64 { return cs[i].conn.SessionID() }

	// Contender 1 takes the free lock.
	start := time.Now()
	if err := cs[0].Acquire(ctx); err != nil {
		t.Fatalf("contender 1's Acquire of the free lock: %v", err)
	}
	t.Logf("contender 1 acquired the free lock in %s", time.Since(start).Round(time.Millisecond))
	if err := cs[0].Acquire(ctx); !errors.Is(err, zk.ErrDeadlock) {
		t.Errorf("contender 1's second Acquire: %v; want zk.ErrDeadlock", err)
	}

	// Contender 2 waits behind it.
	acquired2 := acquire(cs[1], ctx)
	select {
	case err := <-acquired2:
		t.Fatalf("contender 2's Acquire returned while contender 1 held the lock: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	childrenOf(5*time.Second, "contender 1 holding, contender 2 waiting", sessionOf(0), sessionOf(1))

	// Handover.
	released := time.Now()
	if err := cs[0].Release(ctx); err != nil {
		t.Fatalf("contender 1's Release: %v", err)
	}
	acked := time.Since(released)
	select {
	case err := <-acquired2:
		if err != nil {
			t.Fatalf("contender 2's Acquire: %v", err)
		}
		t.Logf("handover: contender 2 acquired %s after contender 1's Release was sent (the Release returned after %s)",
			time.Since(released).Round(time.Millisecond), acked.Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("contender 2's Acquire did not return within 10 s of contender 1's Release")
	}
	if err := cs[0].Release(ctx); !errors.Is(err, zk.ErrNotLocked) {
		t.Errorf("contender 1's second Release: %v; want zk.ErrNotLocked", err)
	}
	childrenOf(5*time.Second, "contender 2 holding", sessionOf(1))

	// Contender 2 freezes while it holds the lock; the server expires its
	// session and contender 3, waiting behind it, takes over, while 2
	// still believes it holds the lock.
	lost2, held2 := cs[1].Lost(), cs[1].conn.SessionID()
	acquired3 := acquire(cs[2], ctx)
	select {
	case err := <-acquired3:
		t.Fatalf("contender 3's Acquire returned while contender 2 held the lock: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	pausers[1].Freeze()
	frozen := time.Now()
	select {
	case err := <-acquired3:
		if err != nil {
			t.Fatalf("contender 3's Acquire: %v", err)
		}
		t.Logf("takeover: contender 3 acquired %s after contender 2 froze (TTL %s)", time.Since(frozen).Round(time.Millisecond), ttl)
	case <-time.After(ttl + 3*time.Second):
		t.Fatalf("contender 3's Acquire did not return within TTL + 3 s of contender 2's freeze")
	}
	if isClosed(lost2) {
		t.Errorf("frozen contender 2 learned of its loss while frozen")
	}
	cs[1].mu.Lock()
	believes := cs[1].held != nil
	cs[1].mu.Unlock()
	if !believes {
		t.Errorf("frozen contender 2 no longer believes it holds the lock")
	}
	if !expiredInLogs(t, e, held2) {
		t.Errorf("no server logged the expiry of contender 2's session 0x%x", held2)
	}
	childrenOf(5*time.Second, "contender 3 holding", sessionOf(2))

	// Thawed, contender 2 learns of its loss when it next reaches a
	// server.
	pausers[1].Thaw()
	thawed := time.Now()
	select {
	case <-lost2:
		t.Logf("contender 2's Lost closed %s after the thaw (%s after the freeze)",
			time.Since(thawed).Round(time.Millisecond), time.Since(frozen).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatalf("contender 2's Lost not closed within 5 s of the thaw")
	}
	start = time.Now()
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	err = cs[1].Release(rctx)
	rcancel()
	t.Logf("contender 2's Release after the loss: %s: %v", time.Since(start).Round(time.Millisecond), err)
	if !errors.Is(err, zk.ErrSessionExpired) {
		t.Errorf("contender 2's Release after the loss: %v; want zk.ErrSessionExpired", err)
	}
	if class := Classify(err); class != plan.ErrUnavailable {
		t.Errorf("contender 2's Release after the loss classified %q; want %q", class, plan.ErrUnavailable)
	}
	start = time.Now()
	cs[1].Close()
	cs[1].Close()
	if d := time.Since(start); d > politeClose {
		t.Errorf("closing thawed contender 2 took %s", d)
	}
	t.Logf("contender 2 closed in %s", time.Since(start).Round(time.Millisecond))
	childrenOf(5*time.Second, "contender 3 still holding", sessionOf(2))

	// An Acquire whose ctx ends gives up at once and closes its
	// contender, whose child goes with the session.
	actx, acancel := context.WithTimeout(ctx, 500*time.Millisecond)
	start = time.Now()
	err = cs[3].Acquire(actx)
	acancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Errorf("contender 4's Acquire with a 500 ms deadline: %v after %s; want the deadline's error", err, time.Since(start))
	}
	start = time.Now()
	cs[3].Close()
	t.Logf("contender 4's Acquire gave up; its Close waited %s more", time.Since(start).Round(time.Millisecond))
	childrenOf(5*time.Second, "contender 4's child gone with its session", sessionOf(2))
	if err := cs[3].Acquire(ctx); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Acquire on a closed contender: %v; want an error", err)
	}

	// A frozen contender's Close does not hang.
	pausers[2].Freeze()
	start = time.Now()
	cs[2].Close()
	if d := time.Since(start); d > politeClose+closeTimeout {
		t.Errorf("closing frozen contender 3 took %s", d)
	}
	t.Logf("frozen contender 3 closed in %s", time.Since(start).Round(time.Millisecond))
	pausers[2].Thaw()

	start = time.Now()
	if err := locker.Close(); err != nil {
		t.Errorf("locker Close: %v", err)
	}
	t.Logf("locker closed in %s", time.Since(start).Round(time.Millisecond))
	observer.Close()
	storetest.WaitFor(t, ctx, 10*time.Second, "every session's loop ended", func() string {
		if n := zkLoops(); n > loops {
			return fmt.Sprintf("%d go-zookeeper loops; %d before the test", n, loops)
		}
		return ""
	})
}
