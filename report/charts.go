package report

import (
	"cmp"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/coordlab/scenario/internal/results"
)

// figure is one chart of the page, or a row of small ones (Panels), with
// its key: the key is HTML under the chart rather than gonum/plot's legend,
// which would be drawn over the data.
type figure struct {
	// ID is the figure element's id; tests and readers' bookmarks rely on
	// it, so it never changes.
	ID      string
	Title   string
	Caption string
	Panels  []panel
	Keys    []key
}

type panel struct {
	Name string
	SVG  template.HTML
}

// key is one entry of a figure's key: a swatch in the series' colour and
// dash, and its name.
type key struct {
	Label string
	Style template.CSS
}

func newKey(label string, c color.Color, dashed bool) key {
	style := "solid"
	if dashed {
		style = "dashed"
	}
	return key{Label: label, Style: template.CSS(fmt.Sprintf("border-top: 2px %s %s", style, hexColour(c)))}
}

func hexColour(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// runEnd is where the time axis of every chart ends, in seconds: the end of
// the timeline, or of the last sample when something was measured after it
// (requests still completing, recovery).
func runEnd(r *results.Results) float64 {
	end := r.DurationMS
	for _, s := range r.Series {
		if n := len(s.Points); n > 0 {
			end = max(end, s.Points[n-1].AtMS+1000)
		}
	}
	for _, n := range r.Resources {
		if k := len(n.Points); k > 0 {
			end = max(end, n.Points[k-1].AtMS)
		}
	}
	return max(end/1000, 1)
}

// secondX places a per-second value in the middle of its second, where it
// lines up with the faults drawn over it.
func secondX(atMS float64) float64 { return (atMS + 500) / 1000 }

// timePlot starts a chart over the run's time axis, with the phases and
// faults drawn first, under everything else.
func timePlot(yLabel string, o overlay, end float64) *plot.Plot {
	p := newPlot("", "time since the first phase started (s)", yLabel)
	p.Add(o, grid(false))
	p.X.Min, p.X.Max = 0, end
	p.X.Tick.Marker = linearTicker(false)
	return p
}

// seriesName names a workload's op on charts.
func seriesName(workload, op string) string { return workload + " " + op }

// latencyFigure draws p50 and p99 of every workload × op over time, from
// the per-second series, on a log axis: a failover's spike and the steady
// state then fit on one chart.
func latencyFigure(r *results.Results, o overlay, end float64) (figure, error) {
	fig := figure{ID: "latency", Title: "Latency over time",
		Caption: "p99 (solid) and p50 (dashed) of each second's successful operations, from the intended send time; a gap is a second in which nothing succeeded."}
	p := timePlot("latency (ms, log scale)", o, end)
	lo, hi := math.Inf(1), 0.0
	for i, s := range r.Series {
		name := seriesName(s.Workload, s.Op)
		for _, q := range []struct {
			label  string
			value  func(results.SecondPoint) *float64
			dashed bool
			width  vg.Length
		}{
			{"p99", func(pt results.SecondPoint) *float64 { return pt.P99MS }, false, vg.Points(1.3)},
			{"p50", func(pt results.SecondPoint) *float64 { return pt.P50MS }, true, vg.Points(1)},
		} {
			segs := segments(s.Points, q.value)
			for j, seg := range segs {
				for _, pt := range seg {
					lo, hi = min(lo, pt.Y), max(hi, pt.Y)
				}
				segs[j] = logXY(seg, false, true)
			}
			if err := addSegments(p, segs, palette(i), q.width, q.dashed); err != nil {
				return fig, fmt.Errorf("latency of %s: %w", name, err)
			}
			fig.Keys = append(fig.Keys, newKey(name+" "+q.label, palette(i), q.dashed))
		}
	}
	if hi == 0 {
		p.Add(note("no operation succeeded"))
	}
	// Headroom above the data for the phase and fault labels.
	ylo, yhi := logRange(lo, hi*3)
	logAxis(&p.Y, ylo, yhi, logTicks)
	svg, err := svgHTML(p, chartWidth, chartHeight, fig.Title)
	fig.Panels = []panel{{SVG: svg}}
	return fig, err
}

// segments splits one series of per-second values into its unbroken
// stretches, leaving out seconds without a value (and values a log axis
// cannot show).
func segments(points []results.SecondPoint, value func(results.SecondPoint) *float64) []plotter.XYs {
	var segs []plotter.XYs
	var cur plotter.XYs
	for _, pt := range points {
		v := value(pt)
		if v == nil || !(*v > 0) {
			if len(cur) > 0 {
				segs, cur = append(segs, cur), nil
			}
			continue
		}
		cur = append(cur, plotter.XY{X: secondX(pt.AtMS), Y: *v})
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

// throughputFigure draws each workload's successful operations per second.
func throughputFigure(r *results.Results, o overlay, end float64) (figure, error) {
	fig := figure{ID: "throughput", Title: "Throughput over time",
		Caption: "Successful operations per second of each workload, all ops together, by the second they completed."}
	p := timePlot("ops/s", o, end)
	var workloads []string
	perSecond := map[string][]float64{}
	for _, s := range r.Series {
		if !slices.Contains(workloads, s.Workload) {
			workloads = append(workloads, s.Workload)
		}
		perSecond[s.Workload] = addPerSecond(perSecond[s.Workload], s.Points, func(pt results.SecondPoint) float64 {
			return float64(pt.Ops - pt.Errors)
		})
	}
	// A second that starts after the timeline holds only the stragglers
	// of the last requests; drawn, it would read as a collapse.
	seconds := int(math.Ceil(r.DurationMS / 1000))
	top := 0.0
	for i, w := range workloads {
		sums := perSecond[w]
		if seconds > 0 && len(sums) > seconds {
			sums = sums[:seconds]
		}
		xy := perSecondXY(sums)
		for _, pt := range xy {
			top = max(top, pt.Y)
		}
		if err := addSegments(p, []plotter.XYs{xy}, palette(i), vg.Points(1.3), false); err != nil {
			return fig, fmt.Errorf("throughput of %s: %w", w, err)
		}
		fig.Keys = append(fig.Keys, newKey(w, palette(i), false))
	}
	if top == 0 {
		p.Add(note("no operation succeeded"))
	}
	linearY(p, top, true)
	svg, err := svgHTML(p, chartWidth, chartHeight, fig.Title)
	fig.Panels = []panel{{SVG: svg}}
	return fig, err
}

// addPerSecond adds value(point) into sums, indexed by second.
func addPerSecond(sums []float64, points []results.SecondPoint, value func(results.SecondPoint) float64) []float64 {
	for _, pt := range points {
		k := int(pt.AtMS / 1000)
		if k < 0 {
			continue
		}
		for len(sums) <= k {
			sums = append(sums, 0)
		}
		sums[k] += value(pt)
	}
	return sums
}

func perSecondXY(sums []float64) plotter.XYs {
	xy := make(plotter.XYs, len(sums))
	for k, v := range sums {
		xy[k] = plotter.XY{X: secondX(float64(k) * 1000), Y: v}
	}
	return xy
}

// linearY sets a linear y axis from 0, leaving a quarter of the chart
// above the data for labels. Counts (whole) get no tick between integers.
func linearY(p *plot.Plot, top float64, whole bool) {
	p.Y.Min, p.Y.Max = 0, 1
	if top > 0 {
		p.Y.Max = top * 1.3
	}
	p.Y.Tick.Marker = linearTicker(whole)
}

// errorsFigure draws failed operations per second, one line per error
// class, over every workload and op.
func errorsFigure(r *results.Results, o overlay, end float64) (figure, error) {
	fig := figure{ID: "errors", Title: "Errors over time",
		Caption: "Failed operations per second by error class, all workloads and ops together."}
	p := timePlot("errors/s", o, end)
	var classes []string
	for _, s := range r.Series {
		for _, pt := range s.Points {
			for c := range pt.ErrorsBy {
				if !slices.Contains(classes, c) {
					classes = append(classes, c)
				}
			}
		}
	}
	slices.SortFunc(classes, compareClasses)
	top := 0.0
	for i, class := range classes {
		var sums []float64
		for _, s := range r.Series {
			sums = addPerSecond(sums, s.Points, func(pt results.SecondPoint) float64 { return float64(pt.ErrorsBy[class]) })
		}
		xy := perSecondXY(sums)
		for _, pt := range xy {
			top = max(top, pt.Y)
		}
		if err := addSegments(p, []plotter.XYs{xy}, classColour(class, i), vg.Points(1.3), false); err != nil {
			return fig, fmt.Errorf("errors of class %s: %w", class, err)
		}
		fig.Keys = append(fig.Keys, newKey(class, classColour(class, i), false))
	}
	if top == 0 {
		p.Add(note("no errors"))
	}
	linearY(p, top, true)
	svg, err := svgHTML(p, chartWidth, chartHeight*0.8, fig.Title)
	fig.Panels = []panel{{SVG: svg}}
	return fig, err
}

// compareClasses orders error classes as the README lists them, then any
// other class by name.
func compareClasses(a, b string) int {
	rank := func(c string) int {
		if i := slices.Index([]string{"timeout", "unavailable", "connection", "other"}, c); i >= 0 {
			return i
		}
		return 4
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	return cmp.Compare(a, b)
}

// nodeNames lists the cluster's nodes: those sampled, and any leader index
// beyond them, as n1..nN.
func nodeNames(r *results.Results) []string {
	n := len(r.Resources)
	for _, o := range r.Leader {
		n = max(n, o.Leader)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
	}
	return names
}

// leaderFigure draws which node led when: a bar per stretch of one leader
// and term (the colour changes with the term, so a re-election of the same
// node shows), and red shading where no node led.
func leaderFigure(r *results.Results, o overlay, end float64) (figure, error) {
	fig := figure{ID: "leader", Title: "Leader",
		Caption: "Which node the observer saw leading (polled every 100 ms); the colour changes with each new term. Red: no leader; grey: no node answered the poll, so who led is unknown."}
	nodes := nodeNames(r)
	p := timePlot("leader", o, end)
	p.Add(leaderBars{obs: r.Leader, end: end})
	ticks := make([]plot.Tick, len(nodes))
	for i, n := range nodes {
		ticks[i] = plot.Tick{Value: float64(i + 1), Label: n}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = 0.4, float64(len(nodes))+1.2 // room at the top for the labels
	if len(r.Leader) == 0 {
		p.Add(note("no leader observations"))
	}
	fig.Keys = []key{newKey("leader (term changes alternate colour)", leaderColours(0), false), newKey("no leader", faultLine, false), newKey("leader unknown (poll unanswered)", labelGrey, false)}
	h := vg.Points(70) + vg.Points(22)*vg.Length(len(nodes))
	svg, err := svgHTML(p, chartWidth, h, fig.Title)
	fig.Panels = []panel{{SVG: svg}}
	return fig, err
}

func leaderColours(term int) color.Color {
	if term%2 == 0 {
		return color.RGBA{0x1f, 0x77, 0xb4, 0xff}
	}
	return color.RGBA{0x6b, 0xae, 0xd6, 0xff}
}

// leaderBars draws the leader timeline: each observation holds until the
// next one (the last until the end of the run).
type leaderBars struct {
	obs []results.LeaderObservation
	end float64
}

func (l leaderBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	half := min(vg.Points(7), (trY(2)-trY(1))*0.35)
	sty := labelStyle(7)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	sty.Color = color.White
	// shade counts the leaderships seen: a new term or a new leader
	// changes the colour, a stretch without a leader in between does not.
	shade, last := -1, results.LeaderObservation{}
	for i, ob := range l.obs {
		from := max(ob.AtMS/1000, 0)
		to := l.end
		if i+1 < len(l.obs) {
			to = min(l.obs[i+1].AtMS/1000, l.end)
		}
		x0, x1 := min(max(trX(from), c.Min.X), c.Max.X), min(max(trX(to), c.Min.X), c.Max.X)
		if x1 <= x0 {
			continue
		}
		if ob.Leader != 0 && (shade < 0 || ob.Term != last.Term || ob.Leader != last.Leader) {
			shade, last = shade+1, ob
		}
		if ob.Unanswered {
			c.FillPolygon(unknownFill, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
			continue
		}
		if ob.Leader == 0 {
			c.FillPolygon(noneFill, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
			continue
		}
		y := trY(float64(ob.Leader))
		c.FillPolygon(leaderColours(shade), []vg.Point{{X: x0, Y: y - half}, {X: x1, Y: y - half}, {X: x1, Y: y + half}, {X: x0, Y: y + half}})
		if ob.Term != 0 {
			label := fmt.Sprintf("term %d", ob.Term)
			if sty.Width(label)+vg.Points(4) < x1-x0 {
				c.FillText(sty, vg.Point{X: x0 + vg.Points(2), Y: y}, label)
			}
		}
	}
}

// resourceFigures draws each node's CPU and RSS over time and what it
// wrote in total.
func resourceFigures(r *results.Results, o overlay, end float64) ([]figure, error) {
	cpu := figure{ID: "cpu", Title: "CPU per node", Caption: "CPU time (user + system) over wall time, in percent of one core, sampled once a second from /proc; dashed, the time the node's threads were runnable but waited for a CPU (/proc/PID/task/*/schedstat), in the same unit."}
	rss := figure{ID: "rss", Title: "Memory per node", Caption: "Resident set size (MiB)."}
	pc := timePlot("CPU (% of a core)", o, end)
	pr := timePlot("RSS (MiB)", o, end)
	topC, topR := 0.0, 0.0
	for i, n := range r.Resources {
		cs, rs, ws := nodeSegments(n.Points)
		for _, s := range append(slices.Clip(cs), ws...) {
			for _, pt := range s {
				topC = max(topC, pt.Y)
			}
		}
		for _, s := range rs {
			for _, pt := range s {
				topR = max(topR, pt.Y)
			}
		}
		if err := addSegments(pc, cs, palette(i), vg.Points(1.2), false); err != nil {
			return nil, fmt.Errorf("CPU of %s: %w", n.Node, err)
		}
		if err := addSegments(pr, rs, palette(i), vg.Points(1.2), false); err != nil {
			return nil, fmt.Errorf("RSS of %s: %w", n.Node, err)
		}
		k := newKey(n.Node, palette(i), false)
		cpu.Keys, rss.Keys = append(cpu.Keys, k), append(rss.Keys, k)
		if len(ws) > 0 {
			if err := addSegments(pc, ws, palette(i), vg.Points(1.2), true); err != nil {
				return nil, fmt.Errorf("CPU wait of %s: %w", n.Node, err)
			}
			cpu.Keys = append(cpu.Keys, newKey(n.Node+" waiting", palette(i), true))
		}
	}
	if len(r.Resources) == 0 {
		pc.Add(note("not sampled"))
		pr.Add(note("not sampled"))
	}
	linearY(pc, topC, false)
	linearY(pr, topR, false)
	var err error
	if cpu.Panels, err = onePanel(pc, chartHeight*0.8, cpu.Title); err != nil {
		return nil, err
	}
	if rss.Panels, err = onePanel(pr, chartHeight*0.8, rss.Title); err != nil {
		return nil, err
	}
	written, err := writtenFigure(r)
	if err != nil {
		return nil, err
	}
	machine, err := machineFigure(r, o, end)
	if err != nil {
		return nil, err
	}
	return []figure{cpu, rss, written, machine}, nil
}

// machineFigure draws the runner's whole machine over time: how busy its
// CPUs were, how much of their time the hypervisor withheld, and how long
// runnable tasks waited for a CPU. A latency spike or late starts that line
// up with steal or wait came from the machine, not the store.
func machineFigure(r *results.Results, o overlay, end float64) (figure, error) {
	fig := figure{ID: "machine", Title: "The runner's machine",
		Caption: "Once a second, from /proc/stat and /proc/pressure/cpu: the share of all CPUs' time spent running tasks (busy) and withheld by the hypervisor (steal), and the share of the second in which some runnable task waited for a CPU (wait); from the runner's own threads' schedstat, the share of the CPU time the runner wanted that it waited for (runner waiting)."}
	p := timePlot("percent (see the caption)", o, end)
	var busy, steal, wait, runner plotter.XYs
	if r.Machine != nil {
		for _, pt := range r.Machine.Points {
			busy = append(busy, plotter.XY{X: pt.AtMS / 1000, Y: 100 * pt.BusyShare})
			steal = append(steal, plotter.XY{X: pt.AtMS / 1000, Y: 100 * pt.StealShare})
			if pt.WaitShare != nil {
				wait = append(wait, plotter.XY{X: pt.AtMS / 1000, Y: 100 * *pt.WaitShare})
			}
		}
	}
	if r.Runner != nil {
		for _, pt := range r.Runner.Points {
			if w := pt.WaitShare(); w != nil {
				runner = append(runner, plotter.XY{X: pt.AtMS / 1000, Y: 100 * *w})
			}
		}
	}
	lines := []struct {
		label  string
		xys    plotter.XYs
		dashed bool
	}{{"busy", busy, false}, {"steal", steal, false}, {"wait", wait, true}, {"runner waiting", runner, true}}
	for i, l := range lines {
		if len(l.xys) == 0 {
			continue
		}
		if err := addSegments(p, []plotter.XYs{l.xys}, palette(i), vg.Points(1.2), l.dashed); err != nil {
			return fig, fmt.Errorf("machine %s: %w", l.label, err)
		}
		fig.Keys = append(fig.Keys, newKey(l.label, palette(i), l.dashed))
	}
	if len(busy) == 0 {
		p.Add(note("not sampled"))
	}
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = linearTicker(false)
	var err error
	fig.Panels, err = onePanel(p, chartHeight*0.8, fig.Title)
	return fig, err
}

func onePanel(p *plot.Plot, h vg.Length, label string) ([]panel, error) {
	svg, err := svgHTML(p, chartWidth, h, label)
	if err != nil {
		return nil, err
	}
	return []panel{{SVG: svg}}, nil
}

// nodeSegments splits a node's samples where its process changed or
// samples are missing (the node was down), so a restart shows as a gap.
// The wait for a CPU is split also where a second has none.
func nodeSegments(points []results.ResourcePoint) (cpu, rss, wait []plotter.XYs) {
	var c, r, w plotter.XYs
	for i, pt := range points {
		split := i > 0 && (pt.PID != points[i-1].PID || pt.AtMS-points[i-1].AtMS > 2500)
		if split {
			cpu, rss = append(cpu, c), append(rss, r)
			c, r = nil, nil
		}
		if (split || pt.CPUWaitPercent == nil) && len(w) > 0 {
			wait, w = append(wait, w), nil
		}
		c = append(c, plotter.XY{X: pt.AtMS / 1000, Y: pt.CPUPercent})
		r = append(r, plotter.XY{X: pt.AtMS / 1000, Y: float64(pt.RSSBytes) / (1 << 20)})
		if pt.CPUWaitPercent != nil {
			w = append(w, plotter.XY{X: pt.AtMS / 1000, Y: *pt.CPUWaitPercent})
		}
	}
	if len(c) > 0 {
		cpu, rss = append(cpu, c), append(rss, r)
	}
	if len(w) > 0 {
		wait = append(wait, w)
	}
	return cpu, rss, wait
}

// writtenFigure draws the bytes each node caused to be written over the
// run, one bar per node.
func writtenFigure(r *results.Results) (figure, error) {
	fig := figure{ID: "written", Title: "Bytes written per node",
		Caption: "Bytes each node's processes caused to be written to storage over the run (/proc/PID/io write_bytes, summed over restarts)."}
	p := newPlot("", "", "written (MiB)")
	p.Add(grid(false))
	var names []string
	var values plotter.Values
	var missing []string
	for _, n := range r.Resources {
		names = append(names, n.Node)
		v := 0.0
		if n.Summary.WrittenBytes != nil {
			v = float64(*n.Summary.WrittenBytes) / (1 << 20)
		} else {
			missing = append(missing, n.Node)
		}
		values = append(values, v)
	}
	switch {
	case len(values) == 0:
		p.Add(note("not sampled"))
	default:
		bars, err := plotter.NewBarChart(values, vg.Points(28))
		if err != nil {
			return fig, fmt.Errorf("bytes written: %w", err)
		}
		bars.Color = palette(0)
		bars.LineStyle.Width = 0
		p.Add(bars)
		var xys plotter.XYLabels
		for i, v := range values {
			label := fmt.Sprintf("%.1f MiB", v)
			if slices.Contains(missing, names[i]) {
				label = "not readable"
			}
			xys.XYs = append(xys.XYs, plotter.XY{X: float64(i), Y: v})
			xys.Labels = append(xys.Labels, label)
		}
		labels, err := plotter.NewLabels(xys)
		if err != nil {
			return fig, fmt.Errorf("bytes written: %w", err)
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i] = labelStyle(8)
			labels.TextStyle[i].XAlign = draw.XCenter
		}
		labels.Offset = vg.Point{Y: vg.Points(3)}
		p.Add(labels)
		p.NominalX(names...)
		top := 0.0
		for _, v := range values {
			top = max(top, v)
		}
		linearY(p, top, false)
	}
	if len(missing) > 0 {
		fig.Caption += fmt.Sprintf(" Not readable for %v.", missing)
	}
	svg, err := svgHTML(p, chartWidth/2, chartHeight*0.8, fig.Title)
	fig.Panels = []panel{{SVG: svg}}
	return fig, err
}
