package compare

import (
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
)

// DefaultAlpha is the significance level of a comparison of repeated
// runs: a change beyond its tolerance regresses only when the test of
// difference gives p <= alpha.
const DefaultAlpha = 0.05

// ShiftTest is how a metric's repetitions in NEW differ from BASE's.
//
// The test is the two-sided Mann-Whitney U test (go-moremath's exact
// distribution, ties included, up to 25 values a side): it assumes no
// distribution of the values, which latency percentiles and failover
// times do not follow anyway, and asks whether one side's values tend to
// be larger than the other's. Its p-value cannot fall below 2/C(n1+n2, n1)
// (no ties): 1 vs 1 gives 1, 3 vs 3 0.1, 4 vs 4 0.029, 5 vs 5 0.0079,
// 6 vs 6 0.0022. Below 4 vs 4, no change can be significant at 0.05.
//
// The interval is the distribution-free confidence interval of the shift
// NEW - BASE that goes with that test (Hodges-Lehmann; Moses, 1965): of
// the n1*n2 differences new_j - base_i in order, it runs from the k-th to
// the (n1*n2+1-k)-th, where k-1 is the largest U whose lower tail
// P(U <= k-1) is at most alpha/2 under the same U distribution. It
// excludes 0 exactly when the test rejects at alpha (without ties), and
// it is unbounded when n is too small for alpha to be reachable. Its
// achieved confidence is at least 1-alpha (0.968 for 5 vs 5 at 0.05).
type ShiftTest struct {
	// Alpha is the significance level.
	Alpha float64 `json:"alpha"`
	// P is the two-sided p-value; 1 when every value of both sides is equal.
	P float64 `json:"p"`
	// MinP is the smallest p-value the test can give with these sizes.
	MinP float64 `json:"min_p"`
	// Testable is false when MinP > Alpha: no change can be significant,
	// and compare judges the metric by its tolerance on the medians alone,
	// saying so.
	Testable bool `json:"testable"`
	// Significant is P <= Alpha, on a testable metric.
	Significant bool `json:"significant"`
	// BeyondTolerance is set by Compare: the median change exceeds the
	// metric's tolerance, in either direction.
	BeyondTolerance bool `json:"beyond_tolerance"`
	// CILow and CIHigh bound the shift NEW - BASE in the metric's unit;
	// nil when that side of the interval is unbounded.
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	// Confidence is the interval's achieved confidence level (>= 1-Alpha).
	Confidence float64 `json:"confidence"`
}

// MannWhitney tests base against next (see ShiftTest). Both must hold at
// least one value.
func MannWhitney(base, next []float64, alpha float64) ShiftTest {
	t := ShiftTest{Alpha: alpha, P: 1, MinP: MinP(len(base), len(next))}
	t.Testable = reaches(t.MinP, alpha)
	// LocationDiffers: two-sided. The library refuses samples whose values
	// are all equal (the test means nothing there): p stays 1.
	if res, err := stats.MannWhitneyUTest(base, next, stats.LocationDiffers); err == nil {
		t.P = min(1, res.P)
	}
	t.Significant = t.Testable && reaches(t.P, alpha)
	t.setInterval(shiftInterval(base, next, alpha))
	return t
}

// setInterval keeps an interval's bounds (nil where infinite: unbounded)
// and its achieved confidence.
func (t *ShiftTest) setInterval(lo, hi, confidence float64) {
	if !math.IsInf(lo, 0) {
		t.CILow = &lo
	}
	if !math.IsInf(hi, 0) {
		t.CIHigh = &hi
	}
	t.Confidence = confidence
}

// reaches reports p <= alpha, forgiving the rounding of a p-value
// computed as a sum (3 vs 3 gives 0.1 at best, which must reach 0.1).
func reaches(p, alpha float64) bool {
	return p <= alpha*(1+1e-9)
}

// MinP is the smallest two-sided p-value the Mann-Whitney U test can give
// for samples of n1 and n2 distinct values: every value of one side
// below every value of the other, U = 0, whose probability under the
// null hypothesis is 1/C(n1+n2, n1).
func MinP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	return min(1, 2*stats.UDist{N1: n1, N2: n2}.CDF(0))
}

// shiftInterval is the confidence interval of the shift next - base
// (see ShiftTest), and its achieved confidence; ±Inf where unbounded.
func shiftInterval(base, next []float64, alpha float64) (lo, hi, confidence float64) {
	n1, n2 := len(base), len(next)
	dist := stats.UDist{N1: n1, N2: n2}
	// k is the number of differences cut from each end: the largest k
	// with P(U <= k-1) <= alpha/2.
	k := 0
	for k < n1*n2/2 && reaches(dist.CDF(float64(k)), alpha/2) {
		k++
	}
	if k == 0 {
		return math.Inf(-1), math.Inf(1), 1
	}
	diffs := make([]float64, 0, n1*n2)
	for _, b := range base {
		for _, n := range next {
			diffs = append(diffs, n-b)
		}
	}
	slices.Sort(diffs)
	return diffs[k-1], diffs[len(diffs)-k], 1 - 2*dist.CDF(float64(k-1))
}

// MinDetectable is the minimum detectable effect of an N vs N comparison
// whose values spread as xs do: the smallest shift d such that the
// Mann-Whitney test, comparing xs with xs shifted by any amount larger
// than d, gives p <= alpha. It answers "if NEW were these same runs made
// slower by d, would compare flag it?", using the observed values as the
// noise. ok is false when N values cannot reach alpha at all (MinP).
//
// The p-value of xs against xs+d only changes where d crosses one of the
// pairwise differences xs[i]-xs[j] (there a pair changes order), and it
// falls as d grows, so the answer is the smallest such difference past
// which the test rejects: a binary search over the sorted differences,
// each step one call of the library's test. With N = 5 at 0.05 the test
// rejects when at most 2 of the 25 cross pairs are out of order, so d is
// the 3rd-largest pairwise difference: close to the observed range.
//
// Two independent samples differ by more than a sample from a shifted
// copy of itself, so a real shift of exactly d is flagged only part of
// the time (about half, for normal noise and N = 5 or 8); twice d about
// 87% of the time (TestMinDetectablePower measures both).
func MinDetectable(xs []float64, alpha float64) (d float64, ok bool) {
	n := len(xs)
	if !reaches(MinP(n, n), alpha) {
		return 0, false
	}
	cands := []float64{0}
	for _, a := range xs {
		for _, b := range xs {
			if a > b {
				cands = append(cands, a-b)
			}
		}
	}
	slices.Sort(cands)
	cands = slices.Compact(cands)
	scale := 0.0
	for _, x := range xs {
		scale = max(scale, math.Abs(x))
	}
	flags := func(d float64) bool {
		// Just past d: no cross pair ties at the boundary.
		eps := 1e-9*max(d, scale) + 1e-12
		shifted := make([]float64, n)
		for i, x := range xs {
			shifted[i] = x + d + eps
		}
		res, err := stats.MannWhitneyUTest(xs, shifted, stats.LocationDiffers)
		return err == nil && reaches(res.P, alpha)
	}
	i, _ := slices.BinarySearchFunc(cands, true, func(c float64, _ bool) int {
		if flags(c) {
			return 1
		}
		return -1
	})
	if i == len(cands) {
		// Past the largest difference every pair is in order: U = 0, the
		// smallest p, which MinP says reaches alpha.
		return cands[len(cands)-1], true
	}
	return cands[i], true
}
