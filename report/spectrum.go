package report

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/coordlab/scenario/internal/results"
)

// hlogTag selects the corrected histograms in the interval logs (from the
// intended send time), the measure checks and the summary use.
const hlogTag = "corrected"

// spectrumMaxX is the right end of the spectrum's axis at least: the
// 99.99th percentile, so the usual ticks are always there to read against.
const spectrumMaxX = 1e4

// opKey names one workload's op.
type opKey struct{ workload, op string }

// curve is one line of a spectrum: latency (ms) against 1/(1-p).
type curve struct {
	phase string
	xy    plotter.XYs
}

// spectrumFigure draws, for each workload × op, the distribution of its
// latency in each phase the HdrHistogram way: x is the percentile on a log
// scale of 1/(1-p), so the tail gets as much room as the median, and y the
// latency. The curves come from the interval logs in hlogDir, merged over
// each phase; an op whose log is missing falls back to the percentiles in
// results.json.
func spectrumFigure(r *results.Results, hlogDir string) (figure, error) {
	fig := figure{ID: "spectrum", Title: "Latency percentile spectrum per phase",
		Caption: "Each phase's successful operations, from the intended send time; x is the percentile on a log scale of 1/(1−p), so the tail is as wide as the median."}
	phaseIdx := map[string]int{}
	for i, p := range r.Phases {
		phaseIdx[p.Name] = i
		fig.Keys = append(fig.Keys, newKey(p.Name, palette(i), false))
	}
	var fallbacks []string
	logged := 0
	for _, k := range opKeys(r) {
		curves, fromLog, why := logCurves(r, hlogDir, k)
		if fromLog {
			logged++
		} else {
			curves = resultCurves(r, k)
			fallbacks = append(fallbacks, seriesName(k.workload, k.op)+why)
		}
		svg, err := spectrumPanel(curves, phaseIdx, seriesName(k.workload, k.op))
		if err != nil {
			return fig, err
		}
		fig.Panels = append(fig.Panels, panel{Name: seriesName(k.workload, k.op), SVG: svg})
	}
	if len(fig.Panels) == 0 {
		svg, err := spectrumPanel(nil, phaseIdx, "no operations")
		if err != nil {
			return fig, err
		}
		fig.Panels = []panel{{SVG: svg}}
	}
	if logged > 0 {
		fig.Caption += " From the interval logs in hlog/. These hold operations by the second they completed, so an" +
			" operation sent in one phase and completed in the next (a backlog draining) counts here in the next phase," +
			" while the tables count it in its own."
	}
	if len(fallbacks) > 0 {
		fig.Caption += " From the p50, p90, p99, p99.9 and max in results.json, for lack of interval logs: " + strings.Join(fallbacks, "; ") + "."
	}
	return fig, nil
}

// opKeys lists every workload × op measured, in the order of the phases'
// tables.
func opKeys(r *results.Results) []opKey {
	var keys []opKey
	add := func(k opKey) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, p := range r.Phases {
		for _, w := range p.Workloads {
			for _, o := range w.Ops {
				add(opKey{w.Name, o.Op})
			}
		}
	}
	for _, s := range r.Series {
		add(opKey{s.Workload, s.Op})
	}
	return keys
}

// hlogPath is where the runner writes k's interval log (see
// runner/metrics, WriteIntervalLogs), with the same file-name escaping.
func hlogPath(dir string, k opKey) string {
	safe := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '/' || r == '\\' || r == 0 {
				return '_'
			}
			return r
		}, s)
	}
	return filepath.Join(dir, safe(k.workload)+"."+safe(k.op)+".hlog")
}

// logCurves reads k's interval log and returns a curve per phase. fromLog
// is false, with the reason, when there is no usable log: the caller then
// falls back to results.json.
func logCurves(r *results.Results, dir string, k opKey) (curves []curve, fromLog bool, why string) {
	if dir == "" {
		return nil, false, ""
	}
	if r.Started.IsZero() {
		// Log timestamps are placed in phases against the run's start.
		return nil, false, " (no start time in results.json)"
	}
	path := hlogPath(dir, k)
	hists, err := phaseHistograms(path, r)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, ""
	case err != nil:
		return nil, false, fmt.Sprintf(" (%v)", err)
	}
	for i, h := range hists {
		if h != nil && h.TotalCount() > 0 {
			curves = append(curves, curve{phase: r.Phases[i].Name, xy: spectrumXY(h)})
		}
	}
	return curves, true, ""
}

// phaseHistograms merges the corrected interval histograms of one log by
// phase: an interval belongs to the phase that contains its middle, which
// keeps a millisecond of rounding in the log's timestamps from moving a
// second to the previous phase. The result is indexed like r.Phases; a
// phase with no interval is nil.
func phaseHistograms(path string, r *results.Results) ([]*hdr.Histogram, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read interval log: %w", err)
	}
	// The runner writes the log's StartTime in whole seconds and its
	// timestamps relative to it; the reader adds the two, so subtracting
	// the start's whole seconds gives offsets from the first phase.
	baseMS := r.Started.Unix() * 1000
	out := make([]*hdr.Histogram, len(r.Phases))
	rd := hdr.NewHistogramLogReader(onlyTag(b, hlogTag))
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			return nil, fmt.Errorf("read interval log %s: %w", path, err)
		}
		if h == nil {
			return out, nil
		}
		if tag := h.Tag(); tag != "" && tag != hlogTag {
			continue
		}
		mid := float64(h.StartTimeMs()+h.EndTimeMs())/2 - float64(baseMS)
		i := slices.IndexFunc(r.Phases, func(p results.Phase) bool {
			return mid >= p.StartMS && mid < p.StartMS+p.DurationMS
		})
		if i < 0 || h.TotalCount() == 0 {
			continue
		}
		if out[i] == nil {
			out[i] = hdr.New(h.LowestTrackableValue(), h.HighestTrackableValue(), int(h.SignificantFigures()))
		}
		if dropped := out[i].Merge(h); dropped > 0 {
			return nil, fmt.Errorf("read interval log %s: %d values out of range", path, dropped)
		}
	}
}

// onlyTag drops the log lines of histograms tagged other than tag. The
// reader decodes a histogram before its tag can be looked at, and decoding
// is most of the cost of a page; the raw histograms are half the log.
func onlyTag(log []byte, tag string) *bytes.Reader {
	keep := make([]byte, 0, len(log))
	for line := range bytes.Lines(log) {
		if !bytes.HasPrefix(line, []byte("Tag=")) || bytes.HasPrefix(line, []byte("Tag="+tag+",")) {
			keep = append(keep, line...)
		}
	}
	return bytes.NewReader(keep)
}

// spectrumXY samples h (microseconds) at 20 points per decade of
// 1/(1-p), up to the last value, which sits at 1/(1-p) = count.
func spectrumXY(h *hdr.Histogram) plotter.XYs {
	n := float64(h.TotalCount())
	var xs, ps []float64
	for k := 0; ; k++ {
		x := math.Pow(10, float64(k)/20)
		if x >= n {
			break
		}
		xs, ps = append(xs, x), append(ps, 100*(1-1/x))
	}
	xs, ps = append(xs, max(n, 1)), append(ps, 100)
	vs := h.ValueAtPercentilesSlice(ps)
	xy := make(plotter.XYs, len(xs))
	for i := range xs {
		xy[i] = plotter.XY{X: xs[i], Y: float64(vs[i]) / 1000}
	}
	return xy
}

// resultCurves is the fallback: the percentiles results.json keeps for
// each phase. Percentiles beyond 1/count are left out, since with fewer
// operations they are the maximum, which ends the curve at x = count.
func resultCurves(r *results.Results, k opKey) []curve {
	var curves []curve
	for _, p := range r.Phases {
		st := phaseOp(p, k)
		if st == nil || st.Latency == nil {
			continue
		}
		l, n := st.Latency, float64(st.OK)
		xy := plotter.XYs{{X: 1, Y: l.MinMS}}
		for _, q := range []struct{ x, v float64 }{{2, l.P50MS}, {10, l.P90MS}, {100, l.P99MS}, {1000, l.P999MS}} {
			if q.x < n {
				xy = append(xy, plotter.XY{X: q.x, Y: q.v})
			}
		}
		xy = append(xy, plotter.XY{X: max(n, xy[len(xy)-1].X*2), Y: l.MaxMS})
		curves = append(curves, curve{phase: p.Name, xy: xy})
	}
	return curves
}

func phaseOp(p results.Phase, k opKey) *results.OpStats {
	for _, w := range p.Workloads {
		if w.Name != k.workload {
			continue
		}
		for i := range w.Ops {
			if w.Ops[i].Op == k.op {
				return &w.Ops[i]
			}
		}
	}
	return nil
}

// spectrumPanel draws one op's curves, coloured by phase as in the key.
func spectrumPanel(curves []curve, phaseIdx map[string]int, title string) (template.HTML, error) {
	p := newPlot(title, "percentile", "latency (ms, log scale)")
	p.Add(grid(true))
	lo, hi, right := math.Inf(1), 0.0, spectrumMaxX
	for _, c := range curves {
		var pos plotter.XYs
		for _, pt := range c.xy {
			if pt.Y > 0 { // a log axis cannot show 0
				pos = append(pos, pt)
				lo, hi = min(lo, pt.Y), max(hi, pt.Y)
				right = max(right, pt.X)
			}
		}
		if err := addSegments(p, []plotter.XYs{logXY(pos, true, true)}, palette(phaseIdx[c.phase]), vg.Points(1.4), false); err != nil {
			return "", fmt.Errorf("spectrum of %s, phase %s: %w", title, c.phase, err)
		}
	}
	if len(curves) == 0 {
		p.Add(note("no successful operation"))
	}
	logAxis(&p.X, 1, math.Pow(10, math.Ceil(math.Log10(right))), percentileTicks)
	ylo, yhi := logRange(lo, hi*1.2)
	logAxis(&p.Y, ylo, yhi, logTicks)
	return svgHTML(p, chartWidth/2, chartHeight*1.1, "latency spectrum of "+title)
}

// percentileTicks labels 1/(1-p) with the percentile it stands for: 50%,
// 90%, 99%, 99.9%... up to the axis' end.
func percentileTicks(lo, hi float64) []plot.Tick {
	// x = 1 is the 0th percentile; it is left unlabelled, being too close
	// to 50% to write both.
	ticks := []plot.Tick{{Value: 1}, {Value: 2, Label: "50%"}}
	for x := 10.0; x <= hi*1.001; x *= 10 {
		decimals := max(0, int(math.Round(math.Log10(x)))-2)
		label := strconv.FormatFloat(100*(1-1/x), 'f', decimals, 64) + "%"
		ticks = append(ticks, plot.Tick{Value: x, Label: label})
	}
	// Minor ticks at 2× and 5× of each decade, for reading between.
	for x := 10.0; x < hi; x *= 10 {
		ticks = append(ticks, plot.Tick{Value: 2 * x}, plot.Tick{Value: 5 * x})
	}
	return ticks
}
