package checker

import (
	"slices"
	"testing"
)

// configWrites: a0 was there before the watchers listed; a1, a2 and b1
// came after, one at a time; a3 failed and never happened.
func configWrites() []Write {
	return []Write{
		{Key: "c/a", Value: "a0", Call: ms(1), Return: ms(2), Acked: true},
		{Key: "c/a", Value: "a1", Call: ms(10), Return: ms(12), Acked: true},
		{Key: "c/a", Value: "a2", Call: ms(20), Return: ms(22), Acked: true},
		{Key: "c/b", Value: "b1", Call: ms(30), Return: ms(32), Acked: true},
		{Key: "c/a", Value: "a3", Call: ms(40), Return: ms(45)},
	}
}

func valueLog(seen ...Seen) WatchLog { return WatchLog{Watcher: 1, Seen: seen} }

func kinds(t *testing.T, res WatchResult) []string {
	t.Helper()
	var got []string
	for _, v := range res.Violations {
		got = append(got, v.Kind)
		if len(v.Events) == 0 {
			t.Errorf("violation %s of %q carries no events", v.Kind, v.Key)
		}
	}
	return got
}

func TestCheckValueWatchesEvents(t *testing.T) {
	list := Seen{At: ms(5), Kind: SeenList, Keys: []string{"c/a"}, Values: []string{"a0"}, Revisions: []int64{2}, Revision: 3}
	a1 := Seen{At: ms(11), Kind: SeenPut, Key: "c/a", Value: "a1", Revision: 4}
	a2 := Seen{At: ms(21), Kind: SeenPut, Key: "c/a", Value: "a2", Revision: 5}
	b1 := Seen{At: ms(33), Kind: SeenPut, Key: "c/b", Value: "b1", Revision: 6}
	final := map[string]string{"c/a": "a2", "c/b": "b1"}
	cases := []struct {
		name  string
		log   WatchLog
		final map[string]string
		want  []string
	}{
		{"every value once, in order", valueLog(list, a1, a2, b1), final, nil},
		{"a dropped event", valueLog(list, a1, b1), final, []string{ViolationMissed, ViolationDiverged}},
		{"a duplicated event", valueLog(list, a1, a2, a2, b1), final, []string{ViolationDuplicate, ViolationDuplicate}},
		{"reordered", valueLog(list, a2, a1, b1), final, []string{ViolationOrder, ViolationOrder, ViolationDiverged}},
		{"a phantom", valueLog(list, a1, a2, b1, Seen{At: ms(50), Kind: SeenPut, Key: "c/b", Value: "zz", Revision: 9}), final,
			[]string{ViolationPhantom, ViolationDiverged}},
		{"a failed write that happened", valueLog(list, a1, a2, b1, Seen{At: ms(50), Kind: SeenPut, Key: "c/a", Value: "a3", Revision: 7}),
			map[string]string{"c/a": "a3", "c/b": "b1"}, nil},
		{"a delete told", valueLog(list, a1, a2, b1, Seen{At: ms(60), Kind: SeenDelete, Key: "c/b", Revision: 8}),
			map[string]string{"c/a": "a2"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckValueWatches(WatchEvents, configWrites(), []WatchLog{tc.log}, tc.final)
			if got := kinds(t, res); !slices.Equal(got, tc.want) {
				t.Fatalf("violations %v, want %v: %+v", got, tc.want, res.Violations)
			}
			if res.OK() != (len(tc.want) == 0) {
				t.Errorf("OK() = %v with violations %v", res.OK(), tc.want)
			}
		})
	}
}

func TestCheckValueWatchesSnapshots(t *testing.T) {
	list := func(at int, a string, ra int64, b string, rb int64) Seen {
		s := Seen{At: ms(at), Kind: SeenList, Keys: []string{"c/a"}, Values: []string{a}, Revisions: []int64{ra}}
		if b != "" {
			s.Keys, s.Values, s.Revisions = append(s.Keys, "c/b"), append(s.Values, b), append(s.Revisions, rb)
		}
		return s
	}
	final := map[string]string{"c/a": "a2", "c/b": "b1"}
	cases := []struct {
		name        string
		log         WatchLog
		want        []string
		wantSkipped int
	}{
		{"every listing", valueLog(list(5, "a0", 2, "", 0), list(11, "a1", 4, "", 0), list(21, "a2", 5, "", 0), list(33, "a2", 5, "b1", 6)), nil, 0},
		{"a1 skipped", valueLog(list(5, "a0", 2, "", 0), list(33, "a2", 5, "b1", 6)), nil, 1},
		{"puts after a listing", valueLog(list(5, "a0", 2, "", 0), Seen{At: ms(21), Kind: SeenPut, Key: "c/a", Value: "a2", Revision: 5},
			Seen{At: ms(33), Kind: SeenPut, Key: "c/b", Value: "b1", Revision: 6}), nil, 1},
		{"an older listing", valueLog(list(5, "a0", 2, "", 0), list(21, "a2", 5, "", 0), list(22, "a1", 4, "", 0), list(33, "a2", 5, "b1", 6)),
			[]string{ViolationOrder, ViolationOrder}, 0},
		{"two values at one revision", valueLog(list(5, "a0", 2, "", 0), list(21, "a2", 5, "", 0), list(22, "a1", 5, "", 0), list(33, "a2", 5, "b1", 6)),
			[]string{ViolationOrder, ViolationOrder}, 0},
		{"a phantom", valueLog(list(5, "a0", 2, "", 0), list(33, "a2", 5, "b9", 6)), []string{ViolationPhantom, ViolationDiverged}, 2},
		{"stuck on an old value", valueLog(list(5, "a0", 2, "", 0), list(11, "a1", 4, "b1", 6)), []string{ViolationDiverged}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckValueWatches(WatchSnapshots, configWrites(), []WatchLog{tc.log}, final)
			if got := kinds(t, res); !slices.Equal(got, tc.want) {
				t.Fatalf("violations %v, want %v: %+v", got, tc.want, res.Violations)
			}
			if res.Skipped != tc.wantSkipped {
				t.Errorf("skipped %d, want %d", res.Skipped, tc.wantSkipped)
			}
		})
	}
}
