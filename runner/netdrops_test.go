package runner

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/coordlab/scenario/internal/results"
)

// counts is a dropCounter that reads from a list, one count a call.
type counts struct {
	n   []uint64
	err error
}

func (c *counts) Drops() (uint64, error) {
	if c.err != nil {
		return 0, c.err
	}
	n := c.n[0]
	c.n = c.n[1:]
	return n, nil
}

func TestNetDropsFill(t *testing.T) {
	type sample struct {
		phase string
		end   bool
	}
	a, b := sample{"a", false}, sample{"b", false}
	aEnd, bEnd := sample{"a", true}, sample{"b", true}
	tests := []struct {
		name    string
		src     *counts
		samples []sample
		want    map[string]int64 // by phase; "run" for the run; absent: nil
	}{
		{"two phases", &counts{n: []uint64{5, 9, 9, 30}}, []sample{a, aEnd, b, bEnd},
			map[string]int64{"a": 4, "b": 21, "run": 25}},
		{"a phase cut short has none", &counts{n: []uint64{5, 9, 9}}, []sample{a, aEnd, b},
			map[string]int64{"a": 4, "run": 4}},
		{"no complete phase, no run figure", &counts{n: []uint64{5}}, []sample{a}, map[string]int64{}},
		{"unreadable counters: nothing", &counts{err: errors.New("gone")}, []sample{a, aEnd, b, bEnd}, map[string]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newNetDrops(tt.src, slog.New(slog.DiscardHandler))
			for _, s := range tt.samples {
				d.sample(s.phase, s.end)
				d.wg.Wait() // in order, as the counts are listed
			}
			res := &results.Results{Phases: []results.Phase{{Name: "a"}, {Name: "b"}}}
			d.fill(res)
			got := map[string]*int64{"a": res.Phases[0].NetworkDrops, "b": res.Phases[1].NetworkDrops, "run": res.Run.NetworkDrops}
			for k, g := range got {
				w, ok := tt.want[k]
				switch {
				case !ok && g != nil:
					t.Errorf("%s: %d drops, want none counted", k, *g)
				case ok && (g == nil || *g != w):
					t.Errorf("%s: %v drops, want %d", k, g, w)
				}
			}
		})
	}
}
