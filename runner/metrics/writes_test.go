package metrics

import (
	"math"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
)

// TestTimeAvailability checks the time-based availability against
// outages placed by hand: stretches of a second or more without a
// successful write count whole, shorter ones not at all.
func TestTimeAvailability(t *testing.T) {
	s := time.Second
	phases := []plan.PhaseSpan{
		{Name: "steady", Start: 0, Duration: plan.Duration(10 * s)},
		{Name: "outage", Start: plan.Duration(10 * s), Duration: plan.Duration(40 * s)},
	}
	writesEvery := func(from, to, every time.Duration) []time.Duration {
		var out []time.Duration
		for at := from; at < to; at += every {
			out = append(out, at)
		}
		return out
	}
	tests := []struct {
		name       string
		writes     []time.Duration
		want       [2]float64
		wantRun    float64
		horizonEnd time.Duration
	}{
		{name: "writes all along", writes: writesEvery(0, 50*s, 10*time.Millisecond), want: [2]float64{1, 1}, wantRun: 1},
		{name: "gaps under a second do not count", writes: writesEvery(0, 50*s, 900*time.Millisecond), want: [2]float64{1, 1}, wantRun: 1},
		{
			// The 10 s outage of the issue, in a 40 s phase: request-based
			// availability read 20.7% for a client that fails fast.
			name:   "a 10 s outage in a 40 s phase",
			writes: append(writesEvery(0, 20*s, 10*time.Millisecond), writesEvery(30*s, 50*s, 10*time.Millisecond)...),
			// The gap runs from the last write before (19.99 s) to the
			// first after (30 s).
			want:    [2]float64{1, 1 - 10.01/40},
			wantRun: 1 - 10.01/50,
		},
		{name: "nothing written after 45 s", writes: writesEvery(0, 45*s, 10*time.Millisecond), want: [2]float64{1, 1 - 5.01/40}, wantRun: 1 - 5.01/50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newWriteTrack(phases)
			tr.attempted = []bool{true, true}
			for _, w := range tt.writes {
				tr.add(w, phases)
			}
			got := tr.measure(0, 50*s, phases)
			for i, want := range tt.want {
				if g := got.timeAvail[i]; g == nil || math.Abs(*g-want) > 1e-6 {
					t.Errorf("phase %s: %v, want %v", phases[i].Name, deref(g), want)
				}
			}
			if g := got.runTimeAvail; g == nil || math.Abs(*g-tt.wantRun) > 1e-6 {
				t.Errorf("run: %v, want %v", deref(g), tt.wantRun)
			}
		})
	}
	t.Run("while the run goes on, up to now", func(t *testing.T) {
		tr := newWriteTrack(phases)
		tr.attempted = []bool{true, true}
		for _, w := range writesEvery(0, 20*s, 10*time.Millisecond) {
			tr.add(w, phases)
		}
		got := tr.measure(0, 25*s, phases) // 5 s into an outage at 25 s
		if g := got.timeAvail[1]; g == nil || math.Abs(*g-(1-5.01/15)) > 1e-6 {
			t.Errorf("outage phase at 25 s: %v, want %v", deref(g), 1-5.01/15)
		}
	})
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
