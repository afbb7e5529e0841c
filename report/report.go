// Package report renders results.json as HTML pages a person reads at a
// glance: one page per run (report.html) with its charts, checks and
// verdicts, and one per sweep (sweep.html) comparing its points.
//
// Pages are self-contained: the charts are drawn with gonum/plot as inline
// SVG and the styles are in the page, so a page opens offline, from an
// archived CI artefact or an e-mail attachment, exactly as it was written.
package report

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/internal/safefile"
)

// FileName is the name the runner gives a run's report in its output
// directory; SweepFileName is the sweep's, next to comparison.txt.
const (
	FileName      = "report.html"
	SweepFileName = "sweep.html"
)

//go:embed templates/*.html
var templates embed.FS

// parse parses the page templates. It runs for every page, which costs
// well under a millisecond, rather than keeping a parsed template in a
// package variable.
func parse(name string) (*template.Template, error) {
	funcs := template.FuncMap{"inc": func(i int) int { return i + 1 }}
	t, err := template.New(name).Funcs(funcs).ParseFS(templates, "templates/common.html", "templates/"+name)
	if err != nil {
		return nil, fmt.Errorf("parse template %s: %w", name, err)
	}
	return t, nil
}

// page is what templates/report.html renders.
type page struct {
	Title       string
	About       string // the scenario's description
	Header      []field
	Verdict     verdict
	Phases      phaseTable
	Faults      []faultRow
	Figures     []figure
	Checks      []checkRow
	Correctness []field
	Evidence    string
	// Coordination holds each registry, lock and watches workload's
	// figures and verdicts.
	Coordination []coordBlock
	Notes        []field
}

// coordBlock is one coordination workload's figures.
type coordBlock struct {
	Title  string
	Fields []field
}

type field struct{ Name, Value string }

// verdict is the line at the top: did the run pass its checks.
type verdict struct {
	Pass bool
	Text string
}

// Write renders r as one self-contained HTML page. hlogDir is the run's
// interval log directory (hlog/ next to results.json); when it is empty or
// lacks an op's log, the latency spectrum of that op is drawn from the
// percentiles in r instead.
func Write(w io.Writer, r *results.Results, hlogDir string) (err error) {
	// gonum/plot panics on some degenerate input rather than returning an
	// error; a report is never worth a crash of the run that wrote it.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("render report: %v", p)
		}
	}()
	pg, err := newPage(r, hlogDir)
	if err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	t, err := parse("report.html")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, "report.html", pg); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteFile renders r with Write and saves it as path. The page is
// rendered in memory first, so a failure leaves no half-written file.
func WriteFile(path string, r *results.Results, hlogDir string) error {
	return writeReport(path, r, hlogDir)
}

// WriteInto writes dir/FileName, the report of the run whose outputs are
// in dir; it is what a run hands the runner to draw its report.
func WriteInto(dir string, r *results.Results, hlogDir string) error {
	return writeReport(filepath.Join(dir, FileName), r, hlogDir)
}

func writeReport(path string, r *results.Results, hlogDir string) error {
	var b bytes.Buffer
	if err := Write(&b, r, hlogDir); err != nil {
		return err
	}
	return writeFile(path, b.Bytes())
}

func writeFile(path string, b []byte) error {
	if err := safefile.WriteAtomic(path, b, 0o644, false); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

func newPage(r *results.Results, hlogDir string) (*page, error) {
	pg := &page{
		Title:   "scenario " + r.Name(),
		About:   r.Description,
		Header:  header(r),
		Verdict: runVerdict(r),
		Phases:  phasesOf(r),
		Faults:  faultRows(r),
		Checks:  checkRows(r.Checks),
		Notes:   sortedFields(r.Notes),
	}
	pg.Correctness, pg.Evidence = correctness(r.Correctness)
	pg.Coordination = append(append(coordination(r), serverBlock(r)...), networkBlock(r)...)
	o, end := newOverlay(r), runEnd(r)
	for _, build := range []func() (figure, error){
		func() (figure, error) { return latencyFigure(r, o, end) },
		func() (figure, error) { return throughputFigure(r, o, end) },
		func() (figure, error) { return spectrumFigure(r, hlogDir) },
		func() (figure, error) { return errorsFigure(r, o, end) },
	} {
		fig, err := build()
		if err != nil {
			return nil, fmt.Errorf("figure %s: %w", fig.ID, err)
		}
		pg.Figures = append(pg.Figures, fig)
	}
	// One leader timeline per cluster, one above the other.
	leaders := []func() (figure, error){func() (figure, error) { return leaderFigure(r, o, end) }}
	if len(r.Clusters) > 0 {
		leaders = nil
		for _, c := range r.Clusters {
			cr := *r
			cr.Leader, cr.Resources = c.Leader, c.Resources
			leaders = append(leaders, func() (figure, error) {
				fig, err := leaderFigure(&cr, o, end)
				fig.ID, fig.Title = "leader-"+c.Name, "Leader of cluster "+c.Name+" ("+c.Store+")"
				return fig, err
			})
		}
	}
	for _, build := range leaders {
		fig, err := build()
		if err != nil {
			return nil, fmt.Errorf("figure %s: %w", fig.ID, err)
		}
		pg.Figures = append(pg.Figures, fig)
	}
	srv, err := serverFigure(r)
	if err != nil {
		return nil, err
	}
	if srv != nil {
		pg.Figures = append(pg.Figures, *srv)
	}
	res, err := resourceFigures(r, o, end)
	if err != nil {
		return nil, fmt.Errorf("resource figures: %w", err)
	}
	pg.Figures = append(pg.Figures, res...)
	return pg, nil
}

func header(r *results.Results) []field {
	var h []field
	add := func(name, value string) {
		if value != "" {
			h = append(h, field{name, value})
		}
	}
	file := r.ScenarioFile
	if file == "" {
		file = r.Scenario
	}
	add("file", file)
	add("run", r.RunID)
	add("store", r.Backend["store"])
	if !r.Started.IsZero() {
		add("started", r.Started.Format("2006-01-02 15:04:05 MST"))
	}
	d := fmtSeconds(r.DurationMS)
	if !r.Started.IsZero() && r.Finished.After(r.Started) {
		d += " planned, " + fmtSeconds(float64(r.Finished.Sub(r.Started))/float64(time.Millisecond)) + " run"
	}
	add("duration", d)
	add("sweep point", results.PointLabel(r, -1))
	for _, w := range slices.Sorted(maps.Keys(r.Clients)) {
		add("clients of "+w, results.ClientText(r.Clients[w]))
	}
	var backend []string
	for _, k := range slices.Sorted(maps.Keys(r.Backend)) {
		if k != "store" {
			backend = append(backend, k+" "+r.Backend[k])
		}
	}
	add("backend", strings.Join(backend, ", "))
	return h
}

func runVerdict(r *results.Results) verdict {
	n, failed := len(r.Checks), 0
	for _, c := range r.Checks {
		if c.Status() != results.StatusPass {
			failed++
		}
	}
	checks := "checks"
	if n == 1 {
		checks = "check"
	}
	switch {
	case n == 0:
		return verdict{Pass: true, Text: "PASS: no checks"}
	case n == 1 && failed == 0:
		return verdict{Pass: true, Text: "PASS: 1 check passed"}
	case failed == 0:
		return verdict{Pass: true, Text: fmt.Sprintf("PASS: all %d checks passed", n)}
	}
	return verdict{Text: fmt.Sprintf("FAIL: %d of %d %s failed", failed, n, checks)}
}

// phaseTable is the per-phase summary under the header.
type phaseTable struct {
	Ops      []string
	Rows     []phaseRow
	Clusters bool // rows name their cluster
}

type phaseRow struct {
	Cluster                           string // with several clusters
	Name, Start, Duration, Throughput string
	Latency                           []string // "p50 / p99" per op of Ops
	Errors, Availability, MaxGap      string
	TimeAvailability                  string
	Elections, NoLeader, Failover     string
}

// phasesOf is the phase table of a run: with several clusters, each
// phase's row of every cluster, side by side.
func phasesOf(r *results.Results) phaseTable {
	if len(r.Clusters) == 0 {
		return newPhaseTable(r.Phases)
	}
	var all []results.Phase
	var names []string
	for i := range r.Phases {
		for _, c := range r.Clusters {
			if i < len(c.Phases) {
				all = append(all, c.Phases[i])
				names = append(names, c.Name+" ("+c.Store+")")
			}
		}
	}
	t := newPhaseTable(all)
	t.Clusters = true
	for i := range t.Rows {
		t.Rows[i].Cluster = names[i]
	}
	return t
}

func newPhaseTable(phases []results.Phase) phaseTable {
	var t phaseTable
	for _, p := range phases {
		for _, o := range p.Ops {
			if !slices.Contains(t.Ops, o.Op) {
				t.Ops = append(t.Ops, o.Op)
			}
		}
	}
	for _, p := range phases {
		row := phaseRow{
			Name: p.Name, Start: fmtSeconds(p.StartMS), Duration: fmtSeconds(p.DurationMS),
			Throughput:       fmt.Sprintf("%.1f", p.Total.Throughput),
			Errors:           errorsText(p.Total),
			Availability:     fmtRatio(p.Availability),
			MaxGap:           fmtOptMS(p.MaxGapMS),
			TimeAvailability: fmtRatio(p.TimeAvailability),
			Elections:        fmt.Sprint(p.Elections),
			NoLeader:         "-",
			Failover:         fmtOptMS(p.FailoverTimeMS),
		}
		if p.NoLeaderMS > 0 {
			row.NoLeader = fmtMS(p.NoLeaderMS)
		}
		if p.LeaderUnknownMS > 0 {
			row.NoLeader += " (" + fmtMS(p.LeaderUnknownMS) + " unknown: polls unanswered)"
		}
		for _, op := range t.Ops {
			cell := "-"
			for _, o := range p.Ops {
				if o.Op == op && o.Latency != nil {
					cell = fmtMS(o.Latency.P50MS) + " / " + fmtMS(o.Latency.P99MS)
				}
			}
			row.Latency = append(row.Latency, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func errorsText(s results.OpStats) string {
	if s.Errors == 0 {
		return "0"
	}
	var by []string
	for _, c := range slices.SortedFunc(maps.Keys(s.ErrorsBy), compareClasses) {
		if n := s.ErrorsBy[c]; n > 0 {
			by = append(by, fmt.Sprintf("%s %d", c, n))
		}
	}
	return fmt.Sprintf("%d (%s)", s.Errors, strings.Join(by, ", "))
}

type faultRow struct {
	Phase, ID, What, Applied, Recovered, Leader, Write, Unavailable, Served, Detail string
	Failed                                                                          bool
}

func faultRows(r *results.Results) []faultRow {
	var rows []faultRow
	for _, p := range r.Phases {
		for _, f := range p.Failovers {
			row := faultRow{
				Phase: p.Name, ID: f.FaultID, What: faultLabel(f),
				Applied: "never", Recovered: "-",
				Leader: fmtOptMS(f.TimeToLeaderMS), Write: fmtOptMS(f.TimeToWriteMS),
				Unavailable: "-", Served: results.ServedText(f), Detail: f.Error, Failed: f.Error != "",
			}
			if row.Served == "" {
				row.Served = "-"
			}
			if f.AppliedMS != nil {
				row.Applied = fmtSeconds(*f.AppliedMS)
				if f.LagMS != nil {
					row.Applied += " (lag " + fmtMS(*f.LagMS) + ")"
				}
			}
			if f.RecoveredMS != nil {
				row.Recovered = fmtSeconds(*f.RecoveredMS)
			}
			if f.TimeToLeaderMS != nil && *f.TimeToLeaderMS == 0 {
				// The fault did not take the leader away: nothing was
				// elected (as the terminal summary says it).
				row.Leader = "leader kept"
			}
			if u := f.Unavailable; u != nil {
				row.Unavailable = fmt.Sprintf("%s (%s to %s)", fmtMS(u.EndMS-u.StartMS), fmtSeconds(u.StartMS), fmtSeconds(u.EndMS))
			}
			if d := f.Disk; d != nil && row.Detail == "" {
				row.Detail = fmt.Sprintf("contender wrote %d blocks, %.1f MiB", d.Writes, float64(d.Bytes)/(1<<20))
				if d.FsyncMaxMS > 0 {
					row.Detail += fmt.Sprintf(", fsync p50 %s p99 %s max %s", fmtMS(d.FsyncP50MS), fmtMS(d.FsyncP99MS), fmtMS(d.FsyncMaxMS))
				}
				if d.ThrottleNote != "" {
					row.Detail += "; " + d.ThrottleNote
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

type checkRow struct {
	Status, Name, Condition, Pos string
	Observed                     []field
	Message, Error               string
}

func checkRows(checks []results.Check) []checkRow {
	rows := make([]checkRow, len(checks))
	for i, c := range checks {
		rows[i] = checkRow{Status: strings.ToUpper(c.Status()), Name: c.Name, Condition: c.Condition, Pos: c.Pos, Error: c.Error}
		if c.Status() != results.StatusPass {
			rows[i].Message = c.Message
		}
		for _, k := range slices.Sorted(maps.Keys(c.Observed)) {
			rows[i].Observed = append(rows[i].Observed, field{k, observedText(c.Observed[k])})
		}
	}
	return rows
}

func observedText(v any) string {
	switch v := v.(type) {
	case nil:
		return "not measured"
	case float64:
		return strconvG(v)
	}
	return fmt.Sprint(v)
}

func correctness(c *results.Correctness) (fields []field, evidence string) {
	if c == nil {
		return []field{{"verdict", "not checked"}}, ""
	}
	lin := "unknown (the checker gave up or did not run)"
	if c.Linearizable != nil {
		lin = "NO"
		if *c.Linearizable {
			lin = "yes"
		}
	}
	lost := "not checked"
	if c.LostWrites != nil {
		lost = fmt.Sprint(*c.LostWrites)
	}
	fields = []field{{"linearizable", lin}, {"lost writes", lost}, {"operations checked", fmt.Sprint(c.Operations)}}
	if c.Detail != "" {
		fields = append(fields, field{"detail", c.Detail})
	}
	return fields, c.Visualization
}

// coordination renders what registries, locks and watches workloads
// measured besides their operations, which the phase table shows.
func coordination(r *results.Results) []coordBlock {
	var out []coordBlock
	for _, g := range r.Registries {
		watch := fmt.Sprintf("kept (%d events, %s model)", g.Watch.Events, g.Watch.Model)
		if !g.Watch.OK {
			watch = "BROKEN: " + g.Watch.Detail
		}
		fs := []field{
			{"instances", fmt.Sprintf("%d (ttl %s, heartbeat %s), %d watchers", g.Instances, fmtMS(g.TTLMS), fmtMS(g.HeartbeatMS), g.Watchers)},
			{"registrations/s", fmt.Sprintf("%.0f", g.RegistrationsPerS)},
			{"vanished / detected", fmt.Sprintf("%d / %d", g.Vanished, g.Detected)},
			{"expired while heartbeating", fmt.Sprint(g.Expired)},
			{"watch promises", watch},
		}
		if g.MemoryPerInstanceKiB != nil {
			fs = append(fs, field{"server memory per instance", fmt.Sprintf("%.1f KiB", *g.MemoryPerInstanceKiB)})
		}
		if g.ViolationsFile != "" {
			fs = append(fs, field{"evidence", g.ViolationsFile})
		}
		out = append(out, coordBlock{Title: "Registry " + g.Workload + " (" + g.Store + ")", Fields: fs})
	}
	for _, l := range r.Locks {
		verdict := "held: no two contenders believed they held the lock at once"
		if !l.MutexOK {
			verdict = fmt.Sprintf("BROKEN: %d pairs of overlapping holds; %s", l.Overlaps, l.Detail)
		}
		fs := []field{
			{"contenders", fmt.Sprintf("%d (ttl %s, hold %s)", l.Contenders, fmtMS(l.TTLMS), fmtMS(l.HoldMS))},
			{"holds / lost / paused", fmt.Sprintf("%d / %d / %d", l.Holds, l.Lost, l.Paused)},
			{"mutual exclusion", verdict},
		}
		if l.OverlapsFile != "" {
			fs = append(fs, field{"evidence", l.OverlapsFile})
		}
		out = append(out, coordBlock{Title: "Lock " + l.Workload + " (" + l.Store + ")", Fields: fs})
	}
	for _, k := range r.KeyWatches {
		watch := fmt.Sprintf("kept (%d events, %s model, %d values skipped)", k.Watch.Events, k.Watch.Model, k.Watch.Skipped)
		if !k.Watch.OK {
			watch = "BROKEN: " + k.Watch.Detail
		}
		fs := []field{
			{"watchers", fmt.Sprint(k.Watchers)},
			{"writes told to every watcher", fmt.Sprintf("%d of %d", k.FannedOut, k.Writes)},
			{"watch promises", watch},
		}
		if k.ViolationsFile != "" {
			fs = append(fs, field{"evidence", k.ViolationsFile})
		}
		out = append(out, coordBlock{Title: "Watchers of " + k.Workload + " (" + k.Store + ")", Fields: fs})
	}
	for _, w := range r.Watches {
		fs := []field{{"watches held", fmt.Sprintf("%d of %d", w.Held, w.Keys)}, {"set in", fmt.Sprintf("%s (%.0f/s)", fmtMS(w.SetMS), w.SetPerS)}}
		if w.Error != "" {
			fs = append(fs, field{"error", w.Error})
		}
		out = append(out, coordBlock{Title: "Watches " + w.Workload + " (" + w.Store + ")", Fields: fs})
	}
	return out
}

func sortedFields(m map[string]string) []field {
	var fs []field
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fs = append(fs, field{k, m[k]})
	}
	return fs
}
