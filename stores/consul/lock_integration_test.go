//go:build linux

package consul

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// lockDelay15s is Consul's default session lock-delay, which the lock
// recipe keeps.
const lockDelay15s = 15 * time.Second

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

// heldSession is the session of c's hold, "" if none.
func heldSession(c stores.Contender) string {
	cn := c.(*contender)
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.held == nil {
		return ""
	}
	return cn.held.session
}

// keyLeaves reports when key stops being held by session, seen through
// blocking queries of admin's, or nothing if ctx ends first.
func keyLeaves(ctx context.Context, admin *api.Client, key, session string) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		var index uint64
		for ctx.Err() == nil {
			q := (&api.QueryOptions{WaitIndex: index, WaitTime: 30 * time.Second}).WithContext(ctx)
			pair, meta, err := admin.KV().Get(key, q)
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if pair == nil || pair.Session != session {
				at <- time.Now()
				return
			}
			index = meta.LastIndex
		}
	}()
	return at
}

// elections reports each time the cluster's servers, polled by p every
// 200ms, show a higher raft term than before, until ctx ends. The first
// term seen is no election.
func elections(ctx context.Context, p *StatusPoller) <-chan time.Time {
	at := make(chan time.Time, 16)
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		var last uint64
		for {
			var term uint64
			for _, ns := range p.Poll(ctx, time.Second) {
				term = max(term, ns.Term)
			}
			if term > last {
				if last != 0 {
					select {
					case at <- time.Now():
					default:
					}
				}
				last = term
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return at
}

// timed runs do and fails if it took longer than within.
func timed(t *testing.T, what string, within time.Duration, do func()) {
	t.Helper()
	start := time.Now()
	do()
	if d := time.Since(start); d > within {
		t.Errorf("%s took %s, want at most %s", what, d.Round(time.Millisecond), within)
	} else {
		t.Logf("%s took %s", what, d.Round(time.Millisecond))
	}
}

func TestLockOptions(t *testing.T) {
	eps := []stores.Endpoint{{Node: 1, ClientAddr: "127.0.0.1:1"}}
	for _, o := range []stores.LockerOptions{
		{Key: "k", TTL: 10 * time.Second},
		{ClientOptions: stores.ClientOptions{Endpoints: eps}, Key: "/", TTL: 10 * time.Second},
		{ClientOptions: stores.ClientOptions{Endpoints: eps}, Key: "k", TTL: 2 * time.Second},
		{ClientOptions: stores.ClientOptions{Endpoints: eps}, Key: "k", TTL: 25 * time.Hour},
	} {
		if _, err := NewLocker(context.Background(), o); err == nil {
			t.Errorf("NewLocker(%+v) succeeded", o)
		}
	}
}

func TestLockIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: builds consul " + integrationVersion() + " on first use and runs a 3-server cluster for about a minute")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	version := integrationVersion()
	bin := install(t, ctx, version)
	spec := plan.ClusterSpec{Name: "lock", Store: plan.StoreConsul, Version: version, Nodes: 3, Consul: &plan.ConsulKnobs{RaftMultiplier: 1}}
	c := startCluster(t, bin, spec, loopbackEndpoints(t, spec.Nodes))
	if err := WaitReady(ctx, c.eps, time.Minute); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	adminT := newTransport(nil, 1)
	defer adminT.CloseIdleConnections()
	admin, err := newAPIClient(c.eps[0].ClientAddr, adminT)
	if err != nil {
		t.Fatal(err)
	}

	const ttl = MinSessionTTL
	const key = "scenario/lock/test"
	locker, err := Driver().NewLocker(ctx, stores.LockerOptions{
		ClientOptions: stores.ClientOptions{Endpoints: c.eps, Timeout: 5 * time.Second},
		Key:           key, TTL: ttl,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := locker.Close(); err != nil {
			t.Errorf("locker Close: %v", err)
		}
	}()
	pausers := make([]*stores.Pauser, 3)
	cs := make([]stores.Contender, 3)
	for i := range cs {
		pausers[i] = stores.NewPauser(nil)
		cs[i], err = locker.Contender(ctx, i+1, pausers[i].Dial)
		if err != nil {
			t.Fatalf("Contender %d: %v", i+1, err)
		}
		defer cs[i].Close()
		// A contender left frozen by a failure must not stall its Close.
		defer pausers[i].Thaw()
		if isDone(cs[i].Lost()) {
			t.Errorf("contender %d's Lost is closed before any Acquire", i+1)
		}
	}

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

	// The holder is frozen: Consul invalidates its session after the TTL
	// grace while it still believes it holds the lock, and contender 3
	// takes over once the lock-delay is over. api.Lock asks again every
	// DefaultLockRetryTime while a lock-delay refuses it, hence that term.
	lost := cs[1].Lost()
	if isDone(lost) {
		t.Fatal("contender 2's Lost is closed while it holds the lock")
	}
	lostAt := closedAt(ctx, lost)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	invalidated := keyLeaves(wctx, admin, key, heldSession(cs[1]))
	third := acquireAsync(ctx, cs[2])
	select {
	case r := <-third:
		t.Fatalf("contender 3's Acquire returned (%v) while contender 2 holds the lock", r.err)
	case <-time.After(500 * time.Millisecond):
	}
	// A new leader restarts every session's TTL timer (at twice the TTL,
	// as at its creation), so an election during the wait moves the bound
	// on: a frozen holder's session then ends up to 2 x TTL after it.
	poller, err := NewStatusPoller(c.eps)
	if err != nil {
		t.Fatal(err)
	}
	defer poller.Close()
	elected := elections(wctx, poller)
	frozen := time.Now()
	pausers[1].Freeze()
	within := 2*ttl + lockDelay15s + api.DefaultLockRetryTime + 5*time.Second
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	var r acquired
wait:
	for {
		select {
		case r = <-third:
			break wait
		case at := <-elected:
			t.Logf("a raft election %s after the freeze: the bound on contender 3's takeover now runs from it", at.Sub(frozen).Round(time.Millisecond))
			deadline.Reset(time.Until(at.Add(within)))
		case <-deadline.C:
			t.Fatalf("contender 3 did not acquire within %s of contender 2's freeze or of the last election", within)
		}
	}
	if r.err != nil {
		t.Fatalf("contender 3 Acquire: %v", r.err)
	}
	took := r.at.Sub(frozen)
	t.Logf("takeover: contender 3 acquired %s after contender 2 was frozen (TTL %s, 2 x TTL + lock-delay = %s); contender 2's Lost closed by then: %v",
		took.Round(time.Millisecond), ttl, 2*ttl+lockDelay15s, isDone(lost))
	select {
	case at := <-invalidated:
		t.Logf("  contender 2's session was invalidated (its key released) %s after the freeze, %s before contender 3 acquired",
			at.Sub(frozen).Round(time.Millisecond), r.at.Sub(at).Round(time.Millisecond))
	default:
		t.Error("contender 3 acquired while contender 2's session still held the key")
	}
	// The session outlives its TTL/2 renewal period at least, and the
	// lock-delay runs from its end.
	if least := ttl/2 + lockDelay15s; took < least {
		t.Errorf("takeover after %s, before the least the lock-delay allows, %s", took, least)
	}
	lostDuringFreeze := isDone(lost)

	thawed := time.Now()
	pausers[1].Thaw()
	select {
	case at := <-lostAt:
		if lostDuringFreeze {
			t.Logf("contender 2's Lost closed during the freeze, %s after it", at.Sub(frozen).Round(time.Millisecond))
		} else {
			t.Logf("contender 2's Lost closed %s after its thaw (%s after its freeze)", at.Sub(thawed).Round(time.Millisecond), at.Sub(frozen).Round(time.Millisecond))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("contender 2's Lost did not close within 10s of its thaw")
	}
	timed(t, "contender 2's Release after losing the lock", closeWait, func() {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		// The server answers that its session no longer holds the key.
		if err := cs[1].Release(rctx); err != nil {
			t.Errorf("contender 2 Release after losing the lock: %v", err)
		}
	})
	timed(t, "contender 2's Close after losing the lock", closeWait+time.Second, cs[1].Close)

	// Contender 3 holds with the session the recipe asked for: no health
	// checks, Consul's default lock-delay and behaviour.
	h := cs[2].(*contender).held
	info, _, err := admin.Session().Info(h.session, nil)
	if err != nil || info == nil {
		t.Fatalf("contender 3's session: %v, %v", info, err)
	}
	if info.TTL != ttl.String() || info.LockDelay != lockDelay15s || info.Behavior != api.SessionBehaviorRelease ||
		len(info.NodeChecks)+len(info.ServiceChecks)+len(info.Checks) != 0 || info.Node != plan.NodeName(c.eps[0].Node) {
		t.Errorf("contender 3's session: %+v", info)
	}
	pair, _, err := admin.KV().Get(key, &api.QueryOptions{RequireConsistent: true})
	if err != nil || pair == nil || pair.Session != h.session || pair.Flags != api.LockFlagValue || string(pair.Value) != "3" {
		t.Errorf("the lock's key: %+v, %v", pair, err)
	}

	// An Acquire gives up when its ctx ends, even in the middle of a
	// blocking query, and even frozen.
	timed(t, "contender 1's Acquire with a 1s timeout while contender 3 holds", 2*time.Second, func() {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := cs[0].Acquire(actx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("contender 1 Acquire with a 1s timeout: %v, want the deadline", err)
		}
	})
	pausers[0].Freeze()
	timed(t, "frozen contender 1's Acquire with a 1s timeout", 2*time.Second, func() {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := cs[0].Acquire(actx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("frozen contender 1 Acquire with a 1s timeout: %v, want the deadline", err)
		}
	})
	pausers[0].Thaw()

	// An explicit release sets no lock-delay: the next contender gets the
	// lock at once.
	again := acquireAsync(ctx, cs[0])
	released = time.Now()
	if err := cs[2].Release(ctx); err != nil {
		t.Fatalf("contender 3 Release: %v", err)
	}
	select {
	case r := <-again:
		if r.err != nil {
			t.Fatalf("contender 1 Acquire: %v", r.err)
		}
		t.Logf("handover: contender 1 acquired %s after contender 3's Release was called", r.at.Sub(released).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("contender 1 did not acquire within 10s of contender 3's Release")
	}
	if isDone(cs[0].Lost()) {
		t.Error("contender 1's Lost is closed right after it acquired")
	}

	// A frozen holder's Close cannot release: it gives up.
	pausers[0].Freeze()
	timed(t, "frozen contender 1's Close while holding", closeWait+time.Second, cs[0].Close)
	timed(t, "a second Close", 100*time.Millisecond, cs[0].Close)
	if err := cs[0].Acquire(ctx); !errors.Is(err, errContenderClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
	for _, cn := range cs {
		cn.Close()
	}
}
