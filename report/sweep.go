package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/coordlab/scenario/internal/results"
)

// sweepPage is what templates/sweep.html renders.
type sweepPage struct {
	Title      string
	Header     []field
	Comparison string
	Points     []sweepPoint
	Phases     []sweepPhase
}

type sweepPoint struct {
	Label, Store, Checks, RunID string
	Pass                        bool
}

// sweepPhase holds one phase's comparison charts; a chart with nothing to
// show in that phase (no fault, hence no failover time) is left out.
type sweepPhase struct {
	Name    string
	Figures []figure
}

// WriteSweep renders the points of a sweep as one page: the side-by-side
// table of results.WriteSideBySide, and per phase, charts of the failover
// time, the p99 of each op and the elections, one row per point.
func WriteSweep(w io.Writer, runs []*results.Results) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("render sweep report: %v", p)
		}
	}()
	pg, err := newSweepPage(runs)
	if err != nil {
		return fmt.Errorf("render sweep report: %w", err)
	}
	t, err := parse("sweep.html")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "sweep.html", pg); err != nil {
		return fmt.Errorf("render sweep report: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write sweep report: %w", err)
	}
	return nil
}

// WriteSweepFile renders runs with WriteSweep and saves the page as path.
func WriteSweepFile(path string, runs []*results.Results) error {
	var b bytes.Buffer
	if err := WriteSweep(&b, runs); err != nil {
		return err
	}
	return writeFile(path, b.Bytes())
}

func newSweepPage(runs []*results.Results) (*sweepPage, error) {
	var table bytes.Buffer
	if err := results.WriteSideBySide(&table, runs); err != nil {
		return nil, err
	}
	pg := &sweepPage{Title: "scenario sweep", Comparison: table.String()}
	var stores []string
	for i, r := range runs {
		if i == 0 {
			pg.Title = "scenario " + r.Scenario + ": sweep"
			pg.Header = append(pg.Header, field{"scenario", r.Scenario})
			if r.ScenarioFile != "" {
				pg.Header = append(pg.Header, field{"file", r.ScenarioFile})
			}
			if !r.Started.IsZero() {
				pg.Header = append(pg.Header, field{"started", r.Started.Format("2006-01-02 15:04:05 MST")})
			}
		}
		if s := r.Backend["store"]; s != "" && !slices.Contains(stores, s) {
			stores = append(stores, s)
		}
		v := runVerdict(r)
		pg.Points = append(pg.Points, sweepPoint{Label: results.PointLabel(r, i), Store: r.Backend["store"], Checks: v.Text, RunID: r.RunID, Pass: v.Pass})
	}
	pg.Header = append(pg.Header, field{"points", fmt.Sprint(len(runs))})
	if len(stores) > 0 {
		pg.Header = append(pg.Header, field{"store", strings.Join(stores, ", ")})
	}
	ids := map[string]bool{}
	for _, name := range results.PhaseNames(runs) {
		sp, err := sweepPhaseFigures(runs, name, ids)
		if err != nil {
			return nil, fmt.Errorf("phase %s: %w", name, err)
		}
		if len(sp.Figures) > 0 {
			pg.Phases = append(pg.Phases, sp)
		}
	}
	return pg, nil
}

// row is one sweep point in a comparison chart.
type row struct {
	label string
	phase *results.Phase
}

func sweepPhaseFigures(runs []*results.Results, name string, ids map[string]bool) (sweepPhase, error) {
	sp := sweepPhase{Name: name}
	var rows []row
	var ops []string
	faults := false
	for i, r := range runs {
		p, ok := r.Phase(name)
		if !ok || p == &r.Run {
			continue
		}
		rows = append(rows, row{label: results.PointLabel(r, i), phase: p})
		faults = faults || len(p.Failovers) > 0
		for _, o := range p.Ops {
			if !slices.Contains(ops, o.Op) {
				ops = append(ops, o.Op)
			}
		}
	}
	slug := uniqueSlug(name, ids)

	failover := pointSeries{name: "failover", colour: palette(3), fmt: fmtMS}
	elections := pointSeries{name: "elections", colour: palette(2), fmt: func(v float64) string { return fmt.Sprint(v) }}
	var p99 []pointSeries
	for i, op := range ops {
		p99 = append(p99, pointSeries{name: op, colour: palette(i), fmt: fmtMS})
	}
	for _, rw := range rows {
		failover.values = append(failover.values, rw.phase.FailoverTimeMS)
		elections.values = append(elections.values, results.Ptr(float64(rw.phase.Elections)))
		for i, op := range ops {
			var v *float64
			for _, o := range rw.phase.Ops {
				if o.Op == op && o.Latency != nil {
					v = results.Ptr(o.Latency.P99MS)
				}
			}
			p99[i].values = append(p99[i].values, v)
		}
	}
	labels := make([]string, len(rows))
	for i, rw := range rows {
		labels[i] = rw.label
	}
	type chart struct {
		fig    figure
		xLabel string
		whole  bool // the values are counts
		series []pointSeries
	}
	var charts []chart
	add := func(fig figure, xLabel string, series ...pointSeries) {
		charts = append(charts, chart{fig, xLabel, xLabel == "elections", series})
	}
	if failover.any() {
		add(figure{ID: "failover-" + slug, Title: "Failover time",
			Caption: "Worst time from a fault to the first successful write sent after it."}, "ms", failover)
	}
	if slices.ContainsFunc(p99, pointSeries.any) {
		fig := figure{ID: "p99-" + slug, Title: "p99 latency", Caption: "99th percentile of each op, from the intended send time."}
		if len(p99) > 1 {
			for _, s := range p99 {
				fig.Keys = append(fig.Keys, newKey(s.name, s.colour, false))
			}
		}
		add(fig, "ms", p99...)
	}
	if faults || slices.ContainsFunc(elections.values, func(v *float64) bool { return *v > 0 }) {
		add(figure{ID: "elections-" + slug, Title: "Elections", Caption: "Leader changes observed during the phase."}, "elections", elections)
	}
	for _, c := range charts {
		svg, err := pointsChart(labels, c.series, c.xLabel, c.whole, c.fig.Title+", phase "+name)
		if err != nil {
			return sp, fmt.Errorf("%s: %w", c.fig.Title, err)
		}
		c.fig.Panels = []panel{{SVG: svg}}
		sp.Figures = append(sp.Figures, c.fig)
	}
	return sp, nil
}

// uniqueSlug makes a phase name usable in an element id, kept stable and
// unique within the page.
func uniqueSlug(name string, seen map[string]bool) string {
	slug := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, name)
	s := slug
	for i := 2; seen[s]; i++ {
		s = fmt.Sprintf("%s-%d", slug, i)
	}
	seen[s] = true
	return s
}

// pointSeries is one value per sweep point (nil where it was not
// measured).
type pointSeries struct {
	name   string
	colour color.Color
	fmt    func(float64) string
	values []*float64
}

func (s pointSeries) any() bool {
	return slices.ContainsFunc(s.values, func(v *float64) bool { return v != nil })
}

// pointsChart draws one horizontal row per sweep point, labelled with its
// sweep values (horizontal, so long labels stay readable), and in each row
// a bar from 0 to the value of each series with the value written next to
// it; "not measured" where a point has no value.
func pointsChart(labels []string, series []pointSeries, xLabel string, whole bool, title string) (template.HTML, error) {
	p := newPlot("", xLabel, "")
	p.Add(gridX())
	top := 0.0
	for _, s := range series {
		for _, v := range s.values {
			if v != nil && !math.IsNaN(*v) {
				top = max(top, *v)
			}
		}
	}
	p.Add(pointBars{series: series})
	p.X.Min, p.X.Max = 0, max(top*1.3, 1)
	p.X.Tick.Marker = linearTicker(whole)
	ticks := make([]plot.Tick, len(labels))
	for i, l := range labels {
		ticks[i] = plot.Tick{Value: float64(len(labels) - 1 - i), Label: l}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.6, float64(len(labels))-0.4
	rowH := vg.Points(14) + vg.Points(9)*vg.Length(len(series)-1)
	return svgHTML(p, chartWidth/2, vg.Points(50)+rowH*vg.Length(len(labels)), title)
}

// gridX draws vertical grid lines only, which is what a reader of bars
// measures against.
func gridX() *plotter.Grid {
	g := grid(true)
	g.Horizontal.Width = 0
	return g
}

// pointBars draws pointsChart's rows: row i (from the top) holds one thin
// bar per series, stacked within the row.
type pointBars struct {
	series []pointSeries
}

func (b pointBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := 0
	for _, s := range b.series {
		n = max(n, len(s.values))
	}
	sty := labelStyle(8)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	gap := vg.Points(9)
	half := vg.Points(3)
	for i := range n {
		mid := trY(float64(n - 1 - i))
		for k, s := range b.series {
			y := mid + gap*(vg.Length(len(b.series)-1)/2-vg.Length(k))
			x0 := trX(0)
			if i >= len(s.values) || s.values[i] == nil {
				c.FillText(sty, vg.Point{X: x0 + vg.Points(3), Y: y}, "not measured")
				continue
			}
			v := *s.values[i]
			x1 := max(trX(v), x0+vg.Points(1))
			c.FillPolygon(s.colour, []vg.Point{{X: x0, Y: y - half}, {X: x1, Y: y - half}, {X: x1, Y: y + half}, {X: x0, Y: y + half}})
			c.FillText(sty, vg.Point{X: x1 + vg.Points(3), Y: y}, s.fmt(v))
		}
	}
}
