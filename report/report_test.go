package report

import (
	"bytes"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"
	"gonum.org/v1/plot/plotter"

	"github.com/coordlab/scenario/internal/results"
)

// figureIDs are the ids of report.html's figures, which readers and tests
// find them by.
var figureIDs = []string{"latency", "throughput", "spectrum", "errors", "leader", "server", "cpu", "rss", "written", "machine"}

func render(t *testing.T, r *results.Results, hlogDir string) (string, *xhtml.Node) {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, r, hlogDir); err != nil {
		t.Fatalf("Write: %v", err)
	}
	doc, err := xhtml.Parse(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("parse the page: %v", err)
	}
	return b.String(), doc
}

// byID returns the element with the given id, or nil.
func byID(n *xhtml.Node, id string) *xhtml.Node {
	return find(n, func(n *xhtml.Node) bool { return attr(n, "id") == id })
}

func find(n *xhtml.Node, match func(*xhtml.Node) bool) *xhtml.Node {
	if n.Type == xhtml.ElementNode && match(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if m := find(c, match); m != nil {
			return m
		}
	}
	return nil
}

func findAll(n *xhtml.Node, match func(*xhtml.Node) bool) []*xhtml.Node {
	var out []*xhtml.Node
	if n.Type == xhtml.ElementNode && match(n) {
		out = append(out, n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, findAll(c, match)...)
	}
	return out
}

func tag(name string) func(*xhtml.Node) bool {
	return func(n *xhtml.Node) bool { return n.Data == name }
}

func attr(n *xhtml.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *xhtml.Node) string {
	var b strings.Builder
	var walk func(*xhtml.Node)
	walk = func(n *xhtml.Node) {
		if n.Type == xhtml.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// checkFigures asserts that every figure is there and each of its panels
// holds a drawn <svg>.
func checkFigures(t *testing.T, doc *xhtml.Node, ids []string) {
	t.Helper()
	for _, id := range ids {
		fig := byID(doc, id)
		if fig == nil || fig.Data != "figure" {
			t.Errorf("no <figure id=%q>", id)
			continue
		}
		svgs := findAll(fig, tag("svg"))
		if len(svgs) == 0 {
			t.Errorf("figure %s has no <svg>", id)
		}
		for _, svg := range svgs {
			if attr(svg, "viewBox") == "" || find(svg, tag("path")) == nil {
				t.Errorf("figure %s: an <svg> without a viewBox or without anything drawn", id)
			}
		}
	}
}

// TestWriteFigures renders runs from rich to empty: every figure must be
// there with an svg, whatever was measured.
func TestWriteFigures(t *testing.T) {
	empty := &results.Results{SchemaVersion: 1, Scenario: "empty"}
	noLeader := sample()
	noLeader.Leader = []results.LeaderObservation{{AtMS: 0, Leader: 0}}
	noLatency := sample()
	for i := range noLatency.Series[0].Points {
		noLatency.Series[0].Points[i].P50MS, noLatency.Series[0].Points[i].P99MS = nil, nil
	}
	for i := range noLatency.Phases {
		noLatency.Phases[i].Workloads[0].Ops[0].Latency = nil
	}
	unwritten := sample()
	unwritten.Resources[1].Summary.WrittenBytes = nil
	tests := []struct {
		name string
		r    *results.Results
	}{
		{name: "sample", r: sample()},
		{name: "nothing measured", r: empty},
		{name: "never a leader", r: noLeader},
		{name: "nothing succeeded", r: noLatency},
		{name: "written bytes unreadable on one node", r: unwritten},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, doc := render(t, tt.r, "")
			checkFigures(t, doc, figureIDs)
		})
	}
}

func TestWriteSampleContents(t *testing.T) {
	r := sample()
	page, doc := render(t, r, t.TempDir())

	t.Run("self-contained", func(t *testing.T) {
		// The SVG namespaces are identifiers, never fetched.
		stripped := strings.NewReplacer(`xmlns="http://www.w3.org/2000/svg"`, "", `xmlns:xlink="http://www.w3.org/1999/xlink"`, "").Replace(page)
		for _, ref := range []string{"<script", "<link", "<img", "@import", "url(", "http://", "https://", "@font-face"} {
			if strings.Contains(stripped, ref) {
				t.Errorf("page refers to something outside itself: %q", ref)
			}
		}
	})

	t.Run("header", func(t *testing.T) {
		head := textOf(find(doc, tag("header")))
		for _, want := range []string{"scenario sample", "a sample run with every section filled", "examples/sample.hcl", "20261123T101500Z-abc123", "etcd 3.5.17", "2026-11-23 10:15:00 UTC", "10 s planned, 10.2 s run", "FAIL: 2 of 3 checks failed"} {
			if !strings.Contains(head, want) {
				t.Errorf("header lacks %q:\n%s", want, head)
			}
		}
		if n := strings.Count(head, "examples/sample.hcl"); n != 1 {
			t.Errorf("the scenario's path appears %d times in the header, want once:\n%s", n, head)
		}
	})

	t.Run("checks table", func(t *testing.T) {
		table := byID(doc, "checks")
		if table == nil {
			t.Fatal("no #checks")
		}
		rows := findAll(table, func(n *xhtml.Node) bool { return n.Data == "tr" && attr(n, "data-status") != "" })
		want := []struct{ status, text string }{
			{"PASS", "phase.steady.availability >= 0.99"},
			{"FAIL", "phase.failover.failover_time = 1500"},
			{"ERROR", "not measured: run.linearizable"},
		}
		if len(rows) != len(want) {
			t.Fatalf("%d check rows, want %d", len(rows), len(want))
		}
		for i, w := range want {
			got := textOf(rows[i])
			if attr(rows[i], "data-status") != w.status || !strings.Contains(got, w.status) || !strings.Contains(got, w.text) {
				t.Errorf("row %d = %q (status %s), want %s with %q", i, got, attr(rows[i], "data-status"), w.status, w.text)
			}
		}
		if !strings.Contains(textOf(rows[1]), "too slow") {
			t.Error("a failed check's message is missing")
		}
		if !strings.Contains(textOf(rows[2]), "run.linearizable = not measured") {
			t.Error("an unmeasured observed value should read 'not measured'")
		}
	})

	t.Run("correctness and notes", func(t *testing.T) {
		c := textOf(byID(doc, "correctness"))
		for _, want := range []string{"linearizableNO", "lost writes1", "not linearizable", "linearizability.html"} {
			if !strings.Contains(c, want) {
				t.Errorf("correctness lacks %q: %s", want, c)
			}
		}
		if n := byID(doc, "notes"); n == nil || !strings.Contains(textOf(n), "exited unexpectedly") {
			t.Error("notes missing")
		}
	})

	t.Run("coordination workloads", func(t *testing.T) {
		all := textOf(doc)
		for _, want := range []string{"Registry svc (etcd)", "registrations/s295", "vanished / detected10 / 10",
			"BROKEN: 1 broken promise(s); first: watcher 1, missed", "watch-violations-svc.json",
			"Lock locks (etcd)", "BROKEN: 2 pairs of overlapping holds; contender 1 held the lock"} {
			if !strings.Contains(all, want) {
				t.Errorf("the report lacks %q", want)
			}
		}
	})

	t.Run("phases and faults", func(t *testing.T) {
		ph := textOf(byID(doc, "phases"))
		for _, want := range []string{"steady", "failover", "2 ms / 5 ms", "98%", "1.5 s"} {
			if !strings.Contains(ph, want) {
				t.Errorf("phases table lacks %q: %s", want, ph)
			}
		}
		f := textOf(byID(doc, "faults"))
		for _, want := range []string{"failover/kill", "kill n1", "7.01 s (lag 10 ms)", "1.2 s", "leader kept", "contender wrote 10 blocks"} {
			if !strings.Contains(f, want) {
				t.Errorf("faults table lacks %q: %s", want, f)
			}
		}
	})

	t.Run("faults shaded on time charts", func(t *testing.T) {
		for _, id := range []string{"latency", "throughput", "errors", "leader", "cpu"} {
			svg := renderNode(find(byID(doc, id), tag("svg")))
			// The kill has an end (shaded), the disk fault none (a line);
			// both are labelled.
			for _, want := range []string{">kill n1<", ">disk n3<", "fill-opacity:0.149", "stroke:#D62728"} {
				if !strings.Contains(svg, want) {
					t.Errorf("%s chart lacks %q", id, want)
				}
			}
			for _, phase := range []string{">steady<", ">failover<"} {
				if !strings.Contains(svg, phase) {
					t.Errorf("%s chart does not name phase %s", id, phase)
				}
			}
		}
	})

	t.Run("keys", func(t *testing.T) {
		for id, want := range map[string][]string{
			"latency":  {"kv put p99", "kv put p50"},
			"spectrum": {"steady", "failover"},
			"errors":   {"unavailable"},
			"cpu":      {"n1", "n2", "n3", "n1 waiting", "n2 waiting"},
			"machine":  {"busy", "steal", "wait", "runner waiting"},
		} {
			key := textOf(find(byID(doc, id), func(n *xhtml.Node) bool { return n.Data == "ul" && attr(n, "class") == "key" }))
			for _, w := range want {
				if !strings.Contains(key, w) {
					t.Errorf("%s key lacks %q: %q", id, w, key)
				}
			}
		}
		// A node without a wait figure gets no dashed line.
		if key := textOf(find(byID(doc, "cpu"), func(n *xhtml.Node) bool { return n.Data == "ul" && attr(n, "class") == "key" })); strings.Contains(key, "n3 waiting") {
			t.Errorf("cpu key has n3 waiting, which has no wait figure: %q", key)
		}
	})
}

func renderNode(n *xhtml.Node) string {
	if n == nil {
		return ""
	}
	var b bytes.Buffer
	if err := xhtml.Render(&b, n); err != nil {
		return ""
	}
	return html.UnescapeString(b.String())
}

// TestSpectrumFromHlog checks the spectrum against numbers computed
// independently: results.json's per-phase percentiles come from the
// collector's phase histograms, the spectrum from the interval logs merged
// by phase. Ops here complete in the second they were sent and phases
// start on whole seconds, so both see the same operations.
func TestSpectrumFromHlog(t *testing.T) {
	dir := t.TempDir()
	r := simulate(t, dir, 12, 200)
	for _, k := range opKeys(r) {
		curves, fromLog, why := logCurves(r, dir, k)
		if !fromLog {
			t.Fatalf("%v: not read from the log%s", k, why)
		}
		if len(curves) != len(r.Phases) {
			t.Fatalf("%v: %d curves, want one per phase (%d)", k, len(curves), len(r.Phases))
		}
		for i, c := range curves {
			p := r.Phases[i]
			st := phaseOp(p, k)
			if c.phase != p.Name || st == nil || st.Latency == nil {
				t.Fatalf("%v curve %d is phase %s; results have %+v", k, i, c.phase, st)
			}
			// The curve's last point is the max, at 1/(1-p) = count.
			last := c.xy[len(c.xy)-1]
			if last.X != float64(st.OK) {
				t.Errorf("%v %s: curve ends at x=%v, want the phase's %d successful ops", k, p.Name, last.X, st.OK)
			}
			for _, q := range []struct {
				name string
				x    float64
				want float64
			}{
				{"p50", 2, st.Latency.P50MS},
				{"p90", 10, st.Latency.P90MS},
				{"p99", 100, st.Latency.P99MS},
				{"max", last.X, st.Latency.MaxMS},
			} {
				got := valueAt(c.xy, q.x)
				// Three significant digits: equivalent values differ by
				// at most 0.1%; max is exact in results.json.
				if math.Abs(got-q.want) > q.want*0.002+0.001 {
					t.Errorf("%v %s %s: spectrum %v ms, results.json %v ms", k, p.Name, q.name, got, q.want)
				}
			}
			for j := 1; j < len(c.xy); j++ {
				if c.xy[j].X <= c.xy[j-1].X || c.xy[j].Y < c.xy[j-1].Y {
					t.Errorf("%v %s: spectrum not increasing at %d: %v then %v", k, p.Name, j, c.xy[j-1], c.xy[j])
					break
				}
			}
		}
	}
	// The stall is in the failover phase only: its tail is seconds, the
	// steady phase's milliseconds.
	curves, _, _ := logCurves(r, dir, opKey{"kv", "put"})
	if steady, fail := curves[1].xy[len(curves[1].xy)-1].Y, curves[2].xy[len(curves[2].xy)-1].Y; steady > 100 || fail < 1000 {
		t.Errorf("max latency: steady %v ms, failover %v ms; want the stall in failover only", steady, fail)
	}
}

// valueAt returns the curve's value at x, which must be one of its points.
func valueAt(xy plotter.XYs, x float64) float64 {
	for _, p := range xy {
		if math.Abs(p.X-x) < 1e-9*x {
			return p.Y
		}
	}
	return math.NaN()
}

func TestSpectrumSource(t *testing.T) {
	dir := t.TempDir()
	r := simulate(t, dir, 6, 50)
	tests := []struct {
		name    string
		hlogDir string
		mutate  func(r *results.Results)
		caption string
	}{
		{name: "interval logs", hlogDir: dir, caption: "From the interval logs in hlog/."},
		{name: "no log directory", hlogDir: "", caption: "for lack of interval logs: kv put; kv get."},
		{name: "log directory without logs", hlogDir: t.TempDir(), caption: "for lack of interval logs: kv put; kv get."},
		{name: "unknown start", hlogDir: dir, mutate: func(r *results.Results) { r.Started = time.Time{} },
			caption: "kv put (no start time in results.json)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := simulate(t, "", 6, 50)
			if tt.mutate != nil {
				tt.mutate(r)
			}
			fig, err := spectrumFigure(r, tt.hlogDir)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(fig.Caption, tt.caption) {
				t.Errorf("caption %q lacks %q", fig.Caption, tt.caption)
			}
			if len(fig.Panels) != 2 {
				t.Errorf("%d panels, want one per op (2)", len(fig.Panels))
			}
		})
	}
	_ = r
}

func TestCorruptHlogFallsBack(t *testing.T) {
	dir := t.TempDir()
	r := simulate(t, dir, 4, 50)
	if err := os.WriteFile(filepath.Join(dir, "kv.put.hlog"), []byte("Tag=corrected,0.000,1.000,0.1,HISTFAAAAnotbase64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fig, err := spectrumFigure(r, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fig.Caption, "kv put (read interval log") {
		t.Errorf("caption %q does not say why kv put fell back", fig.Caption)
	}
}

func TestPercentileTicks(t *testing.T) {
	tests := []struct {
		hi   float64
		want []string
	}{
		{hi: 1e4, want: []string{"50%", "90%", "99%", "99.9%", "99.99%"}},
		{hi: 1e6, want: []string{"50%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"}},
	}
	for _, tt := range tests {
		var got []string
		for _, tk := range percentileTicks(1, tt.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("percentileTicks(1, %g) labels %v, want %v", tt.hi, got, tt.want)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"sub-millisecond", fmtMS(0.4567), "0.457 ms"},
		{"milliseconds", fmtMS(12.34), "12.3 ms"},
		{"hundreds", fmtMS(345.6), "346 ms"},
		{"seconds", fmtMS(1500), "1.5 s"},
		{"not measured", fmtOptMS(nil), "-"},
		{"offset", fmtSeconds(7010), "7.01 s"},
		{"whole seconds", fmtSeconds(10000), "10 s"},
		{"full availability", fmtRatio(f64(1)), "100%"},
		{"nearly full", fmtRatio(f64(0.999999)), ">99.99%"},
		{"availability", fmtRatio(f64(0.98)), "98%"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := WriteFile(path, sample(), ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) {
		t.Fatalf("report.html: %v, starts %q", err, b[:min(len(b), 20)])
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "missing", FileName), sample(), ""); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

// BenchmarkWrite60s renders a 60-second run of 1000 ops/s with its
// interval logs, the size of a typical scenario.
func BenchmarkWrite60s(b *testing.B) {
	dir := b.TempDir()
	r := simulate(b, dir, 60, 1000)
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		if err := Write(&out, r, dir); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(out.Len())/1024, "KiB/page")
}

func TestVerdict(t *testing.T) {
	pass := results.Check{Passed: true}
	fail := results.Check{}
	broken := results.Check{Error: "not measured: run.linearizable"}
	tests := []struct {
		name   string
		checks []results.Check
		pass   bool
		text   string
	}{
		{name: "no checks", pass: true, text: "PASS: no checks"},
		{name: "one passed", checks: []results.Check{pass}, pass: true, text: "PASS: 1 check passed"},
		{name: "all passed", checks: []results.Check{pass, pass}, pass: true, text: "PASS: all 2 checks passed"},
		{name: "one failed", checks: []results.Check{fail}, text: "FAIL: 1 of 1 check failed"},
		{name: "an error is a failure", checks: []results.Check{pass, broken, fail}, text: "FAIL: 2 of 3 checks failed"},
	}
	for _, tt := range tests {
		got := runVerdict(&results.Results{Checks: tt.checks})
		if got.Pass != tt.pass || got.Text != tt.text {
			t.Errorf("%s: %+v, want pass %v %q", tt.name, got, tt.pass, tt.text)
		}
	}
}

// TestWriteClusters: with several clusters, a leader timeline per cluster
// and the phase table's rows of each cluster side by side.
func TestWriteClusters(t *testing.T) {
	a, b := sample(), sample()
	b.Backend = map[string]string{"store": "zookeeper 3.8.0", "provider": "docker"}
	r := results.Combine([]string{"etcd", "zk"}, []*results.Results{a, b})
	_, doc := render(t, r, "")
	checkFigures(t, doc, []string{"latency", "throughput", "errors", "leader-etcd", "leader-zk", "cpu"})
	if byID(doc, "leader") != nil {
		t.Error("a run-wide leader figure with several clusters")
	}
	table := byID(doc, "phases")
	if table == nil {
		t.Fatal("no phase table")
	}
	text := textOf(table)
	for _, want := range []string{"cluster", "etcd (etcd 3.5.17)", "zk (zookeeper 3.8.0)"} {
		if !strings.Contains(text, want) {
			t.Errorf("phase table lacks %q: %s", want, text)
		}
	}
	if rows := findAll(table, tag("tr")); len(rows) != 1+2*len(r.Phases) {
		t.Errorf("%d rows in the phase table, want a header and %d", len(rows), 2*len(r.Phases))
	}
}

// TestNetworkBlock: the network's undeclared losses, and the shaper's
// lateness where measured, are listed per counted phase, and the block is
// left out where no phase was counted.
func TestNetworkBlock(t *testing.T) {
	r := sample()
	if b := networkBlock(r); b != nil {
		t.Errorf("a run without a shaper has a network block: %+v", b)
	}
	r.Phases[0].NetworkDrops, r.Phases[0].NetworkFrames = results.Ptr(int64(0)), results.Ptr(int64(800))
	r.Phases[1].NetworkDrops = results.Ptr(int64(12))
	r.Phases[1].NetworkLate = &results.NetworkLate{Packets: 790, P50MS: 0.061, P99MS: 1.25, MaxMS: 7.5}
	r.Phases[1].NetworkPairs = []results.NetworkPair{
		{From: "n1", To: "n2", Packets: 790, Late: r.Phases[1].NetworkLate},
		{From: "n2", To: "n1", Packets: 950, Lost: 50, Cut: 3, Dropped: 12},
	}
	b := networkBlock(r)
	if len(b) != 1 || len(b[0].Fields) != 3 {
		t.Fatalf("network block %+v, want one block with a field per phase, and one for the pairs of the phase that has them", b)
	}
	if f, want := b[0].Fields[2], "n1>n2 790 packets, late p50 0.061 ms, p99 1.250 ms; n2>n1 950 packets, lost 50 (5.00%) to the link's loss, 3 cut, 12 dropped that no link declared"; f.Name != r.Phases[1].Name+", by pair" || f.Value != want {
		t.Errorf("pairs field = %+v, want %q", f, want)
	}
	if strings.Contains(b[0].Fields[0].Value, "due time") {
		t.Errorf("field 0 = %+v: a lateness where none was measured", b[0].Fields[0])
	}
	for i, want := range []string{"the shaper carried 800 frames and lost no frame that no link declared",
		"lost 12 frames that no link declared: the shaper fell behind, and each was a retransmission; it handed on the 790 packets it held 0.061 ms (p50), 1.250 ms (p99) and at most 7.500 ms after their due time"} {
		if f := b[0].Fields[i]; f.Name != r.Phases[i].Name || !strings.Contains(f.Value, want) {
			t.Errorf("field %d = %+v, want phase %s with %q", i, f, r.Phases[i].Name, want)
		}
	}
	page, _ := render(t, r, t.TempDir())
	if !strings.Contains(page, "lost 12 frames that no link declared") {
		t.Error("the page does not show the network block")
	}
}
