package report

import (
	"fmt"
	"slices"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/coordlab/scenario/internal/results"
)

// serverPhases are the phases whose server metrics the report shows: the
// run's, or with several clusters each cluster's, named cluster:phase.
func serverPhases(r *results.Results) (names []string, phases []results.Phase) {
	if len(r.Clusters) == 0 {
		for _, p := range r.Phases {
			names, phases = append(names, p.Name), append(phases, p)
		}
		return names, phases
	}
	for _, c := range r.Clusters {
		for _, p := range c.Phases {
			names, phases = append(names, c.Name+":"+p.Name), append(phases, p)
		}
	}
	return names, phases
}

// serverBlock lists what the store's own metrics say of each phase.
func serverBlock(r *results.Results) []coordBlock {
	names, phases := serverPhases(r)
	var fs []field
	for i, p := range phases {
		if line := results.ServerLine(p.Server); line != "" {
			fs = append(fs, field{names[i], line})
		}
	}
	if len(fs) == 0 {
		return nil
	}
	return []coordBlock{{Title: "The store's own metrics", Fields: fs}}
}

// networkBlock says, per phase, what the network fabric lost that no link
// declared and how late the shaper was; nothing where no phase was
// counted (no shaper).
func networkBlock(r *results.Results) []coordBlock {
	var fs []field
	for _, p := range r.Phases {
		d := p.NetworkDrops
		if d == nil {
			continue
		}
		lost := "no frame"
		if *d > 0 {
			lost = fmt.Sprintf("%d frames", *d)
		}
		v := "lost " + lost + " that no link declared"
		if f := p.NetworkFrames; f != nil {
			v = fmt.Sprintf("the shaper carried %d frames and %s", *f, v)
		}
		if *d > 0 {
			v += ": the shaper fell behind, and each was a retransmission"
		}
		if l := p.NetworkLate; l != nil {
			v += fmt.Sprintf("; it handed on the %d packets it held %.3f ms (p50), %.3f ms (p99) and at most %.3f ms after their due time",
				l.Packets, l.P50MS, l.P99MS, l.MaxMS)
		}
		fs = append(fs, field{p.Name, v})
		if len(p.NetworkPairs) > 0 {
			fs = append(fs, field{p.Name + ", by pair", pairsText(p.NetworkPairs)})
		}
	}
	if len(fs) == 0 {
		return nil
	}
	return []coordBlock{{Title: "The network", Fields: fs}}
}

// pairsText says, pair by pair, what the shaper handed on, what each
// link's declared loss and cuts dropped (with the loss as a share, to set
// beside the declared one), what it dropped that no link declared, and
// how late it was.
func pairsText(pairs []results.NetworkPair) string {
	parts := make([]string, 0, len(pairs))
	for _, pr := range pairs {
		v := fmt.Sprintf("%s>%s %d packets", pr.From, pr.To, pr.Packets)
		if pr.Lost > 0 {
			v += fmt.Sprintf(", lost %d (%.2f%%) to the link's loss", pr.Lost, 100*float64(pr.Lost)/float64(pr.Lost+pr.Packets))
		}
		if pr.Cut > 0 {
			v += fmt.Sprintf(", %d cut", pr.Cut)
		}
		if pr.Dropped > 0 {
			v += fmt.Sprintf(", %d dropped that no link declared", pr.Dropped)
		}
		if l := pr.Late; l != nil {
			v += fmt.Sprintf(", late p50 %.3f ms, p99 %.3f ms", l.P50MS, l.P99MS)
		}
		parts = append(parts, v)
	}
	return strings.Join(parts, "; ")
}

// serverFigure charts, per phase, the store's own durations: a
// histogram's p99, a summary's mean (ZooKeeper and Consul report no
// quantiles a phase could be cut from).
func serverFigure(r *results.Results) (*figure, error) {
	names, phases := serverPhases(r)
	type series struct {
		label  string
		values plotter.Values
	}
	var all []series
	for _, m := range serverOrder() {
		s := series{}
		seen := false
		for _, p := range phases {
			st, ok := p.Server[m]
			v, stat := 0.0, ""
			switch {
			case !ok || st.Unit != "ms":
			case st.Kind == "histogram":
				v, stat = st.Values["p99"], "p99"
			case st.Kind == "summary":
				v, stat = st.Values["mean"], "mean"
			}
			if stat != "" {
				seen = true
				s.label = m + " " + stat
			}
			s.values = append(s.values, v)
		}
		if seen {
			all = append(all, s)
		}
	}
	fig := &figure{ID: "server", Title: "The store's own durations, per phase",
		Caption: "What the store itself measured in each phase, summed over its members: a histogram's p99 (etcd), a summary's mean (ZooKeeper, Consul). Where a client p99 moved, this says whether the disk or the consensus moved with it."}
	p := newPlot("", "", "ms")
	p.Add(grid(false))
	if len(all) == 0 {
		p.Add(note("not scraped"))
		svg, err := svgHTML(p, chartWidth, chartHeight*0.6, fig.Title)
		fig.Panels = []panel{{SVG: svg}}
		return fig, err
	}
	width := vg.Points(min(24, 200/float64(len(all)*len(phases))+6))
	top := 0.0
	var keys []key
	for i, s := range all {
		bars, err := plotter.NewBarChart(s.values, width)
		if err != nil {
			return nil, fmt.Errorf("server figure: %w", err)
		}
		bars.Color = palette(i)
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(float64(i)-float64(len(all)-1)/2)
		p.Add(bars)
		top = max(top, slices.Max(s.values))
		keys = append(keys, newKey(s.label, palette(i), false))
	}
	p.NominalX(names...)
	linearY(p, top, false)
	svg, err := svgHTML(p, chartWidth, chartHeight, fig.Title)
	fig.Panels, fig.Keys = []panel{{SVG: svg}}, keys
	return fig, err
}

// serverOrder names the metrics the chart may show, in the summary's order.
func serverOrder() []string { return []string{"fsync", "commit", "peer_rtt", "kv_apply"} }
