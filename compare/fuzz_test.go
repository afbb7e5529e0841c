package compare

import (
	"math"
	"testing"
)

// FuzzParseRule feeds --tolerance arguments to the parser: it must refuse
// or accept without panicking, and an accepted tolerance must allow a
// finite, non-negative amount and keep its spec.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"*.p99=+10%", "phase.*.put.p99=+20%,2ms", "*.availability=-0.1pt",
		"*.max=ignore", "x=+0", "=", "*.p99=+%", "a=+1e309ms", "a=-NaN%", "*=+10%,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		if r.Tolerance.String() == "" {
			t.Errorf("ParseRule(%q): empty spec", s)
		}
		if r.Tolerance.Ignore {
			return
		}
		for _, base := range []float64{0, 1, 1000} {
			a := r.Tolerance.allowance(base)
			if math.IsNaN(a) || math.IsInf(a, 0) || a < 0 {
				t.Errorf("ParseRule(%q): allowance(%v) = %v", s, base, a)
			}
		}
		_ = Match(r.Pattern, "phase.steady.put.p99")
	})
}
