package workload

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
)

// These tests run against the real clock, so every timed expectation has a
// wide margin: a loaded 2-core machine may wake timers late, never early.

func newTestEngine(t *testing.T, spec plan.WorkloadSpec, store *fakeStore, opts ...Option) (*Engine, *collector) {
	t.Helper()
	c := &collector{}
	e, err := New(spec, store, c.newSink, time.Now(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e, c
}

func closedLoad(from, to int, d time.Duration) plan.LoadSpec {
	return plan.LoadSpec{Workload: "w", Mode: plan.LoadClosed, ClientsFrom: from, ClientsTo: to, Duration: plan.Duration(d)}
}

// settle fails the test unless the goroutine count falls back to baseline.
func settle(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want %d:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNewRejects(t *testing.T) {
	store := newFakeStore(0)
	sink := (&collector{}).newSink
	tests := []struct {
		name   string
		call   func() (*Engine, error)
		errHas string
	}{
		{name: "no client", call: func() (*Engine, error) { return New(testSpec(), nil, sink, time.Now()) }, errHas: "no store client"},
		{name: "no sink", call: func() (*Engine, error) { return New(testSpec(), store, nil, time.Now()) }, errHas: "no metrics sink"},
		{name: "wall-clock base", call: func() (*Engine, error) { return New(testSpec(), store, sink, time.Now().Round(0)) }, errHas: "monotonic"},
		{name: "zero base", call: func() (*Engine, error) { return New(testSpec(), store, sink, time.Time{}) }, errHas: "monotonic"},
		{name: "no clients", call: func() (*Engine, error) {
			s := testSpec()
			s.Clients = 0
			return New(s, store, sink, time.Now())
		}, errHas: "clients must be at least 1"},
		{name: "short keys", call: func() (*Engine, error) {
			s := testSpec()
			s.KeySize = 4
			return New(s, store, sink, time.Now())
		}, errHas: "key_size 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.call()
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("err = %v, want one containing %q", err, tt.errHas)
			}
		})
	}
}

func TestRunRejects(t *testing.T) {
	e, _ := newTestEngine(t, testSpec(), newFakeStore(0))
	tests := []struct {
		name   string
		load   plan.LoadSpec
		errHas string
	}{
		{name: "other workload", load: plan.LoadSpec{Workload: "x", Mode: plan.LoadClosed, Duration: plan.Duration(time.Second)}, errHas: `load of workload "x"`},
		{name: "unknown mode", load: plan.LoadSpec{Mode: "burst", Duration: plan.Duration(time.Second)}, errHas: "unknown load mode"},
		{name: "no duration", load: plan.LoadSpec{Mode: plan.LoadClosed}, errHas: "duration must be positive"},
		{name: "negative rate", load: plan.LoadSpec{Mode: plan.LoadOpen, RateFrom: -1, Duration: plan.Duration(time.Second)}, errHas: "invalid rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A start an hour away: a bad load must fail before any waiting.
			_, err := e.Run(context.Background(), tt.load, time.Hour)
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("err = %v, want one containing %q", err, tt.errHas)
			}
		})
	}
}

func TestClosedLoopThroughput(t *testing.T) {
	t.Parallel()
	spec := testSpec()
	h := &historyLog{}
	e, c := newTestEngine(t, spec, newFakeStore(10*time.Millisecond), WithHistory(h.add))
	// ClientsFrom = ClientsTo = 0: the workload's 4 clients.
	st, err := e.Run(context.Background(), closedLoad(0, 0, 600*time.Millisecond), 0)
	if err != nil {
		t.Fatal(err)
	}
	samples := c.samples()
	// 4 clients × 600ms / 10ms = 240. Every op takes at least 10ms, so never
	// more; a busy machine wakes the fake's timers late, so maybe far fewer.
	n := len(samples)
	t.Logf("%d ops, ideal 240", n)
	if n < 48 || n > 240 {
		t.Errorf("%d ops, want about 240 (4 clients × 600ms / 10ms)", n)
	}
	if st.Sent != int64(n) || st.Workers != 4 || st.Failed != 0 {
		t.Errorf("stats %+v, want Sent %d, Workers 4, Failed 0", st, n)
	}
	for _, s := range samples {
		if s.Intended != s.Start || s.End < s.Start || s.Workload != "w" || s.Op != plan.OpPut || !s.Write || s.Class != "" {
			t.Fatalf("bad closed-loop sample %+v", s)
		}
	}
	// Closed loop: a client sends its next op only after the last returned.
	last := map[int]time.Duration{}
	for _, op := range h.all() { // each client's ops arrive in order
		if prev, ok := last[op.ClientID]; ok && op.Call < prev {
			t.Fatalf("client %d sent at %v, before its previous op returned at %v", op.ClientID, op.Call, prev)
		}
		last[op.ClientID] = op.Return
	}
	if len(last) != 4 {
		t.Errorf("%d clients sent, want 4", len(last))
	}
}

func TestClosedLoopRamp(t *testing.T) {
	t.Parallel()
	h := &historyLog{}
	e, _ := newTestEngine(t, testSpec(), newFakeStore(5*time.Millisecond), WithHistory(h.add))
	// 1 → 4 over 600ms: 2 clients from 200ms, 3 from 400ms (4 would be at the end).
	st, err := e.Run(context.Background(), closedLoad(1, 4, 600*time.Millisecond), 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Workers != 3 {
		t.Errorf("%d workers, want 3", st.Workers)
	}
	for _, op := range h.all() {
		if op.Call < 190*time.Millisecond && op.ClientID != 0 {
			t.Fatalf("client %d sent at %v, before the ramp added it at 200ms", op.ClientID, op.Call)
		}
		if op.Call < 390*time.Millisecond && op.ClientID > 1 {
			t.Fatalf("client %d sent at %v, before the ramp added it at 400ms", op.ClientID, op.Call)
		}
	}
}

// TestOpenLoopConstantRate runs 200/s for 2 s with the dispatcher
// sleeping, and spinning through a window longer than the arrivals'
// spacing (WithBusyPoll): every request sent, none before it was due.
func TestOpenLoopConstantRate(t *testing.T) {
	t.Parallel()
	for _, busyPoll := range []time.Duration{0, 10 * time.Millisecond} {
		t.Run(fmt.Sprintf("busy-poll=%v", busyPoll), func(t *testing.T) {
			t.Parallel()
			e, c := newTestEngine(t, testSpec(), newFakeStore(time.Millisecond), WithBusyPoll(busyPoll))
			start := 100 * time.Millisecond
			st, err := e.Run(context.Background(), openLoad(200, 200, 2*time.Second), start)
			if err != nil {
				t.Fatal(err)
			}
			samples := c.samples()
			if len(samples) != 400 || st.Sent != 400 {
				t.Fatalf("%d samples, %d sent; want 400 (200/s for 2s)", len(samples), st.Sent)
			}
			for i, s := range samples {
				want := start + time.Duration(i)*5*time.Millisecond
				if s.Intended != want {
					t.Fatalf("sample %d intended at %v, want %v", i, s.Intended, want)
				}
				if s.Start < s.Intended || s.End < s.Start {
					t.Fatalf("sample %d out of order: %+v", i, s)
				}
			}
			if st.Workers > 4 {
				t.Errorf("%d workers, more than the workload's 4 clients", st.Workers)
			}
		})
	}
}

func TestOpenLoopRamp(t *testing.T) {
	t.Parallel()
	e, c := newTestEngine(t, testSpec(), newFakeStore(time.Millisecond))
	load := openLoad(0, 400, 500*time.Millisecond)
	st, err := e.Run(context.Background(), load, 0)
	if err != nil {
		t.Fatal(err)
	}
	samples := c.samples()
	// (0+400)/2 per second for 0.5s: 100 arrivals, each at its ramp time.
	if len(samples) != 100 || st.Sent != 100 {
		t.Fatalf("%d samples, %d sent; want 100", len(samples), st.Sent)
	}
	for k, at := range Arrivals(load).All() {
		if samples[k].Intended != at {
			t.Fatalf("sample %d intended at %v, want %v", k, samples[k].Intended, at)
		}
	}
}

func TestOverlappingRunsShareNoGenerator(t *testing.T) {
	t.Parallel()
	h := &historyLog{}
	e, _ := newTestEngine(t, testSpec(), newFakeStore(time.Millisecond), WithHistory(h.add))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := e.Run(context.Background(), closedLoad(2, 2, 100*time.Millisecond), 0); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	last := map[int]time.Duration{}
	for _, op := range h.all() {
		if prev, ok := last[op.ClientID]; ok && op.Call < prev {
			t.Fatalf("client %d ran two ops at once: two workers shared its generator", op.ClientID)
		}
		last[op.ClientID] = op.Return
	}
	if len(last) != 4 {
		t.Errorf("clients %v, want 4 distinct", last)
	}
}

func TestOpenLoopCorrectsForStalls(t *testing.T) {
	t.Parallel()
	spec := testSpec()
	spec.Clients = 2
	store := newFakeStore(time.Millisecond)
	c := &collector{}
	base := time.Now()
	// The store answers nothing between 300ms and 800ms.
	store.stallFrom, store.stallTo = base.Add(300*time.Millisecond), base.Add(800*time.Millisecond)
	e, err := New(spec, store, c.newSink, base)
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Run(context.Background(), openLoad(100, 100, 1500*time.Millisecond), 0)
	if err != nil {
		t.Fatal(err)
	}
	samples := c.samples()
	if len(samples) != 150 {
		t.Fatalf("%d samples, want 150: a stall must not thin out the requests", len(samples))
	}
	// Requests due during the stall wait for one of the two stuck workers:
	// their latency from the due time is long, their own round trip is not.
	// Only proportions are asserted, since a loaded machine adds delays of
	// its own.
	var maxCorrected time.Duration
	long, queued := 0, 0
	for _, s := range samples {
		corrected, raw := s.End-s.Intended, s.End-s.Start
		maxCorrected = max(maxCorrected, corrected)
		if corrected >= 200*time.Millisecond {
			long++
			if raw < corrected/2 {
				queued++
			}
		}
	}
	if maxCorrected < 450*time.Millisecond || maxCorrected > 3*time.Second {
		t.Errorf("worst corrected latency %v, want about 500ms", maxCorrected)
	}
	// About 30 requests are due from 300ms to 600ms, 200ms or more before
	// the stall ends; all but the two stuck in the store were queued.
	if long < 25 || queued < 20 {
		t.Errorf("%d requests with corrected latency >= 200ms, %d of them queued; want about 30 and 28", long, queued)
	}
	if st.MaxQueue < 20 || st.LateStarts < 20 || st.Workers != 2 {
		t.Errorf("stats %+v, want MaxQueue and LateStarts about 48, Workers 2", st)
	}
	// Requests due during the stall waited for a client, both being stuck
	// in the store; before it, a client was always free. A busy machine may
	// queue a few elsewhere, and make others late for want of a CPU.
	during, outside := 0, 0
	for _, s := range samples {
		switch {
		case !s.Queued:
		case s.Intended >= 300*time.Millisecond && s.Intended < 800*time.Millisecond:
			during++
		case s.Intended < 290*time.Millisecond || s.Intended > 1200*time.Millisecond:
			outside++
		}
	}
	// A late start that did not wait for a client waited for a CPU, and a
	// wait that long can keep both clients busy past the next arrival: a
	// CI run's busiest minute (11 such) queued 4 far from the stall.
	forCPU := int(st.LateStarts - st.LateQueued)
	if during < 40 || outside > 3+forCPU || st.LateQueued < 40 || st.LateQueued > st.LateStarts {
		t.Errorf("stats %+v: %d requests due in the stall waited for a client, %d far from it; want about 48 and none (or as many as were late for a CPU), and late starts that waited for a client about 48", st, during, outside)
	}
}

func TestOpenLoopExpiresBacklogAtCutoff(t *testing.T) {
	t.Parallel()
	spec := testSpec()
	spec.Clients, spec.Timeout = 1, plan.Duration(100*time.Millisecond)
	store := newFakeStore(0)
	c := &collector{}
	base := time.Now()
	store.stallFrom, store.stallTo = base, base.Add(time.Hour) // every op times out
	e, err := New(spec, store, c.newSink, base)
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Run(context.Background(), openLoad(200, 200, 300*time.Millisecond), 0)
	if err != nil {
		t.Fatal(err)
	}
	// One worker, 100ms per timeout: ~4 sent by the cutoff at 300+100ms,
	// the other ~56 expire. Every arrival is accounted for either way.
	samples := c.samples()
	if len(samples) != 60 || st.Sent+st.Expired != 60 {
		t.Fatalf("%d samples, stats %+v; want 60 = sent + expired", len(samples), st)
	}
	if st.Expired < 40 {
		t.Errorf("%d expired, want about 56", st.Expired)
	}
	for _, s := range samples {
		if s.Class != plan.ErrTimeout || s.End-s.Intended < 100*time.Millisecond {
			t.Fatalf("sample %+v: want a timeout with at least the 100ms timeout as latency", s)
		}
	}
}

func TestFailuresAreRecordedNotRetried(t *testing.T) {
	t.Parallel()
	store := newFakeStore(time.Millisecond)
	store.failEvery, store.failClass = 3, plan.ErrUnavailable
	e, c := newTestEngine(t, testSpec(), store)
	st, err := e.Run(context.Background(), closedLoad(2, 2, 200*time.Millisecond), 0)
	if err != nil {
		t.Fatal(err)
	}
	samples := c.samples()
	failed := 0
	for _, s := range samples {
		switch s.Class {
		case "":
		case plan.ErrUnavailable:
			failed++
		default:
			t.Fatalf("sample class %q, want %q", s.Class, plan.ErrUnavailable)
		}
	}
	if calls := store.calls.Load(); calls != int64(len(samples)) {
		t.Errorf("store saw %d calls for %d samples: failures must not be retried", calls, len(samples))
	}
	if int64(failed) != st.Failed || failed != len(samples)/3 {
		t.Errorf("%d failed samples, stats say %d, want %d (every third)", failed, st.Failed, len(samples)/3)
	}
}

func TestHistoryAndPhasesKeepValuesUnique(t *testing.T) {
	t.Parallel()
	spec := testSpec()
	spec.Keyspace = 20
	spec.Mix = []plan.OpWeight{{Op: plan.OpPut, Weight: 0.5}, {Op: plan.OpGet, Weight: 0.5}}
	h := &historyLog{}
	e, c := newTestEngine(t, spec, newFakeStore(time.Millisecond), WithHistory(h.add))
	for _, start := range []time.Duration{0, 150 * time.Millisecond} {
		if _, err := e.Run(context.Background(), closedLoad(3, 3, 100*time.Millisecond), start); err != nil {
			t.Fatal(err)
		}
	}
	ops := h.all()
	if len(ops) != len(c.samples()) {
		t.Fatalf("%d history ops for %d samples", len(ops), len(c.samples()))
	}
	written := map[string]bool{}
	lastSeq := map[int]int64{}
	for _, op := range ops {
		if op.Return < op.Call || op.Class != "" {
			t.Fatalf("bad history op %+v", op)
		}
		switch op.Op {
		case plan.OpPut:
			w, seq, ok := ParseValue(op.Value)
			if !ok || w != op.ClientID {
				t.Fatalf("put by client %d tagged with writer %d", op.ClientID, w)
			}
			if prev, seen := lastSeq[w]; seen && int64(seq) <= prev {
				t.Fatalf("writer %d: sequence %d after %d, across phases too", w, seq, prev)
			}
			lastSeq[w] = int64(seq)
			if written[string(op.Value)] {
				t.Fatalf("value %x written twice", op.Value)
			}
			written[string(op.Value)] = true
		case plan.OpGet:
			if op.Found {
				if _, _, ok := ParseValue(op.Value); !ok {
					t.Fatalf("get read an untagged value %x", op.Value)
				}
			}
		}
	}
	if len(lastSeq) != 3 {
		t.Errorf("writers %v, want the same 3 clients in both phases", lastSeq)
	}
	if n := len(c.sinks); n != 3 {
		t.Errorf("%d sinks for 3 workers over 2 phases, want 3: sinks are reused", n)
	}
}

func TestPreload(t *testing.T) {
	t.Parallel()
	spec := testSpec()
	spec.Keyspace, spec.Preload = 500, true
	store := newFakeStore(0)
	h := &historyLog{}
	var progress []int64
	e, c := newTestEngine(t, spec, store, WithHistory(h.add), WithProgress(func(done, total int64) {
		if total != 500 {
			t.Errorf("progress total %d, want 500", total)
		}
		progress = append(progress, done)
	}))
	if err := e.Preload(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	if store.len() != 500 {
		t.Errorf("store holds %d keys, want 500", store.len())
	}
	ks, _ := NewKeyspace(spec)
	for i := range int64(500) {
		v := store.data[ks.Key(i)]
		if w, seq, ok := ParseValue(v); !ok || w != PreloadWriter || seq != uint64(i) {
			t.Fatalf("key %d holds %x, want the preload tag of %d", i, v, i)
		}
	}
	if len(progress) == 0 || progress[len(progress)-1] != 500 {
		t.Errorf("progress %v, want it to end at 500", progress)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] <= progress[i-1] {
			t.Errorf("progress went back: %v", progress)
		}
	}
	if n := len(c.samples()); n != 0 {
		t.Errorf("preload recorded %d samples, want none", n)
	}
	for _, op := range h.all() {
		if op.ClientID < PreloadClientBase || op.ClientID >= PreloadClientBase+4 {
			t.Fatalf("preload history op from client %d", op.ClientID)
		}
	}
}

// A key whose write fails, in a way not retried or on every attempt, fails
// the preload once the other keys are written.
func TestPreloadReportsFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		keys      int64
		failEvery int64
		class     string
		want      []string // in the error
		calls     int64
	}{
		// A failure of no known kind is not retried: one write per key.
		{name: "other", keys: 100, failEvery: 10, class: plan.ErrOther, want: []string{"10 of 100"}, calls: 100},
		{name: "every attempt fails", keys: 4, failEvery: 1, class: plan.ErrUnavailable, want: []string{"4 of 4", "after 3 attempts"}, calls: 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := testSpec()
			spec.Keyspace, spec.Preload = tc.keys, true
			store := newFakeStore(0)
			store.failEvery, store.failClass = tc.failEvery, tc.class
			e, _ := newTestEngine(t, spec, store)
			err := e.Preload(context.Background(), 2)
			if !errors.Is(err, ErrPreload) || !errors.Is(err, errInjected) {
				t.Errorf("err = %v, want ErrPreload with the injected failure", err)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %q", err, w)
				}
			}
			if calls := store.calls.Load(); calls != tc.calls {
				t.Errorf("%d writes, want %d", calls, tc.calls)
			}
		})
	}
}

// A write that fails as one that may pass (timed out, no leader, a lost
// connection) is tried again, and every attempt is in the history (a key
// that fails every attempt: TestPreloadReportsFailures).
func TestPreloadRetries(t *testing.T) {
	t.Parallel()
	for _, class := range []string{plan.ErrTimeout, plan.ErrUnavailable, plan.ErrConnection} {
		t.Run(class, func(t *testing.T) {
			t.Parallel()
			spec := testSpec()
			spec.Keyspace, spec.Preload = 100, true
			store := newFakeStore(0)
			store.failFirstEvery, store.failClass = 10, class
			h := &historyLog{}
			e, _ := newTestEngine(t, spec, store, WithHistory(h.add))
			if err := e.Preload(context.Background(), 2); err != nil {
				t.Fatalf("Preload with the first write of every tenth key failing: %v", err)
			}
			if store.len() != 100 {
				t.Errorf("store holds %d keys, want 100", store.len())
			}
			// 100 writes and one more for each of the 10 that failed.
			calls := store.calls.Load()
			if calls != 110 {
				t.Errorf("%d writes, want 110", calls)
			}
			failed := 0
			for _, op := range h.all() {
				if op.Class == class {
					failed++
				}
			}
			if len(h.all()) != int(calls) || failed != 10 {
				t.Errorf("history has %d ops, %d of them %s; want every attempt: %d, 10", len(h.all()), failed, class, calls)
			}
		})
	}
}

func TestPreloadOnlyWhenAsked(t *testing.T) {
	store := newFakeStore(0)
	e, _ := newTestEngine(t, testSpec(), store) // Preload false
	if err := e.Preload(context.Background(), 4); err != nil || store.calls.Load() != 0 {
		t.Errorf("err %v, %d writes; want nothing done", err, store.calls.Load())
	}
}

// The cancellation tests are not parallel: they count goroutines.

func TestCancelClosedLoop(t *testing.T) {
	baseline := runtime.NumGoroutine()
	e, _ := newTestEngine(t, testSpec(), newFakeStore(2*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := e.Run(ctx, closedLoad(8, 8, 10*time.Second), 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Run returned %v after start; want soon after the 100ms cancel", took)
	}
	settle(t, baseline)
}

func TestCancelOpenLoopWithBacklog(t *testing.T) {
	baseline := runtime.NumGoroutine()
	spec := testSpec()
	spec.Clients, spec.Timeout = 2, plan.Duration(300*time.Millisecond)
	store := newFakeStore(0)
	c := &collector{}
	base := time.Now()
	store.stallFrom, store.stallTo = base, base.Add(time.Hour)
	e, err := New(spec, store, c.newSink, base)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	st, err := e.Run(ctx, openLoad(1000, 1000, 10*time.Second), 0)
	took := time.Since(base)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's", err)
	}
	// In-flight ops keep their 300ms timeout; nothing else waits.
	if took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("Run returned after %v, want about 400ms", took)
	}
	if st.Sent < 1 || st.Sent > 4 || st.Dropped < 50 {
		t.Errorf("stats %+v, want 1 or 2 sent (stuck) and about 98 dropped", st)
	}
	for _, s := range c.samples() {
		if s.Class != plan.ErrTimeout {
			t.Errorf("in-flight op ended with %q, want its own timeout, not a cancellation", s.Class)
		}
	}
	settle(t, baseline)
}

func TestRunWaitsForStart(t *testing.T) {
	t.Parallel()
	e, c := newTestEngine(t, testSpec(), newFakeStore(time.Millisecond))
	if _, err := e.Run(context.Background(), closedLoad(1, 1, 50*time.Millisecond), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.samples() {
		if s.Start < 200*time.Millisecond {
			t.Fatalf("op sent at %v, before the load's start at 200ms", s.Start)
		}
	}
}

var _ metrics.Sink = (*sliceSink)(nil)
