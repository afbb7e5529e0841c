package bench

import (
	"fmt"
	"math"
	"testing"

	gate "github.com/coordlab/scenario/compare"
	"github.com/coordlab/scenario/internal/results"
)

// ratio is how a contender's figure compares to the reference's over
// repeated, interleaved rounds. Each round runs both back to back, so the
// ratio within a round is free of what moved between rounds (the machine's
// load, the cluster's state): the figure is the median of the per-round
// ratios, and its interval is compare's paired test (Wilcoxon signed-rank
// and its Hodges-Lehmann interval, the CI gate's statistics package)
// applied to the logarithms.
type ratio struct {
	median     float64 // median over rounds of ours/theirs
	lo, hi     float64 // NaN where the interval is unbounded (too few rounds)
	confidence float64 // the interval's achieved confidence
	p          float64 // two-sided p of "the two differ"
}

// ratioAlpha is the interval's level: 95%.
const ratioAlpha = 0.05

// ratioOf pairs theirs[i] with ours[i], the same round's runs.
func ratioOf(theirs, ours []float64) ratio {
	r := ratio{lo: math.NaN(), hi: math.NaN()}
	n := min(len(theirs), len(ours))
	per := make([]float64, n)
	for i := range n {
		per[i] = ours[i] / theirs[i]
	}
	r.median = results.Median(per)
	lt, lo := logs(theirs[:n]), logs(ours[:n])
	if lt == nil || lo == nil {
		return r
	}
	t := gate.SignedRank(lt, lo, ratioAlpha)
	r.confidence, r.p = t.Confidence, t.P
	if t.CILow != nil {
		r.lo = math.Exp(*t.CILow)
	}
	if t.CIHigh != nil {
		r.hi = math.Exp(*t.CIHigh)
	}
	return r
}

// logs is xs's natural logarithms, nil if any is not positive.
func logs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		if !(x > 0) {
			return nil
		}
		out[i] = math.Log(x)
	}
	return out
}

// halfWidth is the larger distance from the median to an end of the
// interval, relative to the median: what "±10%" means in issue 21 and
// in the table.
func (r ratio) halfWidth() float64 {
	return max(r.median-r.lo, r.hi-r.median) / r.median
}

func (r ratio) String() string {
	if math.IsNaN(r.lo) || math.IsNaN(r.hi) {
		return fmt.Sprintf("%.3f [interval needs 6+ rounds]", r.median)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f] ±%.0f%%", r.median, r.lo, r.hi, 100*r.halfWidth())
}

// report puts a ratio into the benchmark's metrics: name, name_lo, name_hi.
func (r ratio) report(b *testing.B, name string) {
	b.ReportMetric(r.median, name)
	if !math.IsNaN(r.lo) {
		b.ReportMetric(r.lo, name+"_lo")
		b.ReportMetric(r.hi, name+"_hi")
	}
}

func TestRatioOf(t *testing.T) {
	// Rounds drift by ±20% together, as on a machine whose load changes
	// between rounds: pairing must see through it.
	theirs := []float64{100, 104, 98, 101, 99, 120, 80, 103}
	times := func(fs ...float64) []float64 {
		out := make([]float64, len(fs))
		for i, f := range fs {
			out[i] = theirs[i] * f
		}
		return out
	}
	tests := []struct {
		name           string
		ours           []float64
		median, lo, hi float64 // lo, hi NaN: unbounded
	}{
		// About 10% faster in every round: the interval holds 1.1 and not 1.
		{"faster", times(1.10, 1.11, 1.09, 1.10, 1.12, 1.08, 1.10, 1.11), 1.1, 1.08, 1.12},
		// The same within ±2% per round: the interval holds 1.
		{"same", times(1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01, 0.99), 1, 0.98, 1.02},
		{"five rounds", times(1.01, 0.99, 1.0, 1.02, 0.98), 1, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ratioOf(theirs[:len(tt.ours)], tt.ours)
			if math.Abs(r.median-tt.median) > 1e-9 {
				t.Errorf("median ratio %v, want %v", r.median, tt.median)
			}
			if math.IsNaN(tt.lo) {
				if !math.IsNaN(r.lo) || !math.IsNaN(r.hi) {
					t.Errorf("interval [%v, %v], want unbounded", r.lo, r.hi)
				}
				return
			}
			if !(r.lo <= r.median && r.median <= r.hi) || r.lo < tt.lo || r.hi > tt.hi || r.confidence < 0.95 {
				t.Errorf("interval [%.4f, %.4f] at %.3f, want within [%v, %v] around %v at >= 0.95", r.lo, r.hi, r.confidence, tt.lo, tt.hi, tt.median)
			}
			if (tt.name == "faster") != (r.lo > 1) {
				t.Errorf("interval [%.4f, %.4f]: excludes 1 = %v, want %v", r.lo, r.hi, r.lo > 1, tt.name == "faster")
			}
		})
	}
}
