package runner

import (
	"errors"
	"log/slog"
	"testing"

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
	}{
		{"two phases", &counts{n: []netCount{{100, 5}, {1100, 9}, {1100, 9}, {4100, 30}}}, []sample{a, aEnd, b, bEnd},
			map[string]want{"a": {1000, 4}, "b": {3000, 21}, "run": {4000, 25}}},
		{"a phase cut short has none", &counts{n: []netCount{{100, 5}, {600, 9}, {600, 9}}}, []sample{a, aEnd, b},
			map[string]want{"a": {500, 4}, "run": {500, 4}}},
		{"no complete phase, no run figure", &counts{n: []netCount{{100, 5}}}, []sample{a}, map[string]want{}},
		{"unreadable counters: nothing", &counts{err: errors.New("gone")}, []sample{a, aEnd, b, bEnd}, map[string]want{}},
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
			got := map[string]*results.Phase{"a": &res.Phases[0], "b": &res.Phases[1], "run": &res.Run}
			for k, p := range got {
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
