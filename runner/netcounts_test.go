package runner

import (
	"errors"
	"log/slog"
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

func (c *counts) Lateness() *shaper.Lateness {
	if c.err != nil || c.n[0].late == nil {
		return &shaper.Lateness{}
	}
	return c.n[0].late
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
		{"two phases", &counts{n: []netCount{{100, 5, nil}, {1100, 9, nil}, {1100, 9, nil}, {4100, 30, nil}}}, []sample{a, aEnd, b, bEnd},
			map[string]want{"a": {1000, 4}, "b": {3000, 21}, "run": {4000, 25}}},
		{"a phase cut short has none", &counts{n: []netCount{{100, 5, nil}, {600, 9, nil}, {600, 9, nil}}}, []sample{a, aEnd, b},
			map[string]want{"a": {500, 4}, "run": {500, 4}}},
		{"no complete phase, no run figure", &counts{n: []netCount{{100, 5, nil}}}, []sample{a}, map[string]want{}},
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
// handed on between its samples, and the run that of its phases' packets.
func TestNetCountsLateness(t *testing.T) {
	late := func(us ...int) *shaper.Lateness {
		l := &shaper.Lateness{}
		for _, u := range us {
			l.Count(time.Duration(u) * time.Microsecond)
		}
		return l
	}
	// Phase a hands on 100 packets 10 µs late and one 5 ms late; b, 100
	// packets 40 µs late. Between the phases, 3 packets 9 ms late. The
	// figures are the middles of the buckets, rounded to the µs.
	var a, b []int
	for range 100 {
		a, b = append(a, 10), append(b, 40)
	}
	aEnd := late(append(a, 5000)...)
	bStart := late(append(a, 5000, 9000, 9000, 9000)...)
	bEnd := late(append(append(a, 5000, 9000, 9000, 9000), b...)...)
	src := &counts{n: []netCount{{0, 0, late()}, {10, 0, aEnd}, {10, 0, bStart}, {20, 0, bEnd}}}
	d := newNetCounts(src, slog.New(slog.DiscardHandler))
	for i, phase := range []string{"a", "a", "b", "b"} {
		d.sample(phase, i%2 == 1)
		d.wg.Wait()
	}
	res := &results.Results{Phases: []results.Phase{{Name: "a"}, {Name: "b"}}}
	d.fill(res)
	for _, tt := range []struct {
		name string
		got  *results.NetworkLate
		want results.NetworkLate
	}{
		{"a", res.Phases[0].NetworkLate, results.NetworkLate{Packets: 101, P50MS: 0.011, P99MS: 0.011, MaxMS: 5.056}},
		{"b", res.Phases[1].NetworkLate, results.NetworkLate{Packets: 100, P50MS: 0.041, P99MS: 0.041, MaxMS: 0.041}},
		{"run", res.Run.NetworkLate, results.NetworkLate{Packets: 201, P50MS: 0.041, P99MS: 0.041, MaxMS: 5.056}},
	} {
		if tt.got == nil || *tt.got != tt.want {
			t.Errorf("%s: lateness %+v, want %+v", tt.name, tt.got, tt.want)
		}
	}
}
