package report

import (
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/coordlab/scenario/internal/results"
)

// span is a stretch of the run, in seconds from its start.
type span struct {
	from, to float64
	label    string
}

// overlay draws what happened when under a time chart: phases as
// alternating light bands named at the top, and each fault shaded from the
// moment it took effect until it was undone, or drawn as a thin line when
// it has no end (instantaneous, such as a kill without restart_after, or
// never undone). It is added to a plot before the data so that the data
// stays on top.
type overlay struct {
	phases []span
	faults []span // from == to for an instantaneous fault
}

// newOverlay collects r's phases and faults. Faults that never took effect
// are left out: there is nothing to shade.
func newOverlay(r *results.Results) overlay {
	var o overlay
	for _, p := range r.Phases {
		o.phases = append(o.phases, span{from: p.StartMS / 1000, to: (p.StartMS + p.DurationMS) / 1000, label: p.Name})
		for _, f := range p.Failovers {
			if f.AppliedMS == nil {
				continue
			}
			s := span{from: *f.AppliedMS / 1000, to: *f.AppliedMS / 1000, label: faultLabel(f)}
			if f.RecoveredMS != nil {
				s.to = *f.RecoveredMS / 1000
			}
			o.faults = append(o.faults, s)
		}
	}
	return o
}

// faultLabel names a fault by what it did, "kill n1", which is shorter
// than its id and says more on a chart.
func faultLabel(f results.Failover) string {
	if len(f.Targets) == 0 {
		if f.Cluster != "" {
			return f.Kind + " on " + f.Cluster
		}
		return f.Kind
	}
	return f.Kind + " " + strings.Join(f.Targets, ",")
}

// Plot implements plot.Plotter.
func (o overlay) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	clamp := func(x vg.Length) vg.Length { return min(max(x, c.Min.X), c.Max.X) }
	rect := func(x0, x1 vg.Length) []vg.Point {
		return []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}
	}
	sty := labelStyle(8)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	lineH := sty.FontExtents().Height
	pad := vg.Points(2)
	for i, s := range o.phases {
		x0, x1 := clamp(trX(s.from)), clamp(trX(s.to))
		if x1 <= x0 {
			continue
		}
		if i%2 == 1 {
			c.FillPolygon(bandFill, rect(x0, x1))
		}
		if sty.Width(s.label) < x1-x0-2*pad {
			c.FillText(sty, vg.Point{X: x0 + pad, Y: c.Max.Y - pad}, s.label)
		}
	}
	faultSty := sty
	faultSty.Color = faultLine
	thin := draw.LineStyle{Color: faultLine, Width: vg.Points(0.8)}
	// Fault labels take turns on three rows below the phase names, so
	// faults close together do not write over each other.
	for i, s := range o.faults {
		x0, x1 := clamp(trX(s.from)), clamp(trX(s.to))
		if x1-x0 < vg.Points(1) {
			c.StrokeLine2(thin, x0, c.Min.Y, x0, c.Max.Y)
		} else {
			c.FillPolygon(faultFill, rect(x0, x1))
		}
		y := c.Max.Y - pad - lineH*vg.Length(1+i%3)
		ls := faultSty
		x := x0 + pad
		if x+ls.Width(s.label) > c.Max.X {
			// Near the right edge the label goes to the left of the mark.
			ls.XAlign, x = draw.XRight, x0-pad
		}
		c.FillText(ls, vg.Point{X: x, Y: y}, s.label)
	}
}
