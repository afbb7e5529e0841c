package workload

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// An op's context is cancelled exactly when end reports that the watchdog
// took it, however the two interleave; the next op then gets a fresh one.
func TestOpTimerCancelsOnlyClaimedOps(t *testing.T) {
	t.Parallel()
	ot := newOpTimer(context.Background())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				ot.expire(time.Hour) // every op is long past due
			}
		}
	})
	// Both outcomes must occur many times over; Gosched between begin and
	// end hands the watchdog a chance at the op in flight.
	claims, kept := 0, 0
	var spent context.Context
	for i := 0; (claims < 100 || kept < 100) && i < 10_000_000; i++ {
		ctx := ot.begin(time.Nanosecond)
		if ctx == spent {
			t.Fatalf("op %d was given the context of the op the watchdog cancelled", i)
		}
		if i%2 == 0 {
			runtime.Gosched()
		}
		if ot.end() {
			claims++
			spent = ctx
			if ctx.Err() == nil {
				t.Fatalf("op %d: claimed but its context was not cancelled", i)
			}
		} else if err := ctx.Err(); err != nil {
			t.Fatalf("op %d: cancelled (%v) but end reported no claim", i, err)
		} else {
			kept++
		}
	}
	close(stop)
	wg.Wait()
	ot.close()
	if claims < 100 || kept < 100 {
		t.Errorf("%d ops claimed and %d kept: the test did not exercise both", claims, kept)
	}
}

func TestOpTimerLeavesOpsOnTime(t *testing.T) {
	t.Parallel()
	ot := newOpTimer(context.Background())
	defer ot.close()
	ctx := ot.begin(time.Second)
	ot.expire(time.Second - 1) // not yet due
	if ctx.Err() != nil || ot.end() {
		t.Fatal("an op before its due time was cancelled")
	}
	ot.expire(2 * time.Second) // between ops: nothing to cancel
	if ctx := ot.begin(3 * time.Second); ctx.Err() != nil {
		t.Fatal("the watchdog cancelled a worker between ops")
	}
	ot.end()
}

// The watchdog sleeps until the earliest op in flight is due, instead of
// waking every tick: over half a second with a 200 ms timeout it scans a
// handful of times, where a tick of 200ms/64 would scan 160 times; and it
// still cancels an op that outlives its due time, never before it.
func TestWatchdogWakesForDueOps(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	base := time.Now()
	var scans atomic.Int64 // each scan reads the time twice
	now := func() time.Duration { scans.Add(1); return time.Since(base) }
	wd := startWatchdog(timeout, now)
	idle, busy := newOpTimer(context.Background()), newOpTimer(context.Background())
	defer idle.close()
	defer busy.close()
	wd.add(idle)
	wd.add(busy)
	time.Sleep(500 * time.Millisecond)
	if n := scans.Load() / 2; n > 20 {
		t.Errorf("%d scans in 500 ms with no op in flight; want a few (one a timeout)", n)
	}
	due := time.Since(base) + 100*time.Millisecond
	ctx := busy.begin(due)
	select {
	case <-ctx.Done():
		if at := time.Since(base); at < due {
			t.Errorf("op cancelled at %v, before it was due at %v", at, due)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an op past its due time was not cancelled")
	}
	if !busy.end() {
		t.Error("end did not report the op the watchdog cancelled")
	}
	wd.close()
}

func TestWatchTick(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ timeout, want time.Duration }{
		{10 * time.Millisecond, time.Millisecond},
		{100 * time.Millisecond, 100 * time.Millisecond / 64},
		{DefaultTimeout, 16 * time.Millisecond},
		{time.Hour, 16 * time.Millisecond},
	} {
		if got := watchTick(tc.timeout); got != tc.want {
			t.Errorf("watchTick(%v) = %v, want %v", tc.timeout, got, tc.want)
		}
	}
}

// deadlineStore records whether an op's context reached it with a deadline
// or one a driver would add (stores.OpContext), then answers as fakeStore.
type deadlineStore struct {
	*fakeStore
	mu        sync.Mutex
	deadlines int
}

func (d *deadlineStore) Do(ctx context.Context, op stores.Op) stores.Result {
	opCtx, cancel := stores.OpContext(ctx, time.Hour)
	defer cancel()
	if _, ok := opCtx.Deadline(); ok {
		d.mu.Lock()
		d.deadlines++
		d.mu.Unlock()
	}
	return d.fakeStore.Do(ctx, op)
}

// Ops time out at the workload's timeout with no deadline the store would
// see, and the worker goes on with a fresh context once the stall is over.
func TestOpsTimeOutWithoutDeadline(t *testing.T) {
	t.Parallel()
	spec := testSpec()
	spec.Clients, spec.Timeout = 1, plan.Duration(50*time.Millisecond)
	store := &deadlineStore{fakeStore: newFakeStore(time.Millisecond)}
	base := time.Now()
	// Without the watchdog the first op would wait out the stall and succeed.
	store.stallFrom, store.stallTo = base, base.Add(300*time.Millisecond)
	c := &collector{}
	e, err := New(spec, store, c.newSink, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background(), closedLoad(1, 1, 600*time.Millisecond), 0); err != nil {
		t.Fatal(err)
	}
	var timeouts, ok int
	for _, s := range c.samples() {
		switch {
		case s.Class == plan.ErrTimeout:
			timeouts++
			if d := s.End - s.Start; d < 50*time.Millisecond {
				t.Errorf("timed out after %v, before the 50ms timeout", d)
			}
		case s.Class == "":
			ok++
		default:
			t.Errorf("sample %+v: want a timeout or a success", s)
		}
	}
	if timeouts < 2 || ok == 0 {
		t.Errorf("%d timeouts and %d successes: want the stall's ops timed out and the rest served", timeouts, ok)
	}
	if store.deadlines != 0 {
		t.Errorf("%d ops reached the store with a deadline", store.deadlines)
	}
}

// Preload writes time out as the load's do: by the watchdog, classed as
// timeouts, with no deadline reaching the store.
func TestPreloadTimesOutWithoutDeadline(t *testing.T) {
	t.Parallel()
	spec := testSpec()
	spec.Keyspace, spec.Preload, spec.Timeout = 40, true, plan.Duration(50*time.Millisecond)
	store := &deadlineStore{fakeStore: newFakeStore(time.Millisecond)}
	base := time.Now()
	store.stallFrom, store.stallTo = base, base.Add(200*time.Millisecond)
	h := &historyLog{}
	e, err := New(spec, store, (&collector{}).newSink, base, WithHistory(h.add))
	if err != nil {
		t.Fatal(err)
	}
	// The writes caught in the stall time out, and are written again once
	// it is over.
	if err := e.Preload(context.Background(), 2); err != nil {
		t.Errorf("err = %v, want the timed-out writes tried again after the stall", err)
	}
	if store.len() != 40 {
		t.Errorf("store holds %d keys, want 40", store.len())
	}
	var timeouts int
	for _, op := range h.all() {
		switch op.Class {
		case plan.ErrTimeout:
			timeouts++
			if d := op.Return - op.Call; d < 50*time.Millisecond {
				t.Errorf("write timed out after %v, before the 50ms timeout", d)
			}
		case "":
		default:
			t.Errorf("write %+v: want a timeout or a success", op)
		}
	}
	if timeouts < 2 || timeouts == len(h.all()) {
		t.Errorf("%d of %d writes timed out: want the stall's writes timed out and the rest served", timeouts, len(h.all()))
	}
	if store.deadlines != 0 {
		t.Errorf("%d writes reached the store with a deadline", store.deadlines)
	}
}

func TestErrClass(t *testing.T) {
	t.Parallel()
	fail := errors.New("failed")
	for _, tc := range []struct {
		res      stores.Result
		timedOut bool
		want     string
	}{
		{stores.Result{}, false, ""},
		{stores.Result{}, true, ""}, // answered before the cancel took
		{stores.Result{Err: fail, Class: plan.ErrConnection}, false, plan.ErrConnection},
		{stores.Result{Err: fail, Class: plan.ErrConnection}, true, plan.ErrTimeout},
		{stores.Result{Err: fail}, false, plan.ErrOther},
	} {
		if got := errClass(tc.res, tc.timedOut); got != tc.want {
			t.Errorf("errClass(%+v, %v) = %q, want %q", tc.res, tc.timedOut, got, tc.want)
		}
	}
}
