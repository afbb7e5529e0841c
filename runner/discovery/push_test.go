package discovery

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
)

// fakeKV is an in-memory key-value store with etcd's watch model: every
// change, in revision order, once. dropNth, when set, loses the nth event
// sent to watcher 1; slow delays each watcher's events, as a network would,
// and slowList each listing.
type fakeKV struct {
	dropNth  int
	slow     time.Duration
	slowList time.Duration

	mu   sync.Mutex
	rev  int64
	data map[string][]byte
	mods map[string]int64
	subs map[int]chan stores.WatchEvent
	sent map[int]int
}

func newFakeKV() *fakeKV {
	return &fakeKV{data: map[string][]byte{}, mods: map[string]int64{}, subs: map[int]chan stores.WatchEvent{}, sent: map[int]int{}}
}

func (f *fakeKV) put(key string, v []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rev++
	f.data[key], f.mods[key] = v, f.rev
	for w, ch := range f.subs {
		f.sent[w]++
		if w == 1 && f.sent[w] == f.dropNth {
			continue
		}
		ch <- stores.WatchEvent{Kind: stores.WatchPut, Key: key, Value: v, Revision: f.rev}
	}
}

func (f *fakeKV) Watch(ctx context.Context, watcher int, _ string, fn func(stores.WatchEvent)) error {
	ch := make(chan stores.WatchEvent, 1<<16)
	f.mu.Lock()
	ls := stores.WatchEvent{Kind: stores.WatchList, Revision: f.rev}
	for _, k := range slices.Sorted(maps.Keys(f.data)) {
		ls.Keys, ls.Values, ls.Revisions = append(ls.Keys, k), append(ls.Values, f.data[k]), append(ls.Revisions, f.mods[k])
	}
	f.subs[watcher] = ch
	f.mu.Unlock()
	if err := sleepUntil(ctx, time.Now().Add(f.slowList)); err != nil {
		return nil
	}
	fn(ls)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-ch:
			time.Sleep(f.slow)
			fn(ev)
		}
	}
}

func (f *fakeKV) Read(context.Context, string) (map[string][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.data), nil
}

func (f *fakeKV) Semantics() stores.WatchSemantics { return stores.WatchEvents }
func (f *fakeKV) Close() error                     { return nil }

// fakeWriter is a workload engine that writes tagged values to 5 keys,
// one every 2 ms for the load's duration (at least three), reporting each
// as its history.
type fakeWriter struct {
	kv      *fakeKV
	base    time.Time
	written func(workload.HistoryOp)
	seq     uint64
}

func (w *fakeWriter) Run(ctx context.Context, l plan.LoadSpec, start time.Duration) (workload.Stats, error) {
	if err := sleepUntil(ctx, w.base.Add(start)); err != nil {
		return workload.Stats{}, err
	}
	// At least three writes per load, however late this goroutine runs: a
	// busy machine once stretched the 150 ms loads to none at all.
	for end, n := start+l.Duration.D(), 0; n < 3 || time.Since(w.base) < end; n++ {
		w.seq++
		key := "/cfg/k" + string(rune('0'+w.seq%5))
		v := workload.AppendValue(nil, 16, 3, w.seq)
		call := time.Since(w.base)
		w.kv.put(key, v)
		w.written(workload.HistoryOp{ClientID: 3, Op: plan.OpPut, Key: key, Value: v, Call: call, Return: time.Since(w.base)})
		if err := sleepUntil(ctx, time.Now().Add(2*time.Millisecond)); err != nil {
			return workload.Stats{}, err
		}
	}
	return workload.Stats{}, nil
}

// pushEnd is when playPush's workload ends: samples of writes sent at or
// after it fall outside the phases and are not recorded.
const pushEnd = 300 * time.Millisecond

// playPush lists with 3 watchers before the timeline, as the runner does,
// plays two loads of writes, and returns the report, the samples and the
// writes sent before pushEnd, in order.
func playPush(t *testing.T, kv *fakeKV) (PushReport, *samples, []workload.HistoryOp) {
	t.Helper()
	spec := plan.WorkloadSpec{Name: "cfg", KeyPrefix: "/cfg/", Watchers: 3, Mix: []plan.OpWeight{{Op: plan.OpPut, Weight: 1}}}
	sink := &samples{}
	// A value written before the watchers list, as a preload would.
	pre := workload.AppendValue(nil, 16, workload.PreloadWriter, 0)
	kv.put("/cfg/k0", pre)
	preAt := time.Now()
	e, err := NewPush(spec, kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.List(ctx); err != nil {
		t.Fatal(err)
	}
	base := time.Now().Add(20 * time.Millisecond)
	var inTime []workload.HistoryOp
	writer := &fakeWriter{kv: kv, base: base, written: func(op workload.HistoryOp) {
		if op.Call < pushEnd {
			inTime = append(inTime, op)
		}
		e.Written(op)
	}}
	err = e.Begin(PushConfig{Load: writer, Sink: sink, Base: base, End: pushEnd, Preloaded: []workload.HistoryOp{
		{ClientID: workload.PreloadWriter, Op: plan.OpPut, Key: "/cfg/k0", Value: pre, Call: preAt.Sub(base), Return: preAt.Sub(base)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	load := plan.LoadSpec{Workload: "cfg", Mode: plan.LoadClosed, Duration: plan.Duration(150 * time.Millisecond)}
	if _, err := e.Run(ctx, load, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(ctx, load, 150*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	return e.Report(), sink, inTime
}

func TestPushEngine(t *testing.T) {
	kv := newFakeKV()
	kv.slow = 100 * time.Microsecond
	rep, s, sent := playPush(t, kv)
	inTime := len(sent)
	if !rep.Watch.OK() || rep.Watch.Watchers != 3 {
		t.Fatalf("watch verdict %+v; want kept promises of 3 watchers", rep.Watch)
	}
	if rep.Writes == 0 || rep.FannedOut != rep.Writes {
		t.Errorf("%d of %d writes fanned out; every watcher is told every write", rep.FannedOut, rep.Writes)
	}
	// Only writes sent before the end have samples. On a busy machine the
	// writer's goroutine once ran so late that all of them came after it
	// (0 samples for 6 writes in a CI run).
	if inTime < rep.Writes {
		t.Logf("%d of %d writes were sent after the workload's end: no samples for them", rep.Writes-inTime, rep.Writes)
	}
	if n := len(s.of(plan.OpNotify)); n != 3*inTime {
		t.Errorf("%d notify samples for %d writes sent in time and 3 watchers", n, inTime)
	}
	fan := s.of(plan.OpFanout)
	if len(fan) != inTime {
		t.Errorf("%d fanout samples, %d writes sent in time (all %d fanned out)", len(fan), inTime, rep.FannedOut)
	}
	for _, x := range append(fan, s.of(plan.OpNotify)...) {
		if x.End < x.Intended || x.Start < x.Intended || x.Start > x.End {
			t.Errorf("%s sample sent %v, acknowledged %v, told %v: out of order", x.Op, x.Intended, x.Start, x.End)
		}
	}
}

// TestPushEngineListsBeforeTheTimeline: a slow listing, made before the
// timeline, is not taken from the first load, and what the watchers were
// told before the base was known is judged on its clock.
func TestPushEngineListsBeforeTheTimeline(t *testing.T) {
	kv := newFakeKV()
	kv.slowList = 400 * time.Millisecond
	rep, _, sent := playPush(t, kv)
	if len(sent) == 0 {
		t.Fatal("no write was sent before the workload's end")
	}
	// The first load starts 50 ms after the base; listing inside it would
	// hold its first write back by the listing's 400 ms.
	if first := sent[0].Call; first >= kv.slowList {
		t.Errorf("first write sent %v after the base: the listing (%v) delayed the first load", first, kv.slowList)
	}
	if !rep.Watch.OK() {
		t.Fatalf("watch verdict %+v; want kept promises", rep.Watch)
	}
	// Each watcher's listing, told before Begin, and every write's event.
	if want := 3 * (1 + rep.Writes); rep.Watch.Events != want {
		t.Errorf("the watchers' logs hold %d events, want %d (3 listings and 3 per write)", rep.Watch.Events, want)
	}
}

func TestPushEngineCatchesADroppedEvent(t *testing.T) {
	kv := newFakeKV()
	// Early: a busy machine may stretch the writer's 2 ms sleeps to tens
	// of milliseconds, leaving only a few writes in the 250 ms of load.
	kv.dropNth = 3
	rep, _, _ := playPush(t, kv)
	if rep.Watch.OK() {
		t.Fatalf("watcher 1 lost an event, but the verdict is %+v", rep.Watch)
	}
	missed := false
	for _, v := range rep.Watch.Violations {
		if v.Watcher != 1 {
			t.Errorf("violation blamed on watcher %d: %+v", v.Watcher, v)
		}
		missed = missed || v.Kind == "missed"
	}
	if !missed {
		t.Errorf("no missed event among %+v", rep.Watch.Violations)
	}
}
