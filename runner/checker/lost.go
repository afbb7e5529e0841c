package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/coordlab/scenario/plan"
)

// maxLostKeys bounds LostResult.Keys.
const maxLostKeys = 50

// LostResult is the outcome of a lost-writes check.
type LostResult struct {
	// Checked is the number of keys with at least one acknowledged write,
	// each read back once.
	Checked int
	// Lost is the number of those keys whose value read back is none of
	// the values an acknowledged write could have left.
	Lost int
	// Keys lists lost keys in sorted order, at most maxLostKeys of them.
	Keys []string
}

// candidate is a state a key may be left in by one write.
type candidate struct {
	value  string
	exists bool
}

// CheckLostWrites reads back, through read, every key of h with an
// acknowledged write and counts the keys whose value could not be the
// outcome of the writes in h. Run it after the load has stopped and before
// anything else writes.
//
// Let L be the acknowledged (successful) put, txn or delete on the key that
// returned last. The key may hold what L left (its value, or absent for a
// delete), or what any of these other writes left, because each could have
// taken effect after L:
//
//   - an acknowledged write that overlapped L, i.e. returned at or after
//     L's call;
//   - a write that failed with an indeterminate class (timeout, connection,
//     unavailable), wherever it was called: it may have been applied at any
//     time after its call, as the linearizability check also assumes.
//
// Writes that failed with class "other" are taken as not applied. A key is
// lost when what read returns matches none of these. Keys with no
// acknowledged write are not checked: nothing was promised for them. An
// error from read, or ctx ending, stops the check. read is called from
// several goroutines at once.
func CheckLostWrites(ctx context.Context, h []Entry, read func(ctx context.Context, key string) (value []byte, found bool, err error)) (LostResult, error) {
	byKey := map[string][]Entry{}
	for _, e := range h {
		if isWrite(e.Op) {
			byKey[e.Key] = append(byKey[e.Key], e)
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	type readResult struct {
		value []byte
		found bool
	}
	// Reads go out in parallel: on a geo cluster each strong read costs
	// the leader a round trip to its quorum, and one after another they
	// took half a minute for 200 keys.
	reads := make([]readResult, len(keys))
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	var failOnce sync.Once
	var failed error // the first read to fail; the others were cut short by it
	for range min(readBackParallelism, len(keys)) {
		wg.Go(func() {
			for i := range next {
				v, found, err := read(rctx, keys[i])
				reads[i] = readResult{value: v, found: found}
				if err != nil {
					failOnce.Do(func() { failed = fmt.Errorf("checking lost writes: reading back %q: %w", keys[i], err) })
					cancel()
				}
			}
		})
	}
feed:
	for i, k := range keys {
		if candidates(byKey[k]) == nil {
			continue
		}
		select {
		case next <- i:
		case <-rctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if failed != nil {
		return LostResult{}, failed
	}
	if err := ctx.Err(); err != nil {
		return LostResult{}, fmt.Errorf("checking lost writes: %w", err)
	}

	var res LostResult
	for i, k := range keys {
		accept := candidates(byKey[k])
		if accept == nil {
			continue
		}
		r := reads[i]
		res.Checked++
		got := candidate{exists: r.found}
		if r.found {
			got.value = string(r.value)
		}
		if slices.Contains(accept, got) {
			continue
		}
		res.Lost++
		if len(res.Keys) < maxLostKeys {
			res.Keys = append(res.Keys, k)
		}
	}
	return res, nil
}

// readBackParallelism is how many keys CheckLostWrites reads at once.
const readBackParallelism = 16

// candidates returns the states the writes on one key may have left it in,
// as documented on CheckLostWrites, or nil when none was acknowledged.
func candidates(writes []Entry) []candidate {
	last := -1
	for i, w := range writes {
		if w.Class != "" {
			continue
		}
		if last < 0 || cmp.Or(cmp.Compare(w.Return, writes[last].Return), cmp.Compare(w.Call, writes[last].Call)) > 0 {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	l := writes[last]
	var out []candidate
	for i, w := range writes {
		switch {
		case i == last:
		case w.Class == "" && w.Return >= l.Call:
		case w.Class != "" && indeterminate(w.Class):
		default:
			continue
		}
		c := candidate{}
		if w.Op != plan.OpDelete {
			c = candidate{value: string(w.Value), exists: true}
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}
