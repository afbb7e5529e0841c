package checker

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// Watch models, as a store documents its watches.
const (
	// WatchEvents: every change after the first listing, in revision
	// order, exactly once (etcd).
	WatchEvents = "events"
	// WatchSnapshots: listings, each at least as new as the one before;
	// changes between two listings may be skipped (ZooKeeper's one-shot
	// watches re-registered after each firing, Consul's blocking queries).
	WatchSnapshots = "snapshots"
	// WatchHealth: as WatchSnapshots, but a key may leave a listing and
	// come back: listings of healthy instances (Consul's health queries).
	WatchHealth = "health"
)

// Kinds of what a watcher saw.
const (
	SeenList   = "list"
	SeenPut    = "put"
	SeenDelete = "delete"
)

// Seen is one thing a watcher was told, at At (offset from the run's base).
type Seen struct {
	At       time.Duration `json:"at"`
	Kind     string        `json:"kind"`
	Key      string        `json:"key,omitempty"`
	Keys     []string      `json:"keys,omitempty"`
	Revision int64         `json:"revision"`
	// Value watches (CheckValueWatches) only: the value told (put), or a
	// listing's values and each key's own revision, in the order of Keys.
	// Values are written writes' names (see Write).
	Value     string   `json:"value,omitempty"`
	Values    []string `json:"values,omitempty"`
	Revisions []int64  `json:"revisions,omitempty"`
}

// KeyLife is what the registry did with one key. Keys are unique per
// registration: a key is created at most once and removed at most once.
type KeyLife struct {
	Key string `json:"key"`
	// RegSent is when its registration was sent; RegAcked says it was
	// acknowledged.
	RegSent  time.Duration `json:"reg_sent"`
	RegAcked bool          `json:"reg_acked"`
	// DeregSent is when its goodbye was sent (zero: none); DeregAcked
	// says it was acknowledged.
	DeregSent  time.Duration `json:"dereg_sent,omitempty"`
	DeregAcked bool          `json:"dereg_acked,omitempty"`
}

// WatchLog is everything one watcher saw, in the order it was told.
type WatchLog struct {
	Watcher int    `json:"watcher"`
	Seen    []Seen `json:"seen"`
}

// WatchViolation is one broken promise of a watch.
type WatchViolation struct {
	Watcher int    `json:"watcher"`
	Kind    string `json:"kind"` // see the Violation* constants
	Key     string `json:"key,omitempty"`
	Detail  string `json:"detail"`
	// Events are the watcher's events around the violation.
	Events []Seen `json:"events,omitempty"`
}

// Violation kinds.
const (
	ViolationOrder     = "out-of-order" // a revision not after the one before
	ViolationDuplicate = "duplicate"    // one change told twice
	ViolationMissed    = "missed"       // an acknowledged change never told
	ViolationPhantom   = "phantom"      // a key nobody registered
	ViolationReappear  = "reappeared"   // a removed key listed again
	ViolationDiverged  = "diverged"     // the watcher's final view is not the store's
)

// WatchResult is the checker's verdict over every watcher.
type WatchResult struct {
	Watchers   int              `json:"watchers"`
	Events     int              `json:"events"`
	Violations []WatchViolation `json:"violations"`
	// Skipped counts acknowledged registrations a snapshot watcher never
	// listed (allowed by that model: it registered and left between two
	// listings, or the listing that would have shown it was superseded).
	Skipped int `json:"skipped"`
	// Returns counts keys listed again after a listing without them,
	// which the health model allows (an instance that turned critical and
	// passed again).
	Returns int `json:"returns,omitempty"`
}

// OK reports whether no watcher broke a promise.
func (r WatchResult) OK() bool { return len(r.Violations) == 0 }

// contextEvents is how many events either side of a violation it keeps.
const contextEvents = 3

// CheckWatches judges what every watcher saw against what the registry
// did (keys) and against final, the keys the store listed after the run
// settled, under model (WatchEvents or WatchSnapshots).
//
// Both models: a watcher never lists a key nobody tried to register
// (phantom), and its view after the last event equals final (diverged:
// a watcher left believing in a dead instance, or never told of a live
// one). Events model, besides: revisions strictly increase; each key is
// created and removed at most once; every registration and goodbye that
// was sent after the watcher's first listing and acknowledged is told.
// Snapshots model: revisions never decrease, and a key, once gone from a
// listing, never comes back (keys are unique per registration, so that
// would be a listing older than one before it). Health model: as
// snapshots, but a key may come back (counted in Returns).
func CheckWatches(model string, keys []KeyLife, logs []WatchLog, final []string) WatchResult {
	life := make(map[string]*KeyLife, len(keys))
	for i := range keys {
		life[keys[i].Key] = &keys[i]
	}
	res := WatchResult{Watchers: len(logs), Violations: []WatchViolation{}}
	for _, l := range logs {
		res.Events += len(l.Seen)
		var vs []WatchViolation
		var view map[string]bool
		if model == WatchEvents {
			vs, view = checkEvents(l, life)
		} else {
			var skipped, returns int
			vs, view, skipped, returns = checkSnapshots(l, life, model == WatchHealth)
			res.Skipped += skipped
			res.Returns += returns
		}
		vs = append(vs, diverged(l, view, final)...)
		res.Violations = append(res.Violations, vs...)
	}
	return res
}

// violation describes the broken promise at event i of l.
func violation(l WatchLog, i int, kind, key, format string, args ...any) WatchViolation {
	lo, hi := max(0, i-contextEvents), min(len(l.Seen), i+contextEvents+1)
	if i < 0 {
		lo, hi = max(0, len(l.Seen)-contextEvents), len(l.Seen)
	}
	return WatchViolation{Watcher: l.Watcher, Kind: kind, Key: key, Detail: fmt.Sprintf(format, args...),
		Events: slices.Clone(l.Seen[lo:hi])}
}

func checkEvents(l WatchLog, life map[string]*KeyLife) ([]WatchViolation, map[string]bool) {
	var vs []WatchViolation
	view := map[string]bool{}
	created, removed := map[string]bool{}, map[string]bool{}
	var listedAt time.Duration
	listed := false
	var last int64
	for i, s := range l.Seen {
		if s.Kind == SeenList {
			// A fresh listing (first, or after the store lost the
			// watch's history): the view restarts from it.
			view = map[string]bool{}
			for _, k := range s.Keys {
				view[k] = true
				created[k] = true
				if life[k] == nil {
					vs = append(vs, violation(l, i, ViolationPhantom, k, "listed %q, which nobody registered", k))
				}
			}
			if !listed {
				listed, listedAt = true, s.At
			}
			last = s.Revision
			continue
		}
		if s.Revision <= last {
			kind := ViolationOrder
			if s.Revision == last {
				kind = ViolationDuplicate
			}
			vs = append(vs, violation(l, i, kind, s.Key, "revision %d after revision %d", s.Revision, last))
		}
		last = max(last, s.Revision)
		switch s.Kind {
		case SeenPut:
			if life[s.Key] == nil {
				vs = append(vs, violation(l, i, ViolationPhantom, s.Key, "told of %q, which nobody registered", s.Key))
			}
			if created[s.Key] {
				vs = append(vs, violation(l, i, ViolationDuplicate, s.Key, "told twice that %q was created", s.Key))
			}
			created[s.Key], view[s.Key] = true, true
		case SeenDelete:
			if removed[s.Key] {
				vs = append(vs, violation(l, i, ViolationDuplicate, s.Key, "told twice that %q was removed", s.Key))
			}
			removed[s.Key] = true
			delete(view, s.Key)
		}
	}
	if !listed {
		return vs, view
	}
	// No gaps: what was sent after the first listing and acknowledged
	// has a revision after it, so the watch owes it.
	for _, k := range sortedLives(life) {
		if k.RegAcked && k.RegSent > listedAt && !created[k.Key] {
			vs = append(vs, violation(l, -1, ViolationMissed, k.Key, "registration of %q acknowledged (sent at %v) but never told", k.Key, k.RegSent))
		}
		if k.DeregAcked && k.DeregSent > listedAt && created[k.Key] && !removed[k.Key] {
			vs = append(vs, violation(l, -1, ViolationMissed, k.Key, "removal of %q acknowledged (sent at %v) but never told", k.Key, k.DeregSent))
		}
	}
	return vs, view
}

func checkSnapshots(l WatchLog, life map[string]*KeyLife, mayReturn bool) ([]WatchViolation, map[string]bool, int, int) {
	var vs []WatchViolation
	returns := 0
	view := map[string]bool{}
	gone, ever := map[string]bool{}, map[string]bool{}
	var last int64
	for i, s := range l.Seen {
		if s.Kind != SeenList {
			continue
		}
		if s.Revision < last {
			vs = append(vs, violation(l, i, ViolationOrder, "", "listing at index %d after one at %d", s.Revision, last))
		}
		last = max(last, s.Revision)
		next := make(map[string]bool, len(s.Keys))
		for _, k := range s.Keys {
			next[k] = true
			if gone[k] {
				if mayReturn {
					returns++
				} else {
					vs = append(vs, violation(l, i, ViolationReappear, k, "%q listed again after a listing without it", k))
				}
				delete(gone, k) // report it once
			}
			if life[k] == nil && !ever[k] {
				vs = append(vs, violation(l, i, ViolationPhantom, k, "listed %q, which nobody registered", k))
			}
			ever[k] = true
		}
		for k := range view {
			if !next[k] {
				gone[k] = true
			}
		}
		view = next
	}
	skipped := 0
	for k, kl := range life {
		if kl.RegAcked && !ever[k] {
			skipped++
		}
	}
	return vs, view, skipped, returns
}

func diverged(l WatchLog, view map[string]bool, final []string) []WatchViolation {
	var vs []WatchViolation
	want := make(map[string]bool, len(final))
	for _, k := range final {
		want[k] = true
		if !view[k] {
			vs = append(vs, violation(l, -1, ViolationDiverged, k, "the store holds %q; the watcher was never told", k))
		}
	}
	for _, k := range sortedKeys(view) {
		if !want[k] {
			vs = append(vs, violation(l, -1, ViolationDiverged, k, "the watcher still believes in %q, which the store no longer holds", k))
		}
	}
	return vs
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedLives(m map[string]*KeyLife) []*KeyLife {
	out := make([]*KeyLife, 0, len(m))
	for _, k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *KeyLife) int {
		if a.Key < b.Key {
			return -1
		}
		if a.Key > b.Key {
			return 1
		}
		return 0
	})
	return out
}
