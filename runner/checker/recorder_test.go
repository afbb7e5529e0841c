package checker

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coordlab/scenario/plan"
)

func TestRecorder(t *testing.T) {
	tests := []struct {
		name     string
		sample   int
		exclude  []string
		records  []Entry
		wantKeys []string // keys of History, in order
		wantOps  []string // ops of History, in order
		skipped  int64
	}{
		{
			name:   "first keys seen are sampled",
			sample: 2,
			records: []Entry{
				put(0, "a", 0, 1).on("a"), put(0, "a", 0, 1).on("b"), put(0, "a", 0, 1).on("c"),
				get(0, "a", 2, 3).on("a"), del(0, 2, 3).on("c"), get(0, "a", 2, 3).on("b"),
			},
			wantKeys: []string{"a", "b", "a", "b"},
			wantOps:  []string{plan.OpPut, plan.OpPut, plan.OpGet, plan.OpGet},
		},
		{
			name:   "zero samples every key",
			sample: 0,
			records: []Entry{
				put(0, "a", 0, 1).on("a"), put(0, "a", 0, 1).on("b"), put(0, "a", 0, 1).on("c"),
			},
			wantKeys: []string{"a", "b", "c"},
			wantOps:  []string{plan.OpPut, plan.OpPut, plan.OpPut},
		},
		{
			name:   "range is skipped and takes no sample",
			sample: 1,
			records: []Entry{
				entry(0, plan.OpRange, "", false, 0, 1).on("r"), put(0, "a", 0, 1).on("a"),
				entry(0, plan.OpRange, "", false, 0, 1).on("a"),
			},
			wantKeys: []string{"a"},
			wantOps:  []string{plan.OpPut},
			skipped:  2,
		},
		{
			name:    "excluded workload keeps its writes",
			exclude: []string{"serial"},
			records: []Entry{
				put(0, "a", 0, 1).by("serial"), get(0, "a", 2, 3).by("serial"), txn(0, "b", 4, 5).by("serial"),
				del(0, 6, 7).by("serial"), get(1, "a", 2, 3).by("linear"),
			},
			wantKeys: []string{"k", "k", "k", "k"},
			wantOps:  []string{plan.OpPut, plan.OpTxn, plan.OpDelete, plan.OpGet},
			skipped:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecorder(tt.sample)
			for _, w := range tt.exclude {
				r.Exclude(w)
			}
			for _, e := range tt.records {
				r.Record(e.Workload, e.HistoryOp)
			}
			var keys, ops []string
			for _, e := range r.History() {
				keys, ops = append(keys, e.Key), append(ops, e.Op)
			}
			if !slices.Equal(keys, tt.wantKeys) || !slices.Equal(ops, tt.wantOps) {
				t.Errorf("history keys %v ops %v, want %v %v", keys, ops, tt.wantKeys, tt.wantOps)
			}
			if got := r.Skipped(); got != tt.skipped {
				t.Errorf("skipped %d, want %d", got, tt.skipped)
			}
		})
	}
}

func TestRecorderCopiesValues(t *testing.T) {
	r := NewRecorder(0)
	e := put(0, "a", 0, 1)
	r.Record("w", e.HistoryOp)
	e.Value[0] = 'x'
	if got := string(r.History()[0].Value); got != "a" {
		t.Fatalf("recorded value %q changed with the caller's buffer", got)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	const workers, each, sample = 8, 200, 5
	r := NewRecorder(sample)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				key := string(rune('a' + (w+i)%10))
				r.Record("w", put(w, "v", i, i+1).on(key).HistoryOp)
				r.Record("w", entry(w, plan.OpRange, "", false, i, i+1).HistoryOp)
			}
		})
	}
	wg.Wait()
	keys := map[string]bool{}
	for _, e := range r.History() {
		keys[e.Key] = true
	}
	if len(keys) != sample {
		t.Errorf("%d keys sampled, want %d", len(keys), sample)
	}
	if got := r.Skipped(); got != workers*each {
		t.Errorf("skipped %d, want %d", got, workers*each)
	}
}

func TestSampledRecorderSpreadsOverTheKeyspace(t *testing.T) {
	const keyspace, sample = 10000, 200
	r := NewSampledRecorder(sample, keyspace)
	for i := range keyspace {
		key := fmt.Sprintf("key-%06d", i)
		r.Record("w", put(0, "v", 0, 1).on(key).HistoryOp)
		r.Record("w", get(0, "v", 2, 3).on(key).HistoryOp)
	}
	keys := map[string]bool{}
	var firstHalf int
	for _, e := range r.History() {
		if !keys[e.Key] && e.Key < fmt.Sprintf("key-%06d", keyspace/2) {
			firstHalf++
		}
		keys[e.Key] = true
	}
	// Binomial(10000, 0.02): 200 ± 14; a preload-order sample would hold
	// only the first 200 keys.
	if n := len(keys); n < 150 || n > 250 {
		t.Errorf("%d keys sampled, want about %d", n, sample)
	}
	if firstHalf < len(keys)/4 || firstHalf > 3*len(keys)/4 {
		t.Errorf("%d of %d sampled keys in the first half of the keyspace: not spread", firstHalf, len(keys))
	}
	if got := len(r.History()); got != 2*len(keys) {
		t.Errorf("%d operations kept for %d keys, want every op on a sampled key", got, len(keys))
	}
	if all := NewSampledRecorder(sample, sample); len(recordKeys(all, 300)) != 300 {
		t.Error("a keyspace no larger than the sample should keep every key")
	}
}

func recordKeys(r *Recorder, n int) map[string]bool {
	for i := range n {
		r.Record("w", put(0, "v", 0, 1).on(fmt.Sprint(i)).HistoryOp)
	}
	keys := map[string]bool{}
	for _, e := range r.History() {
		keys[e.Key] = true
	}
	return keys
}

func TestFNV64aMatchesHashFNV(t *testing.T) {
	for _, k := range []string{"", "a", "/scenario/w/00042", strings.Repeat("key", 40)} {
		h := fnv.New64a()
		h.Write([]byte(k))
		if got, want := fnv64a(k), h.Sum64(); got != want {
			t.Errorf("fnv64a(%q) = %x, want %x", k, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { fnv64a("/scenario/w/00042") }); n != 0 {
		t.Errorf("fnv64a allocates %v times", n)
	}
}

func TestBoundedRecorderKeepsWholeKeys(t *testing.T) {
	tests := []struct {
		name            string
		keys, perKey    int
		maxOps          int
		wantMaxHistory  int
		wantSomeKept    bool
		wantSomeShedOps bool
	}{
		{name: "under the bound", keys: 10, perKey: 10, maxOps: 1000, wantMaxHistory: 100, wantSomeKept: true},
		{name: "many keys past it", keys: 64, perKey: 50, maxOps: 400, wantMaxHistory: 400, wantSomeKept: true, wantSomeShedOps: true},
		{name: "one key past it", keys: 1, perKey: 50, maxOps: 20, wantMaxHistory: 20, wantSomeShedOps: true},
		{name: "no bound", keys: 64, perKey: 50, maxOps: 0, wantMaxHistory: 64 * 50, wantSomeKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecorder(0)
			r.Bound(tt.maxOps)
			// Interleaved, as a run's clients send them: op i of every key
			// before op i+1 of any.
			for i := range tt.perKey {
				for k := range tt.keys {
					r.Record("w", put(k, "v", i, i+1).on(fmt.Sprint("key-", k)).HistoryOp)
				}
			}
			h := r.History()
			if len(h) > tt.wantMaxHistory {
				t.Errorf("history holds %d operations, want at most %d", len(h), tt.wantMaxHistory)
			}
			perKey := map[string]int{}
			for _, e := range h {
				perKey[e.Key]++
			}
			for k, n := range perKey {
				if n != tt.perKey {
					t.Errorf("key %s kept %d of its %d operations: a key is kept whole or not at all", k, n, tt.perKey)
				}
			}
			if (len(perKey) > 0) != tt.wantSomeKept {
				t.Errorf("%d keys kept whole; want some: %v", len(perKey), tt.wantSomeKept)
			}
			keys, ops := r.Shed()
			if (ops > 0) != tt.wantSomeShedOps || keys+len(perKey) != tt.keys {
				t.Errorf("shed %d keys (%d operations), kept %d, of %d keys", keys, ops, len(perKey), tt.keys)
			}
			if int64(len(h))+ops > int64(tt.keys*tt.perKey) {
				t.Errorf("%d kept + %d shed operations is more than the %d recorded", len(h), ops, tt.keys*tt.perKey)
			}
		})
	}
}
