package runner

import (
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/coordlab/scenario/fabric/shaper"
	"github.com/coordlab/scenario/internal/results"
)

// counts is a netCounter that reads from a list, one sample a call of
// Drops; Frames reads the same sample's frames first.
type counts struct {
	n   []netCount
	err error
}

func (c *counts) Frames() uint64 {
	if c.err != nil {
		return 0
	}
	return c.n[0].frames
}

func (c *counts) Pairs() map[[2]string]*shaper.PairCounts {
	if c.err != nil {
		return nil
	}
	return c.n[0].pairs
}

func (c *counts) Drops() (uint64, error) {
	if c.err != nil {
		return 0, c.err
	}
	n := c.n[0].drops
	c.n = c.n[1:]
	return n, nil
}

func TestNetCountsFill(t *testing.T) {
	type sample struct {
		phase string
		end   bool
	}
	a, b := sample{"a", false}, sample{"b", false}
	aEnd, bEnd := sample{"a", true}, sample{"b", true}
	type want struct{ frames, drops int64 }
	tests := []struct {
		name    string
		src     *counts
		samples []sample
		want    map[string]want // by phase; "run" for the run; absent: nil
		held    int             // samples still held, waiting for their phase's other
	}{
		{"two phases", &counts{n: []netCount{{frames: 100, drops: 5}, {frames: 1100, drops: 9}, {frames: 1100, drops: 9}, {frames: 4100, drops: 30}}}, []sample{a, aEnd, b, bEnd},
			map[string]want{"a": {1000, 4}, "b": {3000, 21}, "run": {4000, 25}}, 0},
		{"a phase cut short has none", &counts{n: []netCount{{frames: 100, drops: 5}, {frames: 600, drops: 9}, {frames: 600, drops: 9}}}, []sample{a, aEnd, b},
			map[string]want{"a": {500, 4}, "run": {500, 4}}, 1},
		{"an end read before its start", &counts{n: []netCount{{frames: 1100, drops: 9}, {frames: 100, drops: 5}}}, []sample{aEnd, a},
			map[string]want{"a": {1000, 4}, "run": {1000, 4}}, 0},
		{"no complete phase, no run figure", &counts{n: []netCount{{frames: 100, drops: 5}}}, []sample{a}, map[string]want{}, 1},
		{"unreadable counters: nothing", &counts{err: errors.New("gone")}, []sample{a, aEnd, b, bEnd}, map[string]want{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newNetCounts(tt.src, slog.New(slog.DiscardHandler))
			for _, s := range tt.samples {
				d.sample(s.phase, s.end)
				d.wg.Wait() // in order, as the counts are listed
			}
			res := &results.Results{Phases: []results.Phase{{Name: "a"}, {Name: "b"}}}
			d.fill(res)
			if len(d.first) != tt.held {
				t.Errorf("%d samples held after fill, want %d (a phase's are let go once both are read)", len(d.first), tt.held)
			}
			got := map[string]*results.Phase{"a": &res.Phases[0], "b": &res.Phases[1], "run": &res.Run}
			for k, p := range got {
				if p.NetworkLate != nil {
					t.Errorf("%s: lateness %+v, want none with no packet held", k, p.NetworkLate)
				}
				w, ok := tt.want[k]
				switch {
				case !ok && (p.NetworkDrops != nil || p.NetworkFrames != nil):
					t.Errorf("%s: drops %v, frames %v, want neither counted", k, p.NetworkDrops, p.NetworkFrames)
				case ok && (p.NetworkDrops == nil || *p.NetworkDrops != w.drops || p.NetworkFrames == nil || *p.NetworkFrames != w.frames):
					t.Errorf("%s: drops %v, frames %v, want %d and %d", k, p.NetworkDrops, p.NetworkFrames, w.drops, w.frames)
				}
			}
		})
	}
}

// TestNetCountsLateness: each phase gets the lateness of the packets
// handed on between its samples, over all pairs and pair by pair, and the
// run that of its phases' packets.
func TestNetCountsLateness(t *testing.T) {
	late := func(us ...int) shaper.Lateness {
		l := shaper.Lateness{}
		for _, u := range us {
			l.Count(time.Duration(u) * time.Microsecond)
		}
		return l
	}
	ab, ba := [2]string{"n1", "n2"}, [2]string{"n2", "n1"}
	// Phase a: n1>n2 hands on 100 packets 10 µs late and one 5 ms late,
	// and its loss drops 4. Between the phases, 3 packets of n1>n2 9 ms
	// late. Phase b: n2>n1, first seen, hands on 100 packets 40 µs late
	// and its cut drops 7; n1>n2 carries nothing more. The figures are
	// the middles of the buckets, rounded to the µs.
	var a, b []int
	for range 100 {
		a, b = append(a, 10), append(b, 40)
	}
	sample := func(frames uint64, pairs map[[2]string]*shaper.PairCounts) netCount {
		return netCount{frames: frames, pairs: pairs}
	}
	abA := &shaper.PairCounts{Forwarded: 101, DroppedLoss: 4, Late: late(append(a, 5000)...)}
	abB := &shaper.PairCounts{Forwarded: 104, DroppedLoss: 4, Late: late(append(a, 5000, 9000, 9000, 9000)...)}
	baB := &shaper.PairCounts{Forwarded: 100, DroppedDown: 7, Late: late(b...)}
	src := &counts{n: []netCount{
		sample(0, nil),
		sample(10, map[[2]string]*shaper.PairCounts{ab: abA}),
		sample(10, map[[2]string]*shaper.PairCounts{ab: abB}),
		sample(20, map[[2]string]*shaper.PairCounts{ab: abB, ba: baB}),
	}}
	d := newNetCounts(src, slog.New(slog.DiscardHandler))
	for i, phase := range []string{"a", "a", "b", "b"} {
		d.sample(phase, i%2 == 1)
		d.wg.Wait()
	}
	res := &results.Results{Phases: []results.Phase{{Name: "a"}, {Name: "b"}}}
	d.fill(res)
	lateA := results.NetworkLate{Packets: 101, P50MS: 0.011, P99MS: 0.011, MaxMS: 5.056}
	lateB := results.NetworkLate{Packets: 100, P50MS: 0.041, P99MS: 0.041, MaxMS: 0.041}
	for _, tt := range []struct {
		name  string
		got   *results.NetworkLate
		want  results.NetworkLate
		pairs []results.NetworkPair
		want2 []results.NetworkPair
	}{
		{"a", res.Phases[0].NetworkLate, lateA, res.Phases[0].NetworkPairs,
			[]results.NetworkPair{{From: "n1", To: "n2", Packets: 101, Lost: 4, Late: &lateA}}},
		{"b", res.Phases[1].NetworkLate, lateB, res.Phases[1].NetworkPairs,
			[]results.NetworkPair{{From: "n2", To: "n1", Packets: 100, Cut: 7, Late: &lateB}}},
		{"run", res.Run.NetworkLate, results.NetworkLate{Packets: 201, P50MS: 0.041, P99MS: 0.041, MaxMS: 5.056}, res.Run.NetworkPairs,
			[]results.NetworkPair{{From: "n1", To: "n2", Packets: 101, Lost: 4, Late: &lateA}, {From: "n2", To: "n1", Packets: 100, Cut: 7, Late: &lateB}}},
	} {
		if tt.got == nil || *tt.got != tt.want {
			t.Errorf("%s: lateness %+v, want %+v", tt.name, tt.got, tt.want)
		}
		if !reflect.DeepEqual(tt.pairs, tt.want2) {
			t.Errorf("%s: pairs %s, want %s", tt.name, jsonOf(tt.pairs), jsonOf(tt.want2))
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
