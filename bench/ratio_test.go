package bench

import (
	"fmt"
	"math"
	"testing"

	gate "github.com/coordlab/scenario/compare"
	"github.com/coordlab/scenario/internal/results"
)

// ratio is how a contender's figure compares to the reference's over
// repeated, interleaved rounds: the ratio of the medians, with the
// confidence interval of compare's shift test (Mann-Whitney U and its
// Hodges-Lehmann interval) applied to the logarithms, so that the
// interval of a ratio comes from the same statistics as the CI gate's.
type ratio struct {
	median     float64 // median(ours) / median(theirs)
	lo, hi     float64 // NaN where the interval is unbounded (too few rounds)
	confidence float64 // the interval's achieved confidence
	p          float64 // two-sided p of "the two differ"
}

// ratioAlpha is the interval's level: 95%.
const ratioAlpha = 0.05

func ratioOf(theirs, ours []float64) ratio {
	r := ratio{median: results.Median(ours) / results.Median(theirs), lo: math.NaN(), hi: math.NaN()}
	lt, lo := logs(theirs), logs(ours)
	if lt == nil || lo == nil {
		return r
	}
	t := gate.MannWhitney(lt, lo, ratioAlpha)
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
// interval, relative to the median: what "±10%" means below.
func (r ratio) halfWidth() float64 {
	return max(r.median-r.lo, r.hi-r.median) / r.median
}

func (r ratio) String() string {
	if math.IsNaN(r.lo) || math.IsNaN(r.hi) {
		return fmt.Sprintf("%.3f [interval needs 4+ rounds]", r.median)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", r.median, r.lo, r.hi)
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
	theirs := []float64{100, 104, 98, 101, 99}
	tests := []struct {
		name           string
		ours           []float64
		median, lo, hi float64 // lo, hi NaN: unbounded
	}{
		// 10% faster in every round: the interval holds 1.1 and not 1.
		{"faster", []float64{110, 114.4, 107.8, 111.1, 108.9}, 1.1, 1.05, 1.15},
		// The same figures: the interval holds 1.
		{"same", []float64{101, 99, 100, 104, 98}, 1, 0.95, 1.05},
		{"three rounds", []float64{100, 104, 98}, 1, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := theirs[:len(tt.ours)]
			r := ratioOf(ts, tt.ours)
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
