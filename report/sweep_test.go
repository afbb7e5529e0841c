package report

import (
	"bytes"
	"strings"
	"testing"

	xhtml "golang.org/x/net/html"

	"github.com/coordlab/scenario/internal/results"
)

// sweepRuns is a three-point sweep of sample(): the failover slows down
// as the heartbeat grows, and the last point measured no p99 in its
// failover phase (nothing succeeded).
func sweepRuns() []*results.Results {
	var runs []*results.Results
	for i, hb := range []string{"50ms", "100ms", "300ms"} {
		r := sample()
		r.Point = []results.SweepValue{{Variable: "heartbeat", Value: `"` + hb + `"`}}
		p := &r.Phases[1]
		p.Failovers[0].TimeToWriteMS = f64(float64(500 * (i + 1)))
		p.Failovers[1].TimeToWriteMS = f64(100)
		p.FailoverTimeMS = p.Failovers[0].TimeToWriteMS
		p.Elections = i + 1
		if i == 2 {
			p.Ops[0].Latency = nil
		}
		runs = append(runs, r)
	}
	return runs
}

func renderSweep(t *testing.T, runs []*results.Results) (string, *xhtml.Node) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSweep(&b, runs); err != nil {
		t.Fatalf("WriteSweep: %v", err)
	}
	doc, err := xhtml.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), doc
}

func TestWriteSweep(t *testing.T) {
	runs := sweepRuns()
	_, doc := renderSweep(t, runs)

	t.Run("figures per phase that has them", func(t *testing.T) {
		checkFigures(t, doc, []string{"p99-steady", "p99-failover", "failover-failover", "elections-failover"})
		for _, id := range []string{"failover-steady", "elections-steady"} {
			if byID(doc, id) != nil {
				t.Errorf("figure %s drawn for a phase without faults or elections", id)
			}
		}
	})

	t.Run("points labelled by their sweep values", func(t *testing.T) {
		svg := renderNode(byID(doc, "failover-failover"))
		for _, want := range []string{`heartbeat="50ms"`, `heartbeat="100ms"`, `heartbeat="300ms"`, ">500 ms<", ">1.5 s<"} {
			if !strings.Contains(svg, want) {
				t.Errorf("failover chart lacks %q", want)
			}
		}
		if p99 := renderNode(byID(doc, "p99-failover")); !strings.Contains(p99, ">not measured<") {
			t.Error("a point without a p99 should say 'not measured'")
		}
	})

	t.Run("side-by-side table", func(t *testing.T) {
		var want bytes.Buffer
		if err := results.WriteSideBySide(&want, runs); err != nil {
			t.Fatal(err)
		}
		pre := byID(doc, "comparison")
		if pre == nil || textOf(pre) != want.String() {
			t.Errorf("#comparison is not WriteSideBySide's table:\n%s\nwant:\n%s", textOf(pre), want.String())
		}
		pts := textOf(byID(doc, "points"))
		if !strings.Contains(pts, `heartbeat="300ms"`) || !strings.Contains(pts, "FAIL: 2 of 3 checks failed") {
			t.Errorf("points table: %s", pts)
		}
	})
}

func TestWriteSweepEdges(t *testing.T) {
	sameName := sweepRuns()
	for _, r := range sameName {
		r.Phases[0].Name = "a b"
		r.Phases[1].Name = "a-b" // the same id once made safe
	}
	tests := []struct {
		name string
		runs []*results.Results
		ids  []string
	}{
		{name: "no runs", runs: nil},
		{name: "points without sweep values", runs: []*results.Results{sample(), sample()}, ids: []string{"p99-failover", "failover-failover"}},
		{name: "phase names that collide as ids", runs: sameName, ids: []string{"p99-a-b", "p99-a-b-2", "failover-a-b-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, doc := renderSweep(t, tt.runs)
			checkFigures(t, doc, tt.ids)
			if len(tt.runs) == 2 && !strings.Contains(page, "run 2") {
				t.Error("runs without a point should be named by position")
			}
		})
	}
}
