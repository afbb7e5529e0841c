package compare

import (
	"math"
	"slices"
)

// SignedRank tests paired values: base[i] and next[i] were measured
// together (the same round of an interleaved benchmark, on the machine as
// it was then), so each pair's difference next[i]-base[i] is free of what
// moved between rounds. It is the two-sided Wilcoxon signed-rank test of
// "the differences centre on 0", with the Hodges-Lehmann interval of their
// centre (the pseudo-median of the differences), and fills a ShiftTest
// like MannWhitney's. Where rounds drift together, as on a shared machine,
// it needs far fewer rounds than the unpaired test for the same width.
//
// Both slices must have the same length; a length mismatch gives an
// untestable, unbounded result. Zero differences are dropped from the
// test (Wilcoxon's convention) but kept in the interval. The statistic
// uses midranks for tied |differences| while the p-value and interval use
// the exact no-tie distribution of W+ (the sum of the ranks of the
// positive differences), which is exact for measurements that do not tie.
//
// The interval runs from the k-th to the (M+1-k)-th of the M = n(n+1)/2
// Walsh averages (d_i+d_j)/2, i <= j, in order, where k-1 is the largest w
// with P(W+ <= w) <= alpha/2. With n pairs the smallest p is 2/2^n: 5 pairs
// cannot reach 0.05 (0.0625), 6 reach 0.031 with the interval from the
// smallest difference to the largest (96.9%), 8 cut 3 averages from each
// end (96.1%).
func SignedRank(base, next []float64, alpha float64) ShiftTest {
	t := ShiftTest{Alpha: alpha, P: 1, MinP: 1, Confidence: 1}
	if len(base) != len(next) || len(base) == 0 {
		return t
	}
	diffs := make([]float64, len(base))
	for i := range base {
		diffs[i] = next[i] - base[i]
	}

	var nonzero []float64
	for _, d := range diffs {
		if d != 0 {
			nonzero = append(nonzero, d)
		}
	}
	if n := len(nonzero); n > 0 {
		dist := newSignedRankDist(n)
		t.MinP = min(1, 2*dist.cdf(0))
		w := positiveRankSum(nonzero)
		// Two-sided: twice the smaller tail; W+ is symmetric about n(n+1)/4.
		lower := dist.cdf(math.Floor(w))
		upper := 1 - dist.cdf(math.Ceil(w)-1)
		t.P = min(1, 2*min(lower, upper))
	}
	t.Testable = reaches(t.MinP, alpha)
	t.Significant = t.Testable && reaches(t.P, alpha)

	t.setInterval(walshInterval(diffs, alpha))
	return t
}

// positiveRankSum is W+: the ranks of |d| (midranks for ties) summed
// over the positive d. ds holds no zeros.
func positiveRankSum(ds []float64) float64 {
	idx := make([]int, len(ds))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		x, y := math.Abs(ds[a]), math.Abs(ds[b])
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	w := 0.0
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && math.Abs(ds[idx[j]]) == math.Abs(ds[idx[i]]) {
			j++
		}
		rank := float64(i+j+1) / 2 // midrank of positions i..j-1, 1-based
		for _, k := range idx[i:j] {
			if ds[k] > 0 {
				w += rank
			}
		}
		i = j
	}
	return w
}

// signedRankDist is the null distribution of W+ for n pairs without ties:
// every subset of the ranks 1..n is equally likely to be the positive
// ones, so P(W+ = w) is the number of subsets of {1..n} summing to w over
// 2^n.
type signedRankDist struct {
	cum []float64 // cum[w] = P(W+ <= w), w = 0..n(n+1)/2
}

func newSignedRankDist(n int) signedRankDist {
	maxW := n * (n + 1) / 2
	count := make([]float64, maxW+1)
	count[0] = 1
	for r := 1; r <= n; r++ {
		for w := maxW; w >= r; w-- {
			count[w] += count[w-r]
		}
	}
	total := math.Ldexp(1, n)
	cum := make([]float64, maxW+1)
	acc := 0.0
	for w, c := range count {
		acc += c
		cum[w] = acc / total
	}
	return signedRankDist{cum: cum}
}

// cdf is P(W+ <= w).
func (d signedRankDist) cdf(w float64) float64 {
	switch {
	case w < 0:
		return 0
	case int(w) >= len(d.cum):
		return 1
	}
	return d.cum[int(w)]
}

// walshInterval is the Hodges-Lehmann confidence interval of the centre
// of diffs (see SignedRank) and its achieved confidence; ±Inf where n is
// too small for alpha.
func walshInterval(diffs []float64, alpha float64) (lo, hi, confidence float64) {
	n := len(diffs)
	dist := newSignedRankDist(n)
	m := n * (n + 1) / 2
	k := 0
	for k < m/2 && reaches(dist.cdf(float64(k)), alpha/2) {
		k++
	}
	if k == 0 {
		return math.Inf(-1), math.Inf(1), 1
	}
	walsh := make([]float64, 0, m)
	for i, a := range diffs {
		for _, b := range diffs[i:] {
			walsh = append(walsh, (a+b)/2)
		}
	}
	slices.Sort(walsh)
	return walsh[k-1], walsh[m-k], 1 - 2*dist.cdf(float64(k-1))
}
