package checker

import (
	"slices"
	"sort"
	"time"
)

// Write is one write of a key-value workload to a watched key, as the
// value-watch checker sees it. Value names the value written: every value
// a workload writes is unique, so a value a watcher was told points at
// one write.
type Write struct {
	Key    string        `json:"key"`
	Value  string        `json:"value,omitempty"` // "" for a delete
	Call   time.Duration `json:"call"`
	Return time.Duration `json:"return"`
	// Acked says the store acknowledged it; a write that failed or timed
	// out may still have happened.
	Acked bool `json:"acked"`
}

// CheckValueWatches judges what every watcher of a key-value workload's
// keys was told against the writes to them (writes, all of them, failed
// ones included) and against final, the store's values after the run
// settled, under model (WatchEvents or WatchSnapshots, per key).
//
// Both models: a watcher is never told a value nobody wrote (phantom); a
// key's revisions never go back, and one revision holds one value
// (out-of-order); a key's value is never replaced by one whose write was
// acknowledged before the first's was sent (out-of-order in real time);
// the watcher's last view equals final (diverged). Events model, besides:
// revisions strictly increase across the watch (duplicate when one
// repeats), each value is told once (duplicate), and every write sent
// after the last listing and acknowledged is told (missed). Snapshots
// model: such writes never told are counted in Skipped.
func CheckValueWatches(model string, writes []Write, logs []WatchLog, final map[string]string) WatchResult {
	byValue := make(map[string]*Write, len(writes))
	for i := range writes {
		if writes[i].Value != "" {
			byValue[writes[i].Value] = &writes[i]
		}
	}
	res := WatchResult{Watchers: len(logs), Violations: []WatchViolation{}}
	for _, l := range logs {
		res.Events += len(l.Seen)
		vw := valueWatch{model: model, log: l, writes: byValue,
			view: map[string]string{}, rev: map[string]int64{}, atRev: map[string]string{}, last: map[string]string{}, told: map[string]bool{}}
		vw.run()
		vs := vw.vs
		vs = append(vs, vw.owed(writes, &res.Skipped)...)
		vs = append(vs, vw.diverged(final)...)
		res.Violations = append(res.Violations, vs...)
	}
	return res
}

// valueWatch replays one watcher's log.
type valueWatch struct {
	model  string
	log    WatchLog
	writes map[string]*Write
	view   map[string]string // key -> value, as the watcher believes
	rev    map[string]int64  // key -> the newest revision told
	atRev  map[string]string // key -> the value told at that revision
	last   map[string]string // key -> the last value told, deleted since or not
	told   map[string]bool   // values told
	// firstListed and listedAt are when the first and the last listing
	// came.
	firstListed, listedAt time.Duration
	listed                bool
	global                int64 // the newest revision of the watch (events model)
	vs                    []WatchViolation
}

func (w *valueWatch) run() {
	for i, s := range w.log.Seen {
		switch s.Kind {
		case SeenList:
			if !w.listed {
				w.firstListed = s.At
			}
			w.listed, w.listedAt = true, s.At
			if w.model == WatchEvents {
				w.global = max(w.global, s.Revision)
			}
			listed := make(map[string]bool, len(s.Keys))
			for j, k := range s.Keys {
				listed[k] = true
				if j < len(s.Values) && j < len(s.Revisions) {
					w.observe(i, k, s.Values[j], s.Revisions[j], false)
				}
			}
			for k := range w.view {
				if !listed[k] {
					delete(w.view, k)
				}
			}
		case SeenPut, SeenDelete:
			if w.model == WatchEvents {
				switch {
				case s.Revision == w.global:
					w.add(i, ViolationDuplicate, s.Key, "revision %d told twice", s.Revision)
				case s.Revision < w.global:
					w.add(i, ViolationOrder, s.Key, "revision %d after revision %d", s.Revision, w.global)
				}
				w.global = max(w.global, s.Revision)
			}
			if s.Kind == SeenDelete {
				delete(w.view, s.Key)
				w.rev[s.Key] = max(w.rev[s.Key], s.Revision)
				continue
			}
			w.observe(i, s.Key, s.Value, s.Revision, w.model == WatchEvents)
		}
	}
}

// observe takes that key holds value at revision rev, told at event i;
// once says each value may be told only once.
func (w *valueWatch) observe(i int, key, value string, rev int64, once bool) {
	wr := w.writes[value]
	if wr == nil || wr.Key != key {
		if !w.told[value] {
			w.add(i, ViolationPhantom, key, "told %q holds %s, which nobody wrote to it", key, value)
		}
	}
	switch {
	case w.model == WatchEvents:
		// The watch's own revision order covers each key's.
	case rev < w.rev[key]:
		w.add(i, ViolationOrder, key, "%q told at revision %d after revision %d", key, rev, w.rev[key])
	case rev == w.rev[key] && w.atRev[key] != "" && w.atRev[key] != value:
		w.add(i, ViolationOrder, key, "%q told two values at revision %d: %s and %s", key, rev, w.atRev[key], value)
	case rev > w.rev[key]:
		w.rev[key], w.atRev[key] = rev, value
	}
	if prev := w.last[key]; prev != "" && prev != value {
		if pw := w.writes[prev]; pw != nil && wr != nil && wr.Acked && wr.Return < pw.Call {
			w.add(i, ViolationOrder, key, "%q went from %s (sent at %v) to %s, whose write was acknowledged before that, at %v",
				key, prev, pw.Call, value, wr.Return)
		}
	}
	if once && w.told[value] {
		w.add(i, ViolationDuplicate, key, "told twice that %q holds %s", key, value)
	}
	w.view[key], w.last[key], w.told[value] = value, value, true
}

func (w *valueWatch) add(i int, kind, key, format string, args ...any) {
	w.vs = append(w.vs, violation(w.log, i, kind, key, format, args...))
}

// owed returns the acknowledged writes the watcher was never told: those
// sent after its last listing are violations of the events model (a
// listing again, after a compaction, stands for what it folds in); those
// sent after its first listing are skips of the snapshots model, counted
// in skipped.
func (w *valueWatch) owed(writes []Write, skipped *int) []WatchViolation {
	if !w.listed {
		return nil
	}
	var vs []WatchViolation
	for _, wr := range writes {
		if !wr.Acked || wr.Value == "" || wr.Call <= w.firstListed || w.told[wr.Value] {
			continue
		}
		if w.model != WatchEvents {
			*skipped++
			continue
		}
		if wr.Call <= w.listedAt {
			continue
		}
		vs = append(vs, violation(w.log, -1, ViolationMissed, wr.Key, "%s written to %q (sent at %v, acknowledged at %v) but never told",
			wr.Value, wr.Key, wr.Call, wr.Return))
	}
	return vs
}

func (w *valueWatch) diverged(final map[string]string) []WatchViolation {
	var vs []WatchViolation
	keys := make([]string, 0, len(final)+len(w.view))
	for k := range final {
		keys = append(keys, k)
	}
	for k := range w.view {
		if _, ok := final[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range slices.Compact(keys) {
		got, has := w.view[k]
		want, holds := final[k]
		switch {
		case holds && !has:
			vs = append(vs, violation(w.log, -1, ViolationDiverged, k, "the store holds %q = %s; the watcher was never told", k, want))
		case has && !holds:
			vs = append(vs, violation(w.log, -1, ViolationDiverged, k, "the watcher still believes %q = %s, which the store no longer holds", k, got))
		case got != want:
			vs = append(vs, violation(w.log, -1, ViolationDiverged, k, "the watcher believes %q = %s; the store holds %s", k, got, want))
		}
	}
	return vs
}
