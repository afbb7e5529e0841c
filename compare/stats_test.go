package compare

import (
	"cmp"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aclements/go-moremath/stats"
)

func TestMinP(t *testing.T) {
	tests := []struct {
		name   string
		n1, n2 int
		want   float64
	}{
		{name: "one a side", n1: 1, n2: 1, want: 1},
		{name: "2 vs 2", n1: 2, n2: 2, want: 1.0 / 3},
		{name: "3 vs 3", n1: 3, n2: 3, want: 0.1},
		{name: "4 vs 4", n1: 4, n2: 4, want: 2.0 / 70},
		{name: "5 vs 5", n1: 5, n2: 5, want: 2.0 / 252},
		{name: "1 vs 5", n1: 1, n2: 5, want: 1.0 / 3},
		{name: "5 vs 3", n1: 5, n2: 3, want: 2.0 / 56},
		{name: "empty side", n1: 0, n2: 5, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MinP(tt.n1, tt.n2); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("MinP(%d, %d) = %v, want %v", tt.n1, tt.n2, got, tt.want)
			}
		})
	}
}

// spread returns values around center with a known relative spread: the
// offsets are fixed fractions of center, so every test sees the same
// numbers.
func spread(center float64, offsets ...float64) []float64 {
	out := make([]float64, len(offsets))
	for i, o := range offsets {
		out[i] = center * (1 + o)
	}
	return out
}

func TestMannWhitney(t *testing.T) {
	// Five runs whose p99 spreads by about ±5% around 100 ms.
	a := spread(100, -0.05, -0.02, 0, 0.03, 0.05)
	aPrime := spread(100, -0.04, -0.01, 0.01, 0.02, 0.06)
	shifted := spread(120, -0.03, -0.05, 0.01, 0.04, 0.02) // a planted 20% regression
	tests := []struct {
		name        string
		base, next  []float64
		alpha       float64 // DefaultAlpha when 0
		significant bool
		testable    bool
		p           float64 // exact p, when >= 0
		ciLow       float64 // NaN: unbounded
		ciHigh      float64
		confidence  float64
	}{
		{name: "planted 20% shift is flagged", base: a, next: shifted, significant: true, testable: true,
			p: 2.0 / 252, ciLow: 11.4, ciHigh: 26.8, confidence: 1 - 2*4.0/252},
		{name: "A/A is not", base: a, next: aPrime, testable: true, p: -1, ciLow: -6, ciHigh: 7, confidence: 1 - 2*4.0/252},
		{name: "a run against itself", base: a, next: a, testable: true, p: 1, ciLow: -7, ciHigh: 7, confidence: 1 - 2*4.0/252},
		{name: "3 vs 3 cannot reach 0.05", base: a[:3], next: shifted[:3], testable: false, p: 0.1,
			ciLow: math.NaN(), ciHigh: math.NaN(), confidence: 1},
		{name: "3 vs 3 reach 0.1 when apart", base: a[:3], next: shifted[:3], alpha: 0.1, significant: true, testable: true, p: 0.1,
			ciLow: 114 - 100, ciHigh: 121.2 - 95, confidence: 0.9},
		{name: "1 vs 1", base: a[:1], next: shifted[:1], testable: false, p: 1, ciLow: math.NaN(), ciHigh: math.NaN(), confidence: 1},
		{name: "every value equal", base: []float64{0, 0, 0, 0, 0}, next: []float64{0, 0, 0, 0, 0}, testable: true, p: 1,
			ciLow: 0, ciHigh: 0, confidence: 1 - 2*4.0/252},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alpha := cmp.Or(tt.alpha, DefaultAlpha)
			got := MannWhitney(tt.base, tt.next, alpha)
			if got.Significant != tt.significant || got.Testable != tt.testable {
				t.Errorf("significant %v testable %v (p %v), want %v %v", got.Significant, got.Testable, got.P, tt.significant, tt.testable)
			}
			if tt.p >= 0 && math.Abs(got.P-tt.p) > 1e-9 {
				t.Errorf("p = %v, want %v", got.P, tt.p)
			}
			if !tt.significant && got.P <= alpha {
				t.Errorf("p = %v, want > %v", got.P, alpha)
			}
			checkBound(t, "low", got.CILow, tt.ciLow)
			checkBound(t, "high", got.CIHigh, tt.ciHigh)
			if math.Abs(got.Confidence-tt.confidence) > 1e-9 {
				t.Errorf("confidence %v, want %v", got.Confidence, tt.confidence)
			}
			if got.CILow != nil && got.CIHigh != nil && tt.significant == (*got.CILow <= 0 && 0 <= *got.CIHigh) {
				t.Errorf("interval [%v, %v] disagrees with the test (significant %v)", *got.CILow, *got.CIHigh, tt.significant)
			}
		})
	}
}

func checkBound(t *testing.T, which string, got *float64, want float64) {
	t.Helper()
	switch {
	case math.IsNaN(want) && got != nil:
		t.Errorf("%s bound %v, want unbounded", which, *got)
	case !math.IsNaN(want) && got == nil:
		t.Errorf("%s bound unbounded, want %v", which, want)
	case got != nil && math.Abs(*got-want) > 1e-9:
		t.Errorf("%s bound %v, want %v", which, *got, want)
	}
}

// TestShiftIntervalOrderStatistics checks the interval against the
// textbook case: 1..5 against 11..15, whose 25 differences run 6..14; at
// 95% with 5 a side the interval drops the 2 most extreme at each end
// (P(U <= 2) = 4/252 <= 0.025 < P(U <= 3) = 7/252).
func TestShiftIntervalOrderStatistics(t *testing.T) {
	lo, hi, conf := shiftInterval([]float64{1, 2, 3, 4, 5}, []float64{11, 12, 13, 14, 15}, 0.05)
	if lo != 7 || hi != 13 || math.Abs(conf-(1-8.0/252)) > 1e-12 {
		t.Errorf("interval [%v, %v] at %v, want [7, 13] at %v", lo, hi, conf, 1-8.0/252)
	}
}

func TestMinDetectable(t *testing.T) {
	tests := []struct {
		name  string
		xs    []float64
		alpha float64
		want  float64
		ok    bool
	}{
		// Past a shift of 3 only the pair (14, 10) is out of order: U = 1,
		// p = 4/252. Past 2, three pairs are: U = 3, p = 14/252 > 0.05.
		{name: "evenly spread", xs: []float64{10, 11, 12, 13, 14}, alpha: 0.05, want: 3, ok: true},
		{name: "order does not matter", xs: []float64{13, 10, 14, 12, 11}, alpha: 0.05, want: 3, ok: true},
		// At 0.01 only U = 0 is rare enough: every pair in order.
		{name: "stricter alpha", xs: []float64{10, 11, 12, 13, 14}, alpha: 0.01, want: 4, ok: true},
		{name: "scales with the spread", xs: []float64{100, 110, 120, 130, 140}, alpha: 0.05, want: 30, ok: true},
		{name: "no spread", xs: []float64{7, 7, 7, 7, 7}, alpha: 0.05, want: 0, ok: true},
		{name: "three cannot reach 0.05", xs: []float64{1, 2, 3}, alpha: 0.05, ok: false},
		{name: "three reach 0.1", xs: []float64{1, 2, 3}, alpha: 0.1, want: 2, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := MinDetectable(tt.xs, tt.alpha)
			if ok != tt.ok || ok && math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("MinDetectable = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestMinDetectablePower measures what the MDE means for normal noise:
// the MDE of one A/A sample of N, applied as a shift between two fresh
// samples of N, is flagged about half the time, twice it nearly always,
// and no shift at all no more often than alpha.
func TestMinDetectablePower(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{5, 8} {
		draw := func() []float64 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = r.NormFloat64()
			}
			return xs
		}
		const trials = 1000
		hits := map[float64]int{}
		for range trials {
			d, ok := MinDetectable(draw(), DefaultAlpha)
			if !ok {
				t.Fatalf("n=%d: MDE unreachable", n)
			}
			for _, f := range []float64{0, 1, 2} {
				base, next := draw(), draw()
				for i := range next {
					next[i] += f * d
				}
				if res, err := stats.MannWhitneyUTest(base, next, stats.LocationDiffers); err == nil && res.P <= DefaultAlpha {
					hits[f]++
				}
			}
		}
		power := func(f float64) float64 { return float64(hits[f]) / trials }
		t.Logf("n=%d: flagged %.3f with no shift, %.3f at the MDE, %.3f at twice it", n, power(0), power(1), power(2))
		if power(0) > DefaultAlpha+0.015 || power(1) < 0.35 || power(1) > 0.65 || power(2) < 0.8 {
			t.Errorf("n=%d: power %.3f / %.3f / %.3f at 0 / 1 / 2 MDE, want <= alpha / about half / >= 0.8", n, power(0), power(1), power(2))
		}
	}
}
