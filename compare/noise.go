package compare

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/aclements/go-moremath/stats"

	"github.com/coordlab/scenario/internal/results"
)

// NoiseOptions adjusts MeasureNoise.
type NoiseOptions struct {
	// Rules are applied after DefaultRules, as in Options.
	Rules []Rule
	// Only, when not empty, keeps the metrics matching one of these globs.
	Only []string
	// All lists every numeric metric, not only those a tolerance gates.
	All bool
	// Alpha is the significance level (DefaultAlpha when 0).
	Alpha float64
}

// NoiseRow is the spread of one metric over the repetitions of an A/A
// run, and what a comparison of N against N such runs can detect.
type NoiseRow struct {
	Metric string    `json:"metric"`
	N      int       `json:"n"`
	Values []float64 `json:"values"`
	Median float64   `json:"median"`
	// IQR is the interquartile range (Hyndman and Fan's R8 quartiles).
	IQR float64 `json:"iqr"`
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	// CV is the coefficient of variation: the sample standard deviation
	// over the mean; null when the mean is 0.
	CV *float64 `json:"cv"`
	// MDE is the minimum detectable effect in the metric's unit (see
	// MinDetectable); null when N values cannot reach alpha.
	MDE *float64 `json:"mde"`
	// MDEPct is MDE as a percentage of the median; null when the median is 0.
	MDEPct *float64 `json:"mde_pct"`
	// Tolerance is the tolerance compare judges the metric by, as
	// written; empty when the metric is not gated.
	Tolerance string `json:"tolerance,omitempty"`
	// Allowance is that tolerance's amount at the median.
	Allowance *float64 `json:"allowance,omitempty"`
	// Gate is the smallest change compare flags at these sizes: beyond the
	// allowance and beyond the MDE, the larger of the two.
	Gate *float64 `json:"gate,omitempty"`
}

// Noise is what MeasureNoise found.
type Noise struct {
	Run Run `json:"run"`
	// N is the number of repetitions.
	N     int     `json:"n"`
	Alpha float64 `json:"alpha"`
	// MinP is the smallest p-value of an N vs N Mann-Whitney test.
	MinP float64 `json:"min_p"`
	// NeedN is the smallest N a side that can reach alpha.
	NeedN    int        `json:"need_n"`
	Warnings []string   `json:"warnings"`
	Rows     []NoiseRow `json:"rows"`
}

// MeasureNoise reads the spread of every numeric metric over an A/A run's
// repetitions and the minimum detectable effect of comparing N such runs
// with N others at opts.Alpha: the median, the interquartile range, the
// range, the coefficient of variation, the MDE (MinDetectable), and next
// to it the tolerance compare would apply and the smallest change the
// gate flags.
func MeasureNoise(a *results.Aggregate, opts NoiseOptions) (*Noise, error) {
	alpha := cmp.Or(opts.Alpha, DefaultAlpha)
	if alpha <= 0 || alpha >= 1 {
		return nil, fmt.Errorf("alpha %v: want a significance level between 0 and 1, such as 0.05", alpha)
	}
	side := FromAggregate(a)
	n := len(a.Repetitions)
	if n < 2 {
		return nil, fmt.Errorf("%d repetition: the spread of one run is not measured; repeat the scenario at least twice (5 reach p = %.4f)", n, MinP(5, 5))
	}
	out := &Noise{Run: side.run, N: n, Alpha: alpha, MinP: MinP(n, n), NeedN: neededN(alpha), Warnings: []string{}, Rows: []NoiseRow{}}
	if !reaches(out.MinP, alpha) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d vs %d repetitions cannot reach p <= %g (the smallest p-value is %.3g): no change is detectable, and compare judges by tolerance alone; repeat at least %d times", n, n, alpha, out.MinP, out.NeedN))
	}
	paths := map[string]bool{}
	for p := range side.values {
		paths[p] = true
	}
	for _, pat := range opts.Only {
		if !matchesAny(pat, paths) {
			return nil, fmt.Errorf("--only %q matches no metric", pat)
		}
	}
	if err := checkSigns(opts.Rules, paths); err != nil {
		return nil, err
	}
	defaults := DefaultRules()
	rules := append(defaults, opts.Rules...)
	for p := range paths {
		if len(opts.Only) > 0 && !slices.ContainsFunc(opts.Only, func(pat string) bool { return Match(pat, p) }) {
			continue
		}
		xs, ok := floats(side.present(p))
		if !ok || len(xs) == 0 {
			continue
		}
		tol, rule := resolve(rules, p)
		dup := slices.ContainsFunc(side.sole, func(prefix string) bool { return strings.HasPrefix(p, prefix) })
		gated := rule >= 0 && !tol.Ignore && !(dup && rule < len(defaults))
		if !gated && !opts.All {
			continue
		}
		out.Rows = append(out.Rows, noiseRow(p, xs, alpha, gated, tol))
	}
	order := scopeOrder(side.phases, nil)
	slices.SortFunc(out.Rows, func(x, y NoiseRow) int {
		if c := order(x.Metric) - order(y.Metric); c != 0 {
			return c
		}
		return strings.Compare(x.Metric, y.Metric)
	})
	return out, nil
}

func noiseRow(metric string, xs []float64, alpha float64, gated bool, tol Tolerance) NoiseRow {
	s := stats.Sample{Xs: slices.Sorted(slices.Values(xs)), Sorted: true}
	lo, hi := s.Bounds()
	r := NoiseRow{Metric: metric, N: len(xs), Values: xs, Median: round9(s.Quantile(0.5)), IQR: round9(s.IQR()), Min: lo, Max: hi}
	if mean := s.Mean(); mean != 0 && len(xs) > 1 {
		r.CV = results.Ptr(round9(s.StdDev() / math.Abs(mean)))
	}
	if d, ok := MinDetectable(xs, alpha); ok {
		r.MDE = results.Ptr(round9(d))
		if r.Median != 0 {
			r.MDEPct = results.Ptr(round9(d / math.Abs(r.Median) * 100))
		}
	}
	if gated {
		r.Tolerance = tol.String()
		allowed := tol.allowance(r.Median)
		r.Allowance = results.Ptr(round9(allowed))
		if r.MDE != nil {
			r.Gate = results.Ptr(round9(max(allowed, *r.MDE)))
		}
	}
	return r
}

// neededN is the smallest number of repetitions a side for which an N vs N
// Mann-Whitney test can reach alpha.
func neededN(alpha float64) int {
	n := 1
	for !reaches(MinP(n, n), alpha) && n < 1000 {
		n++
	}
	return n
}

// WriteText writes the noise for people: one row per metric.
func (z *Noise) WriteText(w io.Writer) error {
	tw := &textWriter{w: w}
	tw.printf("noise: %s\n", runText(z.Run))
	tw.printf("%d repetitions; alpha %g: an N vs N Mann-Whitney test reaches p = %.4f at best\n", z.N, z.Alpha, z.MinP)
	for _, warn := range z.Warnings {
		tw.printf("warning: %s\n", warn)
	}
	tw.printf("MDE: the smallest shift of every value that a comparison of these %d runs with %d others flags at alpha\n", z.N, z.N)
	tw.printf("(the observed values as the noise); gate: the smallest change compare flags, the larger of MDE and tolerance.\n\n")
	var rows [][]string
	for _, r := range z.Rows {
		cv := "-"
		if r.CV != nil {
			cv = fmt.Sprintf("%.1f%%", *r.CV*100)
		}
		rows = append(rows, []string{r.Metric, fmt.Sprint(r.N), value(r.Metric, r.Median), amount(r.Metric, r.IQR),
			value(r.Metric, r.Min) + " .. " + value(r.Metric, r.Max), cv,
			withPct(r.Metric, r.MDE, r.Median), orDash(r.Tolerance), withPct(r.Metric, r.Gate, r.Median)})
	}
	if len(rows) == 0 {
		tw.printf("no metric to show\n")
	} else {
		tw.table([]string{"metric", "n", "median", "IQR", "min .. max", "CV", "MDE", "tolerance", "gate"}, rows,
			[]bool{false, true, true, true, true, true, true, false, false})
	}
	if tw.err != nil {
		return fmt.Errorf("write noise: %w", tw.err)
	}
	return nil
}

// WriteJSON writes the noise for tools.
func (z *Noise) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(z); err != nil {
		return fmt.Errorf("write noise: %w", err)
	}
	return nil
}

// amount shows a non-negative amount (a spread, an allowance) in the
// metric's unit: percentage points for fractions.
func amount(metric string, v float64) string {
	return strings.TrimPrefix(delta(metric, v), "+")
}

// withPct shows an amount and its share of base (but for fractions,
// whose amounts are points); "-" when v is nil.
func withPct(metric string, v *float64, base float64) string {
	if v == nil {
		return "-"
	}
	s := amount(metric, *v)
	// A fraction's amounts are in points, not a share of it.
	if base != 0 && unitOf(metric) != unitFraction {
		s += fmt.Sprintf(" (%.0f%%)", *v/math.Abs(base)*100)
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
