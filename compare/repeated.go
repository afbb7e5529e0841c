package compare

import (
	"fmt"
	"math"

	"github.com/coordlab/scenario/internal/results"
)

// judgeRepeated compares one metric that both sides measured, either of
// them in several repetitions (bs and ns hold the values present).
func judgeRepeated(metric string, bs, ns []any, tol Tolerance, alpha float64) (Row, error) {
	st := &RowStats{BaseN: len(bs), NewN: len(ns), BaseValues: bs, NewValues: ns}
	bf, bok := floats(bs)
	nf, nok := floats(ns)
	if !bok || !nok {
		// Booleans and checks: judged on whether they were good in every
		// repetition, as a single run's are.
		row, err := judge(metric, summary(bs), summary(ns), tol)
		row.Stats = st
		return row, err
	}
	bm, nm := results.Median(bf), results.Median(nf)
	delta := nm - bm
	row := Row{Metric: metric, Base: bm, New: nm, Tolerance: tolText(tol, bm, nm), Stats: st}
	row.Change = results.Ptr(round9(delta))
	if bm != 0 {
		row.ChangePct = results.Ptr(round9(delta / math.Abs(bm) * 100))
	}
	test := MannWhitney(bf, nf, alpha)
	byTolerance := tolVerdict(metric, bm, delta, tol)
	test.BeyondTolerance = byTolerance != OK
	st.Test = &test
	row.Verdict = OK
	if byTolerance != OK && (test.Significant || !test.Testable) {
		row.Verdict = byTolerance
	}
	return row, nil
}

// floats returns vs as numbers, or false when one is not a number.
func floats(vs []any) ([]float64, bool) {
	out := make([]float64, 0, len(vs))
	for _, v := range vs {
		f, ok := v.(float64)
		if !ok {
			return nil, false
		}
		out = append(out, f)
	}
	return out, true
}

// summary is one value standing for a side's repetitions: the median of
// numbers; for booleans, true when every repetition's is; for checks,
// "pass" when every repetition passed, else "error" if one could not be
// evaluated, else "fail". nil when vs is empty; vs[0] when the values are
// of different kinds (judge then refuses them).
func summary(vs []any) any {
	if len(vs) == 0 {
		return nil
	}
	if len(vs) == 1 {
		return vs[0]
	}
	if xs, ok := floats(vs); ok {
		return results.Median(xs)
	}
	switch vs[0].(type) {
	case bool:
		all := true
		for _, v := range vs {
			b, ok := v.(bool)
			if !ok {
				return vs[0]
			}
			all = all && b
		}
		return all
	case string:
		status := results.StatusPass
		for _, v := range vs {
			s, ok := v.(string)
			if !ok {
				return vs[0]
			}
			if s == results.StatusError || s == results.StatusFail && status == results.StatusPass {
				status = s
			}
		}
		return status
	}
	return vs[0]
}

func orEmpty(vs []any) []any {
	if vs == nil {
		return []any{}
	}
	return vs
}

// goodCount shows a side's values of a boolean or a check: how many
// repetitions had the good value.
func goodCount(vs []any) string {
	good := 0
	for _, v := range vs {
		if v == true || v == results.StatusPass {
			good++
		}
	}
	what := "true"
	if len(vs) > 0 {
		if _, ok := vs[0].(string); ok {
			what = "pass"
		}
	}
	return fmt.Sprintf("%d/%d %s", good, len(vs), what)
}

// notSignificant counts the rows within tolerance only because their
// change, beyond the tolerance, was not significant.
func (d *Diff) notSignificant() int {
	n := 0
	for _, r := range d.Rows {
		if r.Verdict == OK && r.Stats != nil && r.Stats.Test != nil && r.Stats.Test.BeyondTolerance {
			n++
		}
	}
	return n
}

// writeRepeated writes the table of a comparison with repetitions: the
// medians, how many values each side had, the median change, the
// confidence interval of the shift and the p-value. It lists the rows
// beyond their tolerance, significant or not (every judged row with all).
func (d *Diff) writeRepeated(tw *textWriter, all bool) {
	conf := 1 - d.Alpha
	for _, r := range d.Rows {
		if t := rowTest(r); t != nil && t.Testable {
			conf = t.Confidence // the same for every row of equal sizes; shown as the header's
			break
		}
	}
	tw.printf("base and new are medians over the repetitions; n: repetitions per side; interval: the %.1f%% confidence\n", conf*100)
	tw.printf("interval of the shift NEW - BASE; p: two-sided Mann-Whitney U. A change beyond its tolerance regresses only\n")
	tw.printf("when p <= %g.\n\n", d.Alpha)
	var shown [][]string
	untestable := false
	for _, r := range d.Rows {
		t := rowTest(r)
		beyond := t != nil && t.BeyondTolerance
		if r.Verdict != Regression && r.Verdict != Improved && !(r.Verdict == OK && (all || beyond)) {
			continue
		}
		base, next := value(r.Metric, r.Base), value(r.Metric, r.New)
		interval, p := "-", "-"
		verdict := verdictText(r.Verdict)
		if t == nil && r.Stats != nil {
			base, next = goodCount(r.Stats.BaseValues), goodCount(r.Stats.NewValues)
		}
		if t != nil {
			interval = shiftText(r.Metric, t)
			p = fmt.Sprintf("%.3f", t.P)
			if !t.Testable {
				p += "†"
				untestable = true
			}
			if r.Verdict == OK && beyond {
				verdict = "not significant"
			}
		}
		n := "-"
		if r.Stats != nil {
			n = fmt.Sprintf("%d+%d", r.Stats.BaseN, r.Stats.NewN)
		}
		shown = append(shown, []string{r.Metric, base, next, n, change(r), interval, p, r.Tolerance, verdict})
	}
	if len(shown) == 0 {
		tw.printf("no metric moved beyond its tolerance\n")
		return
	}
	tw.table([]string{"metric", "base", "new", "n", "change", "interval", "p", "tolerance", "verdict"}, shown,
		[]bool{false, true, true, true, true, true, true, false, false})
	if untestable {
		tw.printf("† too few repetitions for any p-value to reach %g: judged by the tolerance on the medians alone\n", d.Alpha)
	}
}

func rowTest(r Row) *ShiftTest {
	if r.Stats == nil {
		return nil
	}
	return r.Stats.Test
}

// shiftText shows a confidence interval of a change in the metric's unit.
func shiftText(metric string, t *ShiftTest) string {
	if t.CILow == nil || t.CIHigh == nil {
		return "unbounded"
	}
	return "[" + delta(metric, *t.CILow) + ", " + delta(metric, *t.CIHigh) + "]"
}
