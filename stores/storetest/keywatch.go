package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// KeyWatcherContract checks a store's KeyWatcher on a running cluster:
// two watchers list what is there (72 keys, more than a listing reads at
// once), with values and revisions, then learn of new values, of a key
// created and of a key deleted, and never of a key outside their prefix;
// each ends with the store's own view of the keys (Read). Under
// WatchEvents every value is told, once, in the order it was written;
// under WatchSnapshots a key's revisions never go back.
func KeyWatcherContract(t *testing.T, ctx context.Context, drv stores.Driver, eps []stores.Endpoint) {
	t.Helper()
	const prefix = "/kwc/cfg/"
	w := plan.WorkloadSpec{Name: "kwc", KeyPrefix: prefix}
	opts := stores.ClientOptions{Endpoints: eps, Conns: 1, Consistency: drv.StrongRead, Timeout: 5 * time.Second, Workload: w}
	cl, err := drv.NewClient(ctx, opts)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	defer cl.Close()
	put := func(key, value string) {
		t.Helper()
		if res := cl.Do(ctx, stores.Op{Kind: plan.OpPut, Key: key, Value: []byte(value)}); res.Err != nil {
			t.Fatalf("put %s=%s: %v", key, value, res.Err)
		}
	}
	put(prefix+"a", "a0")
	put(prefix+"b", "b0")
	put("/kwc/other", "x0")
	// More keys than a ZooKeeper listing reads at once, so that the
	// listing's pipelined reads and the watches they set are checked.
	const many = 70
	manyKey := func(i int) string { return fmt.Sprintf("%sm/%03d", prefix, i) }
	for i := range many {
		put(manyKey(i), fmt.Sprintf("m%d-0", i))
	}

	kw, err := drv.NewKeyWatcher(ctx, opts)
	if err != nil {
		t.Fatalf("NewKeyWatcher: %v", err)
	}
	defer func() {
		if err := kw.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	sem := kw.Semantics()
	if sem != stores.WatchEvents && sem != stores.WatchSnapshots {
		t.Fatalf("Semantics() = %q", sem)
	}
	wctx, stop := context.WithCancel(ctx)
	logs := []*eventLog{{}, {}}
	done := make(chan error, len(logs))
	for i, l := range logs {
		go func() { done <- kw.Watch(wctx, i, prefix, l.add) }()
	}
	defer func() {
		stop()
		for range logs {
			if err := <-done; err != nil {
				t.Errorf("Watch after its context ended: %v", err)
			}
		}
	}()
	want := map[string]string{prefix + "a": "a0", prefix + "b": "b0"}
	for i := range many {
		want[manyKey(i)] = fmt.Sprintf("m%d-0", i)
	}
	converge := func(what string) {
		t.Helper()
		WaitFor(t, ctx, 30*time.Second, what, func() string {
			for i, l := range logs {
				if v, err := l.view(); err != nil {
					return fmt.Sprintf("watcher %d: %v", i, err)
				} else if !maps.Equal(v, want) {
					return fmt.Sprintf("watcher %d sees %v, want %v", i, v, want)
				}
			}
			return ""
		})
	}
	converge("the first listing")
	for i, l := range logs {
		first := l.all()[0]
		if first.Kind != stores.WatchList || len(first.Values) != len(first.Keys) || len(first.Revisions) != len(first.Keys) {
			t.Fatalf("watcher %d's first event is %+v; want a listing with a value and a revision per key", i, first)
		}
		for j, r := range first.Revisions {
			if r <= 0 {
				t.Errorf("watcher %d listed %s at revision %d; want the key's own revision", i, first.Keys[j], r)
			}
		}
	}

	var written []string
	for i := range 10 {
		v := fmt.Sprintf("a%d", i+1)
		put(prefix+"a", v)
		written = append(written, v)
	}
	put(prefix+"c", "c0")
	put("/kwc/other", "x1")
	if res := cl.Do(ctx, stores.Op{Kind: plan.OpDelete, Key: prefix + "b"}); res.Err != nil {
		t.Fatalf("delete: %v", res.Err)
	}
	delete(want, prefix+"b")
	want[prefix+"a"], want[prefix+"c"] = "a10", "c0"
	converge("the new values, the created and the deleted key")
	// With no key created or deleted after them, these are told only by
	// the watches the first listing set.
	for _, i := range []int{0, many / 2, many - 1} {
		put(manyKey(i), fmt.Sprintf("m%d-1", i))
		want[manyKey(i)] = fmt.Sprintf("m%d-1", i)
	}
	converge("new values of keys listed first")

	read, err := kw.Read(ctx, prefix)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	got := map[string]string{}
	for k, v := range read {
		got[k] = string(v)
	}
	if !maps.Equal(got, want) {
		t.Errorf("Read = %v, want %v", got, want)
	}
	for i, l := range logs {
		seen := l.values(prefix + "a")
		if sem == stores.WatchEvents && !slices.Equal(seen, append([]string{"a0"}, written...)) {
			t.Errorf("watcher %d was told %v of %sa; an events watch owes a0 and then every value written: %v", i, seen, prefix, written)
		}
		for _, ev := range l.all() {
			if ev.Key == "/kwc/other" || slices.Contains(ev.Keys, "/kwc/other") {
				t.Errorf("watcher %d was told of a key outside its prefix: %+v", i, ev)
			}
		}
	}
}

// eventLog is what one watcher learned.
type eventLog struct {
	mu     sync.Mutex
	events []stores.WatchEvent
}

func (l *eventLog) add(ev stores.WatchEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *eventLog) all() []stores.WatchEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// view is what the watcher believes the keys hold, checking on the way
// that no key's revision goes back.
func (l *eventLog) view() (map[string]string, error) {
	view, revs := map[string]string{}, map[string]int64{}
	seen := func(k string, v []byte, r int64) error {
		if r < revs[k] {
			return fmt.Errorf("%s at revision %d after revision %d", k, r, revs[k])
		}
		revs[k], view[k] = r, string(v)
		return nil
	}
	for _, ev := range l.all() {
		switch ev.Kind {
		case stores.WatchList:
			clear(view)
			for i, k := range ev.Keys {
				if i >= len(ev.Values) || i >= len(ev.Revisions) {
					return nil, fmt.Errorf("a listing of %d keys with %d values and %d revisions", len(ev.Keys), len(ev.Values), len(ev.Revisions))
				}
				if err := seen(k, ev.Values[i], ev.Revisions[i]); err != nil {
					return nil, err
				}
			}
		case stores.WatchPut:
			if err := seen(ev.Key, ev.Value, ev.Revision); err != nil {
				return nil, err
			}
		case stores.WatchDelete:
			delete(view, ev.Key)
		}
	}
	return view, nil
}

// values is every value the watcher was told key held, in order, each
// once in a row.
func (l *eventLog) values(key string) []string {
	var out []string
	add := func(v string) {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	for _, ev := range l.all() {
		switch ev.Kind {
		case stores.WatchList:
			if i := slices.Index(ev.Keys, key); i >= 0 {
				add(string(ev.Values[i]))
			}
		case stores.WatchPut:
			if ev.Key == key {
				add(string(ev.Value))
			}
		}
	}
	return out
}
