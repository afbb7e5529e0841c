package checker

import (
	"slices"
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// registry is what a small registry did: a and b registered after the
// watchers listed, a said goodbye, c was registered before.
func registry() []KeyLife {
	return []KeyLife{
		{Key: "r/a", RegSent: ms(10), RegAcked: true, DeregSent: ms(50), DeregAcked: true},
		{Key: "r/b", RegSent: ms(20), RegAcked: true},
		{Key: "r/c", RegSent: ms(1), RegAcked: true},
	}
}

func eventsLog(seen ...Seen) WatchLog { return WatchLog{Watcher: 1, Seen: seen} }

func TestCheckWatchesEvents(t *testing.T) {
	list := Seen{At: ms(5), Kind: SeenList, Keys: []string{"r/c"}, Revision: 10}
	putA := Seen{At: ms(12), Kind: SeenPut, Key: "r/a", Revision: 11}
	putB := Seen{At: ms(22), Kind: SeenPut, Key: "r/b", Revision: 12}
	delA := Seen{At: ms(52), Kind: SeenDelete, Key: "r/a", Revision: 13}
	final := []string{"r/b", "r/c"}
	cases := []struct {
		name  string
		log   WatchLog
		final []string
		want  []string // violation kinds, in order
	}{
		{"all told once, in order", eventsLog(list, putA, putB, delA), final, nil},
		{"a dropped event", eventsLog(list, putA, delA), final, []string{ViolationMissed, ViolationDiverged}},
		{"a duplicated event", eventsLog(list, putA, putB, putB, delA), final, []string{ViolationDuplicate, ViolationDuplicate}},
		{"out of order", eventsLog(list, putB, putA, delA), final, []string{ViolationOrder}},
		{"a dropped removal", eventsLog(list, putA, putB), final, []string{ViolationMissed, ViolationDiverged}},
		{"a phantom", eventsLog(list, putA, putB, Seen{At: ms(30), Kind: SeenPut, Key: "r/x", Revision: 14}),
			final, []string{ViolationPhantom, ViolationMissed, ViolationDiverged, ViolationDiverged}},
		{"an expiry told", eventsLog(list, putA, putB, delA, Seen{At: ms(90), Kind: SeenDelete, Key: "r/b", Revision: 20}),
			[]string{"r/c"}, nil},
		{"an expiry never told", eventsLog(list, putA, putB, delA), []string{"r/c"}, []string{ViolationDiverged}},
		{"registered before the listing, not owed", eventsLog(Seen{At: ms(30), Kind: SeenList, Keys: []string{"r/b", "r/c"}, Revision: 12}),
			final, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckWatches(WatchEvents, registry(), []WatchLog{tc.log}, tc.final)
			var got []string
			for _, v := range res.Violations {
				got = append(got, v.Kind)
				if len(v.Events) == 0 {
					t.Errorf("violation %s of %q carries no events", v.Kind, v.Key)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("violations %v, want %v: %+v", got, tc.want, res.Violations)
			}
			if res.OK() != (len(tc.want) == 0) {
				t.Fatalf("OK() = %v with %d violations", res.OK(), len(res.Violations))
			}
		})
	}
}

func TestCheckWatchesSnapshots(t *testing.T) {
	l := func(at, rev int, keys ...string) Seen {
		return Seen{At: ms(at), Kind: SeenList, Keys: keys, Revision: int64(rev)}
	}
	final := []string{"r/b", "r/c"}
	cases := []struct {
		name    string
		seen    []Seen
		want    []string
		skipped int
	}{
		{"every state listed", []Seen{l(5, 1, "r/c"), l(12, 2, "r/a", "r/c"), l(22, 3, "r/a", "r/b", "r/c"), l(52, 4, "r/b", "r/c")}, nil, 0},
		{"intermediate states skipped", []Seen{l(5, 1, "r/c"), l(60, 4, "r/b", "r/c")}, nil, 1},
		{"index going back", []Seen{l(5, 1, "r/c"), l(22, 3, "r/a", "r/b", "r/c"), l(23, 2, "r/a", "r/c"), l(60, 4, "r/b", "r/c")},
			// The stale listing also made r/b vanish and come back.
			[]string{ViolationOrder, ViolationReappear}, 0},
		{"a removed key listed again", []Seen{l(5, 1, "r/c"), l(22, 3, "r/a", "r/b", "r/c"), l(52, 4, "r/b", "r/c"), l(53, 4, "r/a", "r/b", "r/c"), l(60, 5, "r/b", "r/c")},
			[]string{ViolationReappear}, 0},
		{"a phantom", []Seen{l(5, 1, "r/c", "r/x"), l(60, 4, "r/b", "r/c")}, []string{ViolationPhantom}, 1},
		{"left behind", []Seen{l(5, 1, "r/c"), l(22, 3, "r/a", "r/b", "r/c")}, []string{ViolationDiverged}, 0},
	}
	// Listings of the healthy: an instance may leave and come back.
	health := CheckWatches(WatchHealth, registry(), []WatchLog{{Watcher: 2, Seen: cases[3].seen}}, final)
	if !health.OK() || health.Returns != 1 {
		t.Errorf("health model: %+v; want a return counted, not reported", health)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckWatches(WatchSnapshots, registry(), []WatchLog{{Watcher: 2, Seen: tc.seen}}, final)
			var got []string
			for _, v := range res.Violations {
				got = append(got, v.Kind)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("violations %v, want %v: %+v", got, tc.want, res.Violations)
			}
			if res.Skipped != tc.skipped {
				t.Fatalf("skipped %d, want %d", res.Skipped, tc.skipped)
			}
		})
	}
}
