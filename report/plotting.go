package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart sizes, in points. The page scales every chart to its column width,
// so these fix the aspect ratio and the size of the text relative to it.
const (
	chartWidth  = 9 * vg.Inch
	chartHeight = 3.2 * vg.Inch
)

// sans is the face every chart uses. Liberation Sans is the sans-serif face
// gonum/plot embeds for measuring text; it is metric-compatible with Arial
// and Helvetica, which is what the browser draws with when Liberation is not
// installed (see inlineSVG), so labels keep the width they were laid out for.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot returns a plot with the report's look: sans-serif text, sized
// for a chart scaled to the page's width. Keys are drawn in HTML under the
// chart, so the plot's own legend stays empty.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Title.TextStyle.Font = font.From(sans, 11)
	for _, s := range []*text.Style{&p.X.Label.TextStyle, &p.Y.Label.TextStyle} {
		s.Font = font.From(sans, 10)
	}
	for _, s := range []*text.Style{&p.X.Tick.Label, &p.Y.Tick.Label} {
		s.Font = font.From(sans, 9)
	}
	return p
}

// svgHTML draws p at w × h and returns it as an inline <svg> element.
func svgHTML(p *plot.Plot, w, h vg.Length, label string) (template.HTML, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("render %s: %w", label, err)
	}
	return inlineSVG(b.String(), label), nil
}

// inlineSVG turns vgsvg's standalone document into an element that can sit
// in an HTML page: no XML prologue or comment, no fixed size (the viewBox
// keeps the aspect ratio and CSS sets the width), an accessible name, and
// font families that fall back to what the reader's machine has.
func inlineSVG(doc, label string) template.HTML {
	if i := strings.Index(doc, "<svg"); i >= 0 {
		doc = doc[i:]
	}
	if i, j := strings.Index(doc, " width="), strings.Index(doc, " viewBox="); i >= 0 && j > i {
		doc = doc[:i] + ` role="img" aria-label="` + template.HTMLEscapeString(label) + `"` + doc[j:]
	}
	doc = strings.ReplaceAll(doc, "font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;")
	// The document is generated here from numbers, and vgsvg escapes every
	// string it draws, so it is safe to inline.
	return template.HTML(doc)
}

// Colours. palette holds distinguishable series colours (Tableau 10);
// classColour gives each error class a fixed one so that "timeout" looks the
// same in every report.
func palette(i int) color.Color {
	p := [...]color.RGBA{
		{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
		{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff},
		{0x7f, 0x7f, 0x7f, 0xff}, {0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
		{0xd6, 0x27, 0x28, 0xff},
	}
	return p[i%len(p)]
}

func classColour(class string, i int) color.Color {
	switch class {
	case "timeout":
		return color.RGBA{0xd6, 0x27, 0x28, 0xff}
	case "unavailable":
		return color.RGBA{0xff, 0x7f, 0x0e, 0xff}
	case "connection":
		return color.RGBA{0x94, 0x67, 0xbd, 0xff}
	case "other":
		return color.RGBA{0x7f, 0x7f, 0x7f, 0xff}
	}
	return palette(i)
}

var (
	bandFill  = color.RGBA{0xf0, 0xf0, 0xf0, 0xff}
	faultFill = color.NRGBA{0xd6, 0x27, 0x28, 0x26}
	faultLine = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	noneFill  = color.NRGBA{0xd6, 0x27, 0x28, 0x40}
	// unknownFill shades polls no node answered: not red, as nothing
	// says the cluster was without a leader.
	unknownFill = color.NRGBA{0x7f, 0x7f, 0x7f, 0x40}
	labelGrey   = color.RGBA{0x55, 0x55, 0x55, 0xff}
	gridColour  = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
)

// line returns a solid or dashed line plotter over xy, without glyphs.
func line(xy plotter.XYs, c color.Color, width vg.Length, dashed bool) (*plotter.Line, error) {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = width
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	}
	return l, nil
}

// addSegments draws one series that may have holes as lines over its
// unbroken stretches; a stretch of a single point gets a dot, or it would
// not show at all.
func addSegments(p *plot.Plot, segs []plotter.XYs, c color.Color, width vg.Length, dashed bool) error {
	for _, s := range segs {
		if len(s) == 0 {
			continue
		}
		l, err := line(s, c, width, dashed)
		if err != nil {
			return err
		}
		p.Add(l)
		if len(s) == 1 {
			sc, err := plotter.NewScatter(s)
			if err != nil {
				return err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: c, Radius: width + vg.Points(0.8), Shape: draw.CircleGlyph{}}
			p.Add(sc)
		}
	}
	return nil
}

// grid draws light grid lines under the data.
func grid(vertical bool) *plotter.Grid {
	g := plotter.NewGrid()
	g.Horizontal.Color = gridColour
	g.Horizontal.Width = vg.Points(0.4)
	g.Vertical.Color = gridColour
	g.Vertical.Width = vg.Points(0.4)
	if !vertical {
		g.Vertical.Width = 0
	}
	return g
}

// logTicks marks a log axis at every decade and, when the range spans less
// than two decades (a p50 between 1 and 4 ms would otherwise get one label
// or none), at 2× and 5× too.
func logTicks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	dense := math.Log10(hi)-math.Log10(lo) < 2
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		dec := math.Pow(10, e)
		for m := 1; m < 10; m++ {
			v := dec * float64(m)
			if v < lo*0.999 || v > hi*1.001 {
				continue
			}
			label := ""
			if m == 1 || dense && (m == 2 || m == 5) {
				label = tickLabel(v)
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: label})
		}
	}
	return ticks
}

// Log axes. gonum/plot's LogScale lays the axis label out at the data
// midpoint, which on a log scale sits near the top and reserves a band of
// empty space above the chart; so log axes here plot log10 of the values on
// a linear scale, with ticks labelled in the values' own units.

// logXY returns xy with log10 applied to x, y or both.
func logXY(xy plotter.XYs, x, y bool) plotter.XYs {
	out := make(plotter.XYs, len(xy))
	for i, pt := range xy {
		if x {
			pt.X = math.Log10(pt.X)
		}
		if y {
			pt.Y = math.Log10(pt.Y)
		}
		out[i] = pt
	}
	return out
}

// logAxis sets a to show [lo, hi] (values, not logarithms) with ticks from
// ticks, which receives and returns values.
func logAxis(a *plot.Axis, lo, hi float64, ticks func(lo, hi float64) []plot.Tick) {
	a.Min, a.Max = math.Log10(lo), math.Log10(hi)
	a.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		ts := ticks(math.Pow(10, min), math.Pow(10, max))
		for i := range ts {
			ts[i].Value = math.Log10(ts[i].Value)
		}
		return ts
	})
}

// tickLabel writes a tick value plainly: 10000 rather than 1e+04.
func tickLabel(v float64) string {
	if v >= 1 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// linearTicks marks a linear axis at a round step (1, 2 or 5 × 10^k)
// giving about eight labelled ticks, with unlabelled ones halfway.
func linearTicks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	raw := (hi - lo) / 8
	dec := math.Pow(10, math.Floor(math.Log10(raw)))
	step := dec * 10
	for _, m := range []float64{1, 2, 5} {
		if dec*m >= raw {
			step = dec * m
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		v = math.Round(v/step) * step // no accumulated error in labels
		ticks = append(ticks, plot.Tick{Value: v, Label: tickLabel(v)})
		if half := v + step/2; half <= hi {
			ticks = append(ticks, plot.Tick{Value: half})
		}
	}
	return ticks
}

// linearTicker is linearTicks, without the ticks between integers when
// the values are counts (whole).
func linearTicker(whole bool) plot.Ticker {
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		ticks := linearTicks(lo, hi)
		if whole {
			ticks = slices.DeleteFunc(ticks, func(t plot.Tick) bool { return t.Value != math.Trunc(t.Value) })
		}
		return ticks
	})
}

// logRange pads [lo, hi] outwards (lo by a fifth first) to whole 1-2-5
// steps, so the data never touches the frame, and keeps it valid for a log
// axis.
func logRange(lo, hi float64) (float64, float64) {
	if !(lo > 0) || !(hi > 0) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return 0.1, 10
	}
	down := func(v float64) float64 {
		dec := math.Pow(10, math.Floor(math.Log10(v)))
		for _, m := range []float64{5, 2, 1} {
			if dec*m <= v {
				return dec * m
			}
		}
		return dec
	}
	up := func(v float64) float64 {
		dec := math.Pow(10, math.Floor(math.Log10(v)))
		for _, m := range []float64{1, 2, 5, 10} {
			if dec*m >= v {
				return dec * m
			}
		}
		return dec * 10
	}
	lo, hi = down(lo/1.2), up(hi)
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}

// note is a plotter that writes one line of grey text in the middle of
// the data area: "no errors", "not measured".
type note string

func (n note) Plot(c draw.Canvas, _ *plot.Plot) {
	sty := labelStyle(10)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
	c.FillText(sty, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2}, string(n))
}

func labelStyle(size vg.Length) text.Style {
	return text.Style{
		Color:   labelGrey,
		Font:    font.From(sans, size),
		Handler: plot.DefaultTextHandler,
	}
}
