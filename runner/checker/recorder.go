// Package checker records a sample of a run's key-value history and checks
// it afterwards: for linearizability, with porcupine, and for lost writes, by
// reading every sampled key back once the load has stopped.
//
// The model is a register per key. put and txn write a value (every txn the
// workloads send writes its value in either branch, as HistoryOp documents),
// delete removes the key, get observes it. range reads many keys at once and
// is not modelled.
package checker

import (
	"maps"
	"slices"
	"sync"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/workload"
)

// Entry is one recorded operation and the workload that sent it. Generator
// ids are only unique within a workload, so the pair identifies a client.
type Entry struct {
	Workload string
	workload.HistoryOp
}

// Recorder keeps the operations on a bounded sample of keys. It is safe for
// concurrent use; Record is meant to be passed to workload.WithHistory.
type Recorder struct {
	mu       sync.Mutex
	limit    int
	sampled  map[string]bool
	excluded map[string]bool
	history  []Entry
	skipped  int64
	// maxOps bounds the history (Bound); shed keys left the sample to
	// keep it there, and shedOps of their operations went with them.
	maxOps  int
	shed    map[string]bool
	shedOps int64
	// A hash sample (NewSampledRecorder) keeps keys whose hash modulo
	// buckets is below inSample; buckets 0 means no hash sample.
	buckets, inSample uint64
}

// NewRecorder returns a recorder that keeps the operations on the first
// sampleKeys distinct keys it sees, or on every key when sampleKeys is 0 or
// less. Checking cost grows with the operations per key and the number of
// keys, so a bounded sample keeps the check affordable on long runs while
// every operation on a sampled key is still kept: a partial history of one
// key could not be checked at all.
func NewRecorder(sampleKeys int) *Recorder {
	return &Recorder{limit: sampleKeys, sampled: map[string]bool{}, excluded: map[string]bool{}, shed: map[string]bool{}}
}

// NewSampledRecorder returns a recorder that keeps the operations on about
// sampleKeys keys drawn evenly from a keyspace of about keyspace keys: a
// key is in the sample when its hash falls in the first sampleKeys of
// keyspace buckets. Unlike NewRecorder's first-seen sample, it is not
// skewed towards the keys a preload writes first, and deciding needs no
// lock, so operations on other keys cost the hot path almost nothing. With
// keyspace <= sampleKeys every key is kept.
func NewSampledRecorder(sampleKeys int, keyspace int64) *Recorder {
	r := NewRecorder(0)
	if sampleKeys > 0 && keyspace > int64(sampleKeys) {
		r.buckets, r.inSample = uint64(keyspace), uint64(sampleKeys)
	}
	return r
}

// outsideHashSample reports whether a hash sample leaves key out.
func (r *Recorder) outsideHashSample(key string) bool {
	if r.buckets == 0 {
		return false
	}
	return fnv64a(key)%r.buckets >= r.inSample
}

// fnv64a is FNV-1a over key, as hash/fnv computes it, without the
// allocations hash/fnv needs: Record runs for every operation.
func fnv64a(key string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= prime
	}
	return h
}

// Exclude stops the recorder keeping get operations of the named workload.
// The runner excludes workloads that read with serializable consistency:
// those reads may be stale by design, so checking them for linearizability
// would report violations the store never promised to avoid. The workload's
// writes are still recorded, because other workloads' reads observe them.
func (r *Recorder) Exclude(workloadName string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.excluded[workloadName] = true
}

// Record adds op, sent by the named workload, to the history if its key is
// in the sample. Operations the model cannot check (range, and gets of
// excluded workloads) are counted by Skipped instead.
func (r *Recorder) Record(workloadName string, op workload.HistoryOp) {
	if modelled(op.Op) && r.outsideHashSample(op.Key) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case op.Op == plan.OpGet && r.excluded[workloadName]:
		r.skipped++
		return
	case !modelled(op.Op):
		r.skipped++
		return
	}
	if !r.sampled[op.Key] {
		if r.shed[op.Key] || r.limit > 0 && len(r.sampled) >= r.limit {
			return
		}
		r.sampled[op.Key] = true
	}
	// HistoryOp.Value may share memory with the caller's buffers.
	op.Value = append([]byte(nil), op.Value...)
	r.history = append(r.history, Entry{Workload: workloadName, HistoryOp: op})
	if r.maxOps > 0 && len(r.history) > r.maxOps {
		r.shedHalf()
	}
}

// Bound keeps the history at no more than maxOps operations (0: no
// bound), so that a long run's recorder does not grow with its length.
// Each time the bound is reached, half of the sampled keys leave the
// sample with every operation recorded on them, and later operations on
// them are not recorded: a key's history is kept whole or not at all,
// because part of one cannot be checked. A long run checks fewer keys,
// each from its first operation to its last.
func (r *Recorder) Bound(maxOps int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.maxOps = maxOps
}

// shedHalf drops every second sampled key in key order and compacts the
// history in place; the caller holds r.mu. Amortised over the maxOps/2
// operations recorded before the next call, it costs O(1) per operation.
func (r *Recorder) shedHalf() {
	keys := slices.Sorted(maps.Keys(r.sampled))
	for i, k := range keys {
		if i%2 == 1 || len(keys) == 1 { // one key past the bound by itself goes too
			r.shed[k] = true
			delete(r.sampled, k)
		}
	}
	kept := r.history[:0]
	for _, e := range r.history {
		if r.shed[e.Key] {
			r.shedOps++
			continue
		}
		kept = append(kept, e)
	}
	clear(r.history[len(kept):]) // let the shed values go
	r.history = kept
}

// Shed reports how many keys left the sample to keep the history within
// its bound, and how many of their recorded operations went with them.
func (r *Recorder) Shed() (keys int, ops int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.shed), r.shedOps
}

// History returns a copy of the recorded operations in the order they were
// recorded.
func (r *Recorder) History() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Entry(nil), r.history...)
}

// Skipped is the number of operations seen but not recorded because the
// model cannot check them: range operations and gets of excluded workloads.
// Operations on keys outside the sample are not counted.
func (r *Recorder) Skipped() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}

// modelled reports whether the register model can check operations of kind op.
func modelled(op string) bool {
	switch op {
	case plan.OpPut, plan.OpGet, plan.OpDelete, plan.OpTxn:
		return true
	}
	return false
}

// isWrite reports whether op changes its key.
func isWrite(op string) bool {
	return op == plan.OpPut || op == plan.OpDelete || op == plan.OpTxn
}

// indeterminate reports whether a failed operation of the given error class
// may still have taken effect: the request may have reached the store before
// the client gave up on it or lost the connection, and "unavailable" covers
// leader changes and leader failures, after which a proposal the old leader
// accepted may still commit. Every other class ("other") is taken as a
// definite refusal, e.g. a request the store rejected as invalid.
func indeterminate(class string) bool {
	switch class {
	case plan.ErrTimeout, plan.ErrConnection, plan.ErrUnavailable:
		return true
	}
	return false
}
