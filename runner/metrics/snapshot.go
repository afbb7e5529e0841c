package metrics

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// Results does the final merge (Flush) and returns everything measured. The
// runner fills in what only it knows: run id, scenario, seeds, sweep point,
// failovers, checks, backend.
func (c *Collector) Results() *results.Results {
	c.Flush()
	return c.Snapshot()
}

// Progress is what a progress line shows of one second.
type Progress struct {
	Ops    int64   // requests completed in the second, failed or not
	P99MS  float64 // their worst p99 over the ops; 0 when none succeeded
	Errors int64   // requests failed in the whole run so far
}

// Progress reads second k for a progress line, requests only (not
// notifications and other observed ops), from what the collector's last
// tick merged. Unlike Snapshot it neither merges nor renders the run, so
// its cost does not grow with the run's length: a progress line once a
// second would otherwise rebuild every second's row and every phase's
// histograms each time.
func (c *Collector) Progress(k int) Progress {
	c.mu.Lock()
	defer c.mu.Unlock()
	var p Progress
	for _, st := range c.ops {
		if !st.request {
			continue
		}
		p.Errors += st.errs
		if k < 0 || k >= len(st.seconds) {
			continue
		}
		row := &st.seconds[k]
		p.Ops += row.ok + row.errs
		p99, ok := row.p99, row.hasLatency
		if !row.sealed && row.corrected != nil {
			p99, ok = row.corrected.ValueAtQuantile(99), true
		}
		if ok {
			p.P99MS = max(p.P99MS, float64(p99)/1000)
		}
	}
	return p
}

// Snapshot returns everything measured so far without ending the run:
// pending samples are merged, and while the run goes on, write gaps and
// leader-less time are measured up to now rather than to the phases' ends.
func (c *Collector) Snapshot() *results.Results {
	c.mu.Lock()
	c.merge()
	horizon := c.runEnd()
	if !c.finished {
		horizon = min(horizon, time.Since(c.base))
	}
	r := &results.Results{
		SchemaVersion: results.SchemaVersion,
		Started:       c.base,
		DurationMS:    results.MS(c.runEnd() - c.runStart()),
		Phases:        make([]results.Phase, len(c.phases)),
		Series:        c.series(),
	}
	states := c.orderedStates()
	run := &cell{}
	runOps := map[string]*cell{}
	runWl := map[string]*workloadCells{}
	for i, p := range c.phases {
		r.Phases[i] = c.phase(i, p, states, run, runOps, runWl)
	}
	gaps := c.writes.measure(c.sealed, horizon, c.phases)
	wlGaps := make(map[string]writeGaps, len(c.wlWrites))
	for name, t := range c.wlWrites {
		wlGaps[name] = t.measure(c.sealed, horizon, c.phases)
	}
	notes := c.notes()
	c.mu.Unlock()

	runPhase := results.Phase{
		Name:       "run",
		StartMS:    results.MS(c.runStart()),
		DurationMS: r.DurationMS,
		Failovers:  []results.Failover{},
	}
	runDur := c.runEnd() - c.runStart()
	fillTotals(&runPhase, run, runOps, runWl, c.workloadOrder(states), runDur)
	for i := range r.Phases {
		p := &r.Phases[i]
		span := c.phases[i]
		p.Elections = c.leader.Elections(span.Start.D(), span.End().D())
		p.NoLeaderMS = results.MS(c.leader.NoLeader(span.Start.D(), span.End().D()))
		p.LeaderUnknownMS = results.MS(c.leader.Unanswered(span.Start.D(), span.End().D()))
		p.MaxGapMS, p.TimeAvailability = gaps.maxGap[i], gaps.timeAvail[i]
		for j := range p.Workloads {
			if g, ok := wlGaps[p.Workloads[j].Name]; ok {
				p.Workloads[j].MaxGapMS, p.Workloads[j].TimeAvailability = g.maxGap[i], g.timeAvail[i]
			}
		}
	}
	runPhase.Elections = c.leader.Elections(c.runStart(), c.runEnd())
	runPhase.NoLeaderMS = results.MS(c.leader.NoLeader(c.runStart(), c.runEnd()))
	runPhase.LeaderUnknownMS = results.MS(c.leader.Unanswered(c.runStart(), c.runEnd()))
	runPhase.MaxGapMS, runPhase.TimeAvailability = gaps.runMaxGap, gaps.runTimeAvail
	for j := range runPhase.Workloads {
		g := wlGaps[runPhase.Workloads[j].Name]
		runPhase.Workloads[j].MaxGapMS, runPhase.Workloads[j].TimeAvailability = g.runMaxGap, g.runTimeAvail
	}
	r.Run = runPhase
	r.Leader = c.leader.Observations()
	r.Resources = c.resources.Nodes()
	if own := c.self.Nodes(); len(own) == 1 && own[0].Summary.Samples > 0 {
		r.Runner = &own[0]
	}
	for i, span := range c.phases {
		r.Phases[i].Resources = phaseResources(r.Resources, r.Runner, results.MS(span.Start.D()), results.MS(span.End().D()))
	}
	r.Run.Resources = phaseResources(r.Resources, r.Runner, results.MS(c.runStart()), results.MS(c.runEnd()))
	if r.Machine = c.machine.Result(); r.Machine != nil {
		for i, span := range c.phases {
			r.Phases[i].Machine = results.SummarizeMachine(r.Machine.Points, results.MS(span.Start.D()), results.MS(span.End().D()))
		}
		r.Run.Machine = results.SummarizeMachine(r.Machine.Points, results.MS(c.runStart()), results.MS(c.runEnd()))
	}
	r.Checks = []results.Check{}
	r.Notes = notes
	return r
}

// phaseResources condenses each node's samples, and the runner's, over
// (from, to] ms, a phase or the run; nil when none was taken in it.
func phaseResources(nodes []results.NodeResources, runner *results.NodeResources, from, to float64) map[string]results.ResourceSummary {
	if runner != nil {
		nodes = append(slices.Clip(nodes), *runner)
	}
	var out map[string]results.ResourceSummary
	for _, n := range nodes {
		if s := results.SummarizeResources(n.Points, from, to); s.Samples > 0 {
			if out == nil {
				out = map[string]results.ResourceSummary{}
			}
			out[n.Node] = s
		}
	}
	return out
}

// workloadCells accumulates one workload's cells: its total and its ops.
type workloadCells struct {
	total cell
	ops   map[string]*cell
}

// phase renders phase i and adds its cells to the run-wide accumulators.
// c.mu must be held.
func (c *Collector) phase(i int, span plan.PhaseSpan, states []*opState, run *cell, runOps map[string]*cell, runWl map[string]*workloadCells) results.Phase {
	total := &cell{}
	ops := map[string]*cell{}
	wls := map[string]*workloadCells{}
	var order []string
	for _, st := range states {
		cl := st.phases[i]
		if cl == nil {
			continue
		}
		if _, ok := wls[st.workload]; !ok {
			order = append(order, st.workload)
		}
		addTo(wls, st.workload, st.op, cl)
		addTo(runWl, st.workload, st.op, cl)
		addCell(ops, st.op, cl)
		addCell(runOps, st.op, cl)
		if !plan.Observed(st.op) {
			// A watcher being told is not a request: it has no place in
			// the phase's throughput, latency or availability.
			total.add(cl)
			run.add(cl)
		}
	}
	p := results.Phase{
		Name:       span.Name,
		StartMS:    results.MS(span.Start.D()),
		DurationMS: results.MS(span.Duration.D()),
		Failovers:  []results.Failover{},
	}
	fillTotals(&p, total, ops, wls, order, span.Duration.D())
	return p
}

// fillTotals renders the accumulated cells of a phase (or the run) into p.
func fillTotals(p *results.Phase, total *cell, ops map[string]*cell, wls map[string]*workloadCells, order []string, dur time.Duration) {
	p.Total = total.opStats("", dur)
	if n := total.ok + total.errs; n > 0 {
		p.Availability = results.Ptr(float64(total.ok) / float64(n))
	}
	p.Ops = []results.OpStats{}
	for _, op := range opOrder(ops) {
		p.Ops = append(p.Ops, ops[op].opStats(op, dur))
	}
	p.Workloads = []results.WorkloadStats{}
	for _, name := range order {
		w, ok := wls[name]
		if !ok {
			continue
		}
		ws := results.WorkloadStats{Name: name, Total: w.total.opStats("", dur), Ops: []results.OpStats{}}
		if n := w.total.ok + w.total.errs; n > 0 {
			ws.Availability = results.Ptr(float64(w.total.ok) / float64(n))
		}
		for _, op := range opOrder(w.ops) {
			ws.Ops = append(ws.Ops, w.ops[op].opStats(op, dur))
		}
		p.Workloads = append(p.Workloads, ws)
	}
}

func addCell(m map[string]*cell, op string, cl *cell) {
	a, ok := m[op]
	if !ok {
		a = &cell{}
		m[op] = a
	}
	a.add(cl)
}

func addTo(m map[string]*workloadCells, workload, op string, cl *cell) {
	w, ok := m[workload]
	if !ok {
		w = &workloadCells{ops: map[string]*cell{}}
		m[workload] = w
	}
	if !plan.Observed(op) {
		w.total.add(cl)
	}
	addCell(w.ops, op, cl)
}

// opOrder lists the ops of m in canonical order, unknown ones after, sorted.
func opOrder[V any](m map[string]V) []string {
	var out []string
	for _, op := range plan.MeasuredOps {
		if _, ok := m[op]; ok {
			out = append(out, op)
		}
	}
	var rest []string
	for op := range m {
		if !slices.Contains(plan.MeasuredOps, op) {
			rest = append(rest, op)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// orderedStates lists the op states in report order: workloads in plan
// order (unknown ones after, sorted), ops in canonical order.
func (c *Collector) orderedStates() []*opState {
	rank := make(map[string]int, len(c.workloads))
	for i, w := range c.workloads {
		rank[w.Name] = i
	}
	opRank := func(op string) int {
		if i := slices.Index(plan.MeasuredOps, op); i >= 0 {
			return i
		}
		return len(plan.MeasuredOps)
	}
	wlRank := func(w string) int {
		if i, ok := rank[w]; ok {
			return i
		}
		return len(c.workloads)
	}
	states := make([]*opState, 0, len(c.ops))
	for _, st := range c.ops {
		states = append(states, st)
	}
	slices.SortFunc(states, func(a, b *opState) int {
		if d := wlRank(a.workload) - wlRank(b.workload); d != 0 {
			return d
		}
		if d := strings.Compare(a.workload, b.workload); d != 0 {
			return d
		}
		if d := opRank(a.op) - opRank(b.op); d != 0 {
			return d
		}
		return strings.Compare(a.op, b.op)
	})
	return states
}

// workloadOrder lists the workloads of states, in their order.
func (c *Collector) workloadOrder(states []*opState) []string {
	var out []string
	for _, st := range states {
		if len(out) == 0 || out[len(out)-1] != st.workload {
			out = append(out, st.workload)
		}
	}
	return out
}

// series renders the per-second rows. c.mu must be held.
func (c *Collector) series() []results.Series {
	n := secondOf(c.runEnd() - 1)
	if c.runEnd() > 0 {
		n++
	}
	for _, st := range c.ops {
		n = max(n, len(st.seconds))
	}
	out := []results.Series{}
	for _, st := range c.orderedStates() {
		s := results.Series{Workload: st.workload, Op: st.op, Points: make([]results.SecondPoint, n)}
		for k := range n {
			pt := &s.Points[k]
			pt.AtMS = float64(k) * 1000
			if k >= len(st.seconds) {
				continue
			}
			row := &st.seconds[k]
			pt.Ops = row.ok + row.errs
			pt.Errors = row.errs
			pt.ErrorsBy = row.errorsBy(false)
			p50, p99, ok := row.p50, row.p99, row.hasLatency
			if !row.sealed && row.corrected != nil {
				p50, p99, ok = row.corrected.ValueAtQuantile(50), row.corrected.ValueAtQuantile(99), true
			}
			if ok {
				pt.P50MS = results.Ptr(float64(p50) / 1000)
				pt.P99MS = results.Ptr(float64(p99) / 1000)
			}
		}
		out = append(out, s)
	}
	return out
}

// notes reports samples that did not fit the model. c.mu must be held.
func (c *Collector) notes() map[string]string {
	m := map[string]string{}
	if c.outside > 0 {
		m["samples_outside_phases"] = strconv.FormatInt(c.outside, 10) + " samples were intended outside every phase and are counted only in the per-second series"
	}
	if c.late > 0 {
		m["late_samples"] = strconv.FormatInt(c.late, 10) + " samples arrived after their second was sealed: counted, but missing from that second's percentiles and interval log"
	}
	if c.clamped > 0 {
		m["clamped_latencies"] = strconv.FormatInt(c.clamped, 10) + " latencies exceeded the histogram range (1h) and were recorded as 1h"
	}
	if err := c.machine.Err(); err != nil {
		m["machine_samples"] = "the machine's CPU was not sampled throughout: " + err.Error()
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

func (c *Collector) runStart() time.Duration {
	if len(c.phases) == 0 {
		return 0
	}
	return c.phases[0].Start.D()
}

func (c *Collector) runEnd() time.Duration {
	var end time.Duration
	for _, p := range c.phases {
		end = max(end, p.End().D())
	}
	return end
}
