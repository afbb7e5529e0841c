package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/coordlab/scenario/plan"
)

// WriteText writes the diff for people: both runs, any warnings, a table of
// the metrics that moved beyond their tolerance (of every judged metric
// with all), the metrics missing from the new run, those only in it, and a
// tally.
func (d *Diff) WriteText(w io.Writer, all bool) error {
	tw := &textWriter{w: w}
	tw.printf("base: %s\n", runText(d.Base))
	tw.printf("new:  %s\n", runText(d.New))
	for _, warn := range d.Warnings {
		tw.printf("warning: %s\n", warn)
	}
	tw.printf("\n")

	if d.Alpha != 0 {
		d.writeRepeated(tw, all)
	} else {
		var shown [][]string
		for _, r := range d.Rows {
			if r.Verdict == Regression || r.Verdict == Improved || (all && r.Verdict == OK) {
				shown = append(shown, []string{r.Metric, value(r.Metric, r.Base), value(r.Metric, r.New), change(r), r.Tolerance, verdictText(r.Verdict)})
			}
		}
		if len(shown) > 0 {
			tw.table([]string{"metric", "base", "new", "change", "tolerance", "verdict"}, shown, []bool{false, true, true, true, false, false})
		} else {
			tw.printf("no metric moved beyond its tolerance\n")
		}
	}

	if n := d.Count(Missing); n > 0 {
		tw.printf("\nwarning: %d metric(s) missing from NEW, not compared (--strict fails on them):\n", n)
		tw.list(d.Rows, Missing, "base", func(r Row) any { return r.Base })
	}
	if n := d.Count(New); n > 0 {
		tw.printf("\n%d metric(s) only in NEW, not compared:\n", n)
		tw.list(d.Rows, New, "new", func(r Row) any { return r.New })
	}
	within := fmt.Sprintf("%d within tolerance", d.Count(OK))
	if d.Alpha != 0 {
		within += fmt.Sprintf(" (%d of them beyond it but not significant at alpha %g)", d.notSignificant(), d.Alpha)
	}
	tw.printf("\n%d regressed, %d improved, %s, %d missing from NEW, %d only in NEW; %d not gated\n",
		d.Count(Regression), d.Count(Improved), within, d.Count(Missing), d.Count(New), d.Ungated)
	if tw.err != nil {
		return fmt.Errorf("write comparison: %w", tw.err)
	}
	return nil
}

// WriteJSON writes the diff for tools: every row (within tolerance too),
// the warnings, and a count per verdict.
func (d *Diff) WriteJSON(w io.Writer) error {
	summary := make(map[Verdict]int)
	for _, v := range []Verdict{Regression, Improved, OK, Missing, New} {
		summary[v] = d.Count(v)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		*Diff
		Summary   map[Verdict]int `json:"summary"`
		Regressed bool            `json:"regressed"`
	}{d, summary, summary[Regression] > 0})
	if err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// textWriter keeps the first write error, so the layout code stays linear.
type textWriter struct {
	w   io.Writer
	err error
}

func (t *textWriter) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

// table aligns columns: names and words to the left, the numeric ones to
// the right.
func (t *textWriter) table(header []string, rows [][]string, numeric []bool) {
	widths := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i, cell := range r {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	for _, r := range append([][]string{header}, rows...) {
		var b strings.Builder
		for i, cell := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			switch {
			case i == len(r)-1:
				b.WriteString(cell) // no trailing blanks
			case numeric[i]:
				b.WriteString(pad + cell + "  ")
			default:
				b.WriteString(cell + pad + "  ")
			}
		}
		t.printf("%s\n", b.String())
	}
}

func (t *textWriter) list(rows []Row, v Verdict, side string, val func(Row) any) {
	width := 0
	for _, r := range rows {
		if r.Verdict == v {
			width = max(width, len([]rune(r.Metric)))
		}
	}
	for _, r := range rows {
		if r.Verdict == v {
			t.printf("  %-*s  %s %s\n", width, r.Metric, side, value(r.Metric, val(r)))
		}
	}
}

func runText(r Run) string {
	var parts []string
	id := "run " + r.RunID
	if r.Repetitions > 0 {
		id = fmt.Sprintf("%d repetitions", r.Repetitions)
	}
	for _, p := range []string{r.File, filepath.Base(r.Scenario), id, r.Store, r.Point} {
		if p != "" && p != "." && p != "run " {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "  ")
}

func verdictText(v Verdict) string {
	if v == Regression {
		return "REGRESSION" // the one a reader must not miss
	}
	return string(v)
}

// unit is how a metric's values read.
type unit int

const (
	unitNumber   unit = iota
	unitMS            // latencies and durations
	unitFraction      // availability, error rates: shown in %, changes in points
	unitRate          // operations per second
)

func unitOf(metric string) unit {
	switch metric[strings.LastIndex(metric, ".")+1:] {
	case plan.StatP50, plan.StatP90, plan.StatP99, plan.StatP999, plan.StatMax, plan.StatMin, plan.StatMean,
		plan.MetricMaxGap, plan.MetricFailoverTime, plan.MetricLeaderElect, plan.MetricRejoin, plan.MetricNoLeader, plan.MetricLeaderUnknown, plan.MetricWriteFloor:
		return unitMS
	case plan.MetricAvailability, plan.MetricTimeAvail, plan.StatErrorRate, plan.MetricLateShare, plan.MetricFloorExcess, plan.MetricStealShare, plan.MetricCPUWait, plan.MetricRunnerWait:
		return unitFraction
	case plan.StatThroughput:
		return unitRate
	}
	return unitNumber
}

// value shows one side of a row.
func value(metric string, v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case float64:
		switch unitOf(metric) {
		case unitMS:
			return duration(v)
		case unitFraction:
			return fmt.Sprintf("%.2f%%", v*100)
		case unitRate:
			return fmt.Sprintf("%.1f/s", v)
		}
		return number(v)
	}
	return fmt.Sprint(v)
}

// change shows New - Base in the metric's unit, and relative to Base.
func change(r Row) string {
	if r.Change == nil {
		return "-"
	}
	s := delta(r.Metric, *r.Change)
	if r.ChangePct != nil {
		s += fmt.Sprintf(" (%+.1f%%)", *r.ChangePct)
	}
	return s
}

// delta shows a signed change in the metric's unit.
func delta(metric string, c float64) string {
	sign := "+"
	if c < 0 {
		sign = "-"
	}
	switch unitOf(metric) {
	case unitMS:
		return sign + duration(math.Abs(c))
	case unitFraction:
		return fmt.Sprintf("%+.2fpt", c*100)
	case unitRate:
		return fmt.Sprintf("%+.1f/s", c)
	}
	return sign + number(math.Abs(c))
}

// duration shows milliseconds with three significant digits, the precision
// the histograms keep, in a unit a reader takes in at a glance.
func duration(ms float64) string {
	switch {
	case ms == 0:
		return "0 ms"
	case ms < 1:
		return fmt.Sprintf("%.0f µs", ms*1000)
	case ms < 1000:
		return sig3(ms) + " ms"
	default:
		return sig3(ms/1000) + " s"
	}
}

func sig3(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
