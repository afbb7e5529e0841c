package compare

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

func TestSignedRank(t *testing.T) {
	// R's ?wilcox.test example (Hollander & Wolfe, depression scale before
	// and after): V = 40, one-sided p = 0.01953, so two-sided 0.0390625.
	before := []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}
	after := []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}
	up := func(xs []float64, by float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = x + by + 0.01*float64(i%3) // distinct differences
		}
		return out
	}
	base8 := []float64{100, 90, 110, 95, 105, 98, 102, 120}
	tests := []struct {
		name        string
		base, next  []float64
		p           float64
		minP        float64
		testable    bool
		significant bool
		bounded     bool
		confidence  float64
	}{
		{"R's example", before, after, 0.0390625, 2.0 / 512, true, true, true, 1 - 2*10.0/512},
		{"every pair up, 6 pairs", base8[:6], up(base8[:6], 5), 2.0 / 64, 2.0 / 64, true, true, true, 1 - 2.0/64},
		{"every pair up, 5 pairs cannot reach 0.05", base8[:5], up(base8[:5], 5), 2.0 / 32, 2.0 / 32, false, false, false, 1},
		{"every pair up, 8 pairs", base8, up(base8, 5), 2.0 / 256, 2.0 / 256, true, true, true, 1 - 2*5.0/256},
		{"identical", base8, base8, 1, 1, false, false, true, 1 - 2*5.0/256},
		{"mismatched lengths", base8, base8[:7], 1, 1, false, false, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SignedRank(tt.base, tt.next, DefaultAlpha)
			if math.Abs(got.P-tt.p) > 1e-9 || math.Abs(got.MinP-tt.minP) > 1e-9 {
				t.Errorf("p %v min p %v, want %v %v", got.P, got.MinP, tt.p, tt.minP)
			}
			if got.Testable != tt.testable || got.Significant != tt.significant {
				t.Errorf("testable %v significant %v, want %v %v", got.Testable, got.Significant, tt.testable, tt.significant)
			}
			if (got.CILow != nil && got.CIHigh != nil) != tt.bounded {
				t.Fatalf("interval bounded = %v, want %v", got.CILow != nil && got.CIHigh != nil, tt.bounded)
			}
			if math.Abs(got.Confidence-tt.confidence) > 1e-9 {
				t.Errorf("confidence %v, want %v", got.Confidence, tt.confidence)
			}
			if tt.bounded && tt.significant == (*got.CILow <= 0 && 0 <= *got.CIHigh) {
				t.Errorf("interval [%v, %v] holds 0 = %v while significant = %v", *got.CILow, *got.CIHigh, !tt.significant, tt.significant)
			}
		})
	}
}

// TestSignedRankDistribution checks the counted distribution against every
// subset of the ranks, enumerated.
func TestSignedRankDistribution(t *testing.T) {
	for n := 1; n <= 12; n++ {
		d := newSignedRankDist(n)
		count := make([]float64, n*(n+1)/2+1)
		for set := uint(0); set < 1<<n; set++ {
			w := 0
			for s := set; s != 0; s &= s - 1 {
				w += bits.TrailingZeros(s) + 1
			}
			count[w]++
		}
		acc := 0.0
		for w, c := range count {
			acc += c
			if want := acc / float64(uint(1)<<n); math.Abs(d.cdf(float64(w))-want) > 1e-12 {
				t.Fatalf("n=%d: P(W <= %d) = %v, want %v", n, w, d.cdf(float64(w)), want)
			}
		}
	}
}

// TestSignedRankIntervalInvertsTest checks the interval's defining
// property: a shift c is inside it exactly when the test of the
// differences less c does not reject.
func TestSignedRankIntervalInvertsTest(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for trial := range 50 {
		n := 6 + trial%10
		base, next := make([]float64, n), make([]float64, n)
		for i := range n {
			base[i] = 100 + 10*rng.NormFloat64()
			next[i] = base[i] + 3 + rng.NormFloat64()
		}
		got := SignedRank(base, next, DefaultAlpha)
		if got.CILow == nil || got.CIHigh == nil {
			t.Fatalf("n=%d: unbounded interval", n)
		}
		lo, hi := *got.CILow, *got.CIHigh
		const eps = 1e-7
		for _, c := range []struct {
			shift  float64
			reject bool
		}{{lo - eps, true}, {lo + eps, false}, {hi - eps, false}, {hi + eps, true}} {
			shifted := make([]float64, n)
			for i := range next {
				shifted[i] = next[i] - c.shift
			}
			if r := SignedRank(base, shifted, DefaultAlpha); r.Significant != c.reject {
				t.Errorf("n=%d, interval [%.4f, %.4f], shift %.6f: significant %v (p %.4f), want %v", n, lo, hi, c.shift, r.Significant, r.P, c.reject)
			}
		}
	}
}

// TestSignedRankCoverage draws paired rounds that drift together (a
// shared machine) and checks that the interval holds the true shift at
// least as often as it claims, and that pairing makes it far narrower
// than the unpaired test's on the same rounds.
func TestSignedRankCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials, n, shift = 2000, 8, 0.05
	held := 0
	var pairedWidth, unpairedWidth float64
	for range trials {
		base, next := make([]float64, n), make([]float64, n)
		for i := range n {
			drift := 0.2 * rng.NormFloat64() // the round's machine state, shared
			base[i] = drift + 0.02*rng.NormFloat64()
			next[i] = drift + shift + 0.02*rng.NormFloat64()
		}
		p := SignedRank(base, next, DefaultAlpha)
		if *p.CILow <= shift && shift <= *p.CIHigh {
			held++
		}
		pairedWidth += *p.CIHigh - *p.CILow
		u := MannWhitney(base, next, DefaultAlpha)
		unpairedWidth += *u.CIHigh - *u.CILow
	}
	if cover := float64(held) / trials; cover < 0.95 {
		t.Errorf("interval held the shift in %.3f of trials, want >= 0.95", cover)
	}
	if pairedWidth*4 > unpairedWidth {
		t.Errorf("mean paired width %.4f, unpaired %.4f: pairing should narrow it at least 4x here", pairedWidth/trials, unpairedWidth/trials)
	}
}
