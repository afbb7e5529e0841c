package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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

// moreRounds reports whether another round should run after done rounds:
// always below least, never at most, and between them while the 95%
// interval of any contender's ratio to ref is unbounded or wider than
// ±width. Stopping at the first narrow interval makes the rounds' count
// depend on their results, which narrows intervals slightly below their
// nominal 95% coverage; least keeps that from stopping on a lucky first
// few (see README, Benchmarks).
func moreRounds(done, least, most int, width float64, ref []float64, contenders ...[]float64) bool {
	least = max(least, 1)
	switch {
	case done < least:
		return true
	case done >= max(most, least):
		return false
	}
	for _, c := range contenders {
		r := ratioOf(ref, c)
		if math.IsNaN(r.lo) || math.IsNaN(r.hi) || r.halfWidth() > width {
			return true
		}
	}
	return false
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

func TestMoreRounds(t *testing.T) {
	ref := []float64{100, 104, 98, 101, 99, 120, 80, 103, 100, 97, 102, 99}
	// Every round 10% faster (±1%): the interval is narrow from the 6th on.
	tight := []float64{110, 115.4, 107.8, 110.1, 109.9, 132, 88, 113.3, 110, 106.7, 112.2, 108.9}
	// Rounds swinging by ±30% around the reference: never narrow enough.
	wild := []float64{130, 73, 127, 71, 129, 84, 104, 72, 130, 68, 133, 69}
	tests := []struct {
		name              string
		done, least, most int
		contenders        [][]float64
		want              bool
	}{
		{"below the fewest, however narrow", 5, 8, 20, [][]float64{tight}, true},
		{"at the fewest and narrow", 8, 8, 20, [][]float64{tight}, false},
		{"at the fewest and wide", 8, 8, 20, [][]float64{wild}, true},
		{"wide at the most", 12, 8, 12, [][]float64{wild}, false},
		{"one of two wide", 8, 8, 20, [][]float64{tight, wild}, true},
		{"too few for an interval", 3, 1, 20, [][]float64{tight}, true},
		{"most below least runs least", 7, 8, 4, [][]float64{wild}, true},
		{"most below least stops there", 8, 8, 4, [][]float64{wild}, false},
		{"no rounds asked still runs one", 0, 0, 0, [][]float64{tight}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := make([][]float64, len(tt.contenders))
			for i, c := range tt.contenders {
				cs[i] = c[:tt.done]
			}
			if got := moreRounds(tt.done, tt.least, tt.most, 0.10, ref[:tt.done], cs...); got != tt.want {
				t.Errorf("moreRounds(%d, least %d, most %d) = %v, want %v", tt.done, tt.least, tt.most, got, tt.want)
			}
		})
	}
}

// TestMoreRoundsCoverage simulates benchmarks whose per-round log-ratio
// has a given spread, stops them with moreRounds as make bench does, and
// checks that stopping on the results costs little of the 95% interval's
// coverage of the true ratio, and how many rounds each spread takes.
func TestMoreRoundsCoverage(t *testing.T) {
	const (
		cases = 400
		truth = 0.9
	)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range []struct {
		spread      float64 // standard deviation of the per-round log-ratio
		medianStops int     // at most, the median count of rounds
	}{
		{0.05, 8}, {0.10, 10}, {0.15, 16},
	} {
		stops := make([]int, 0, cases)
		covered := 0
		for range cases {
			var ref, ours []float64
			for n := 0; moreRounds(n, 8, 20, 0.10, ref, ours); n++ {
				// The machine's speed drifts by ±20% between rounds and
				// moves both contenders alike.
				base := 100 * (1 + 0.2*rng.NormFloat64())
				ref = append(ref, base)
				ours = append(ours, base*truth*math.Exp(tt.spread*rng.NormFloat64()))
			}
			stops = append(stops, len(ref))
			if r := ratioOf(ref, ours); r.lo <= truth && truth <= r.hi {
				covered++
			}
		}
		slices.Sort(stops)
		coverage := float64(covered) / cases
		t.Logf("spread %.2f: rounds p10 %d, median %d, p90 %d; coverage %.3f", tt.spread, stops[cases/10], stops[cases/2], stops[cases*9/10], coverage)
		if coverage < 0.92 {
			t.Errorf("spread %.2f: the 95%% interval covered the true ratio in %.3f of cases, want >= 0.92", tt.spread, coverage)
		}
		if stops[cases/2] > tt.medianStops {
			t.Errorf("spread %.2f: median %d rounds, want <= %d", tt.spread, stops[cases/2], tt.medianStops)
		}
	}
}
