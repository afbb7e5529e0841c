package results

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/coordlab/scenario/plan"
)

// ANSI colours for check outcomes; used only when the caller asks, since
// escape codes in a CI log or a file are noise.
const (
	ansiGreen  = "\x1b[32m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

// WriteSummary writes a human-readable report: a fixed-width table of every
// phase × workload × op with counts, throughput, corrected latency
// percentiles (ms), errors and availability, a line of phase-wide numbers
// under each phase, then every check with its outcome, condition and
// observed values. color adds ANSI colours to the outcomes.
func WriteSummary(w io.Writer, r *Results, color bool) error {
	sw := &summaryWriter{w: w, color: color, realtime: r.Notes[NoteRealtime] != ""}
	sw.header(r)
	sw.clients(r)
	sw.preloads(r)
	if len(r.Clusters) == 0 {
		sw.table(r.Phases)
	}
	// With several clusters, each has its own table: leader figures and
	// latency percentiles do not mix across stores.
	for i := range r.Clusters {
		c := &r.Clusters[i]
		sw.printf("%s (%s, %s)\n", sw.paint(ansiBold, "cluster "+c.Name), c.Store, c.Provider)
		sw.table(c.Phases)
	}
	sw.correctness(r)
	sw.registries(r)
	sw.locks(r)
	sw.keyWatches(r)
	for _, w := range r.Watches {
		sw.printf("watches %s on %s: %d of %d held, set in %s (%.0f/s)\n\n", w.Workload, w.Store, w.Held, w.Keys, fmtDuration(w.SetMS), w.SetPerS)
	}
	sw.notes(r)
	sw.checks(r)
	if sw.err != nil {
		return fmt.Errorf("write summary: %w", sw.err)
	}
	return nil
}

// summaryWriter keeps the first write error so the layout code can stay
// linear.
type summaryWriter struct {
	w        io.Writer
	color    bool
	realtime bool // the runner's threads ran at real-time priority
	err      error
}

func (s *summaryWriter) printf(format string, args ...any) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, format, args...)
	}
}

func (s *summaryWriter) paint(code, text string) string {
	if !s.color {
		return text
	}
	return code + text + ansiReset
}

func (s *summaryWriter) header(r *Results) {
	file := r.ScenarioFile
	if file == "" {
		file = r.Scenario
	}
	s.printf("%s (%s)\n", s.paint(ansiBold, "scenario "+r.Name()), file)
	if r.Description != "" {
		s.printf("%s\n", r.Description)
	}
	var facts []string
	if r.RunID != "" {
		facts = append(facts, "run "+r.RunID)
	}
	if !r.Started.IsZero() {
		facts = append(facts, "started "+r.Started.UTC().Format(time.RFC3339))
	}
	facts = append(facts, "duration "+fmtDuration(r.DurationMS))
	s.printf("%s\n", strings.Join(facts, ", "))
	if len(r.Point) > 0 {
		var pts []string
		for _, p := range r.Point {
			pts = append(pts, p.Variable+"="+p.Value)
		}
		s.printf("point %s\n", strings.Join(pts, " "))
	}
	s.printf("\n")
}

// row is one line of the table before it is padded.
type row struct {
	phase, workload, op string
	stats               *OpStats
}

func (s *summaryWriter) table(phases []Phase) {
	if len(phases) == 0 {
		s.printf("no phases measured\n")
		return
	}
	// Name columns are as wide as their longest entry; number columns are
	// fixed so that tables of different runs line up.
	wp, ww, wo := len("phase"), len("workload"), len("op")
	var rows [][]row
	for i := range phases {
		p := &phases[i]
		var pr []row
		for j := range p.Workloads {
			wl := &p.Workloads[j]
			for k := range wl.Ops {
				pr = append(pr, row{p.Name, wl.Name, wl.Ops[k].Op, &wl.Ops[k]})
			}
		}
		pr = append(pr, row{p.Name, "(all)", "", &p.Total})
		for _, x := range pr {
			wp, ww, wo = max(wp, len(x.phase)), max(ww, len(x.workload)), max(wo, len(x.op))
		}
		rows = append(rows, pr)
	}
	s.printf("%-*s  %-*s  %-*s %9s %9s %8s %8s %8s %8s %8s %8s %8s\n",
		wp, "phase", ww, "workload", wo, "op", "count", "rps", "p50", "p90", "p99", "p99.9", "max", "errors", "avail")
	for i, pr := range rows {
		for _, x := range pr {
			st := x.stats
			l := st.Latency
			if l == nil {
				l = &Latency{P50MS: math.NaN(), P90MS: math.NaN(), P99MS: math.NaN(), P999MS: math.NaN(), MaxMS: math.NaN()}
			}
			s.printf("%-*s  %-*s  %-*s %9d %9.1f %8s %8s %8s %8s %8s %8d %8s\n",
				wp, x.phase, ww, x.workload, wo, x.op, st.Count, st.Throughput,
				fmtMS(l.P50MS), fmtMS(l.P90MS), fmtMS(l.P99MS), fmtMS(l.P999MS), fmtMS(l.MaxMS),
				st.Errors, fmtRatio(availability(st)))
		}
		s.phaseLine(&phases[i])
	}
	s.printf("latencies in ms from the intended send time (successful ops); avail = ok / attempted; time availability = share of the phase not in write gaps of 1 s or more\n\n")
}

// lateShareShort is the share of late starts past which the summary says
// that the offered load was not the declared one: issue 21's bar for the
// open loop on a quiet machine.
const lateShareShort = 0.001

// phaseLine prints the phase-wide numbers that do not fit a per-op row.
func (s *summaryWriter) phaseLine(p *Phase) {
	parts := []string{"availability " + fmtRatio(p.Availability)}
	if p.TimeAvailability != nil {
		parts = append(parts, "time availability "+fmtRatio(p.TimeAvailability))
	}
	if p.MaxGapMS != nil {
		parts = append(parts, "max write gap "+fmtDuration(*p.MaxGapMS))
	}
	parts = append(parts, fmt.Sprintf("elections %d", p.Elections))
	if p.NoLeaderMS > 0 {
		parts = append(parts, "no leader "+fmtDuration(p.NoLeaderMS))
	}
	if p.LeaderUnknownMS > 0 {
		parts = append(parts, "leader unknown "+fmtDuration(p.LeaderUnknownMS)+" (no node answered the leader poll)")
	}
	if p.Total.LateStarts > 0 {
		parts = append(parts, lateStarts(&p.Total, s.realtime))
	}
	if f := p.WriteFloor; f != nil {
		floor := fmt.Sprintf("write floor %s with n%d leading", fmtDuration(f.FloorMS), f.Leader)
		if f.JitterMS != nil {
			// A link never reorders, so its declared jitter raises its
			// median: part of the excess is then the scenario's.
			floor += fmt.Sprintf(" (not counting the %s of jitter declared on its path, which raises the median)", fmtDuration(*f.JitterMS))
		}
		if f.ExcessPct != nil {
			floor += fmt.Sprintf(", put p50 %+.1f%% above it", *f.ExcessPct)
		}
		// What the excess is made of, as far as measured.
		var of []string
		if f.FsyncP50MS != nil {
			of = append(of, "store fsync p50 "+fmtDuration(*f.FsyncP50MS))
		}
		if l := p.NetworkLate; l != nil {
			of = append(of, "shaper late p50 "+fmtDuration(l.P50MS)+" a packet")
		}
		if len(of) > 0 {
			floor += " (" + strings.Join(of, ", ") + ")"
		}
		parts = append(parts, floor)
	}
	if l := p.NetworkLate; l != nil && l.P99MS >= LateNetworkMS {
		late := fmt.Sprintf("the shaper handed on 1%% of %d packets over %s after their due time (the latest %s late",
			l.Packets, fmtDuration(l.P99MS), fmtDuration(l.MaxMS))
		if pr := latestPair(p.NetworkPairs); pr != nil {
			late += fmt.Sprintf("; the latest pair %s>%s, p99 %s of %d packets", pr.From, pr.To, fmtDuration(pr.Late.P99MS), pr.Late.Packets)
		}
		late += "): the links were that much slower than declared (a busy machine delays the shaper"
		if !s.realtime {
			late += "; see --realtime"
		}
		parts = append(parts, late+")")
	}
	if r, ok := p.Resources[RunnerNode]; ok {
		runner := fmt.Sprintf("runner CPU %.0f%% of a core, %.0f MiB", r.CPUMeanPercent, float64(r.RSSMaxBytes)/(1<<20))
		if w := r.WaitShare(); w != nil {
			runner += fmt.Sprintf(", waiting for a CPU %.2g%% of the time it wanted one", 100**w)
		}
		parts = append(parts, runner)
	}
	if m := p.Machine; m != nil {
		machine := fmt.Sprintf("machine CPUs %.0f%% busy, %.2g%% stolen", 100*m.BusyMeanShare, 100*m.StealMeanShare)
		if m.WaitMeanShare != nil {
			machine += fmt.Sprintf(", a task waiting for a CPU %.2g%% of the time", 100**m.WaitMeanShare)
		}
		parts = append(parts, machine)
	}
	if d := p.NetworkDrops; d != nil && *d > 0 {
		parts = append(parts, fmt.Sprintf("network dropped %d%s frames no link declared (the shaper fell behind)", *d, ofFrames(p.NetworkFrames)))
	}
	if p.LeaderElectedMS != nil && *p.LeaderElectedMS > 0 {
		parts = append(parts, "new leader after "+fmtDuration(*p.LeaderElectedMS))
	}
	if p.FailoverTimeMS != nil {
		parts = append(parts, "first write after "+fmtDuration(*p.FailoverTimeMS))
	}
	if p.RejoinTimeMS != nil {
		parts = append(parts, "members back after "+fmtDuration(*p.RejoinTimeMS))
	}
	if len(p.NotRejoined) > 0 {
		parts = append(parts, strings.Join(p.NotRejoined, ",")+" never answered again")
	}
	if classes := errorClasses(p.Total.ErrorsBy); classes != "" {
		parts = append(parts, "errors "+classes)
	}
	s.printf("  %s\n", strings.Join(parts, ", "))
	if line := ServerLine(p.Server); line != "" {
		s.printf("  server: %s\n", line)
	}
	for _, f := range p.Failovers {
		// A partition between groups of regions targets no node.
		what := strings.TrimSpace(f.Kind + " " + strings.Join(f.Targets, ","))
		s.printf("  fault %s (%s) %s\n", f.FaultID, what, failoverOutcome(f))
	}
	s.printf("\n")
}

// serverOrder is the order the summary names the store's own metrics in:
// the disk, then the consensus, then what the members hold.
var serverOrder = []string{"fsync", "commit", "peer_rtt", "leader_changes", "elections", "proposals_failed", "slow_applies", "heartbeat_failures", "proposals_committed", "watchers", "pending", "proposals_pending", "db_size"}

// ServerLine renders a phase's server metrics in one line: a histogram's
// p99 (and count), a summary's mean, a counter's increase, a gauge's
// largest value.
func ServerLine(server map[string]ServerStat) string {
	var parts []string
	for _, name := range serverOrder {
		st, ok := server[name]
		if !ok {
			continue
		}
		v := st.Values
		switch st.Kind {
		case "histogram":
			if _, ok := v["p99"]; ok {
				parts = append(parts, fmt.Sprintf("%s p99 %s (%.0f)", name, fmtDuration(v["p99"]), v["count"]))
			}
		case "summary":
			if _, ok := v["mean"]; ok {
				parts = append(parts, fmt.Sprintf("%s mean %s (%.0f)", name, fmtDuration(v["mean"]), v["count"]))
			}
		case "counter":
			// Failures and leader changes say something when they are 0;
			// the rest only when they moved.
			if v["delta"] > 0 || name == "leader_changes" || name == "proposals_failed" {
				parts = append(parts, fmt.Sprintf("%s %.0f", name, v["delta"]))
			}
		case "gauge":
			if v["max"] == 0 {
				continue
			}
			val := fmt.Sprintf("%.0f", v["max"])
			if st.Unit == "bytes" {
				val = plan.FormatBytes(int64(v["max"]))
			}
			parts = append(parts, fmt.Sprintf("%s max %s", name, val))
		}
	}
	return strings.Join(parts, ", ")
}

func (s *summaryWriter) correctness(r *Results) {
	c := r.Correctness
	if c == nil {
		return
	}
	verdict := "unknown"
	if c.Linearizable != nil {
		verdict = map[bool]string{true: "yes", false: s.paint(ansiRed, "NO")}[*c.Linearizable]
	}
	lost := "not checked"
	if c.LostWrites != nil {
		lost = fmt.Sprint(*c.LostWrites)
		if *c.LostWrites > 0 {
			lost = s.paint(ansiRed, lost)
		}
	}
	s.printf("correctness: linearizable %s, lost writes %s\n", verdict, lost)
	if c.Detail != "" {
		s.printf("  %s\n", c.Detail)
	}
	if c.Visualization != "" {
		s.printf("  evidence: %s\n", c.Visualization)
	}
	s.printf("\n")
}

// registries prints each registry's own figures: what a registry's users
// ask of a store.
func (s *summaryWriter) registries(r *Results) {
	for _, g := range r.Registries {
		ops := workloadOps(r, g.Workload)
		lat := func(op string, raw bool) *Latency {
			if o := ops[op]; o != nil {
				if raw {
					return o.RawLatency
				}
				return o.Latency
			}
			return nil
		}
		s.printf("registry %s on %s: %d instances (ttl %s, heartbeat %s), %d watchers, %s watch model\n",
			g.Workload, g.Store, g.Instances, fmtDuration(g.TTLMS), fmtDuration(g.HeartbeatMS), g.Watchers, g.Watch.Model)
		s.printf("  registrations %.0f/s", g.RegistrationsPerS)
		if l := lat("keepalive", false); l != nil {
			s.printf(", keepalive p99 %s", fmtDuration(l.P99MS))
		}
		if l := lat("notify", false); l != nil {
			s.printf(", notify p50 %s p99 %s", fmtDuration(l.P50MS), fmtDuration(l.P99MS))
		}
		if l := lat("fanout", false); l != nil {
			s.printf(", fan-out p99 %s", fmtDuration(l.P99MS))
		}
		s.printf("\n")
		if g.Vanished > 0 {
			s.printf("  %d of %d vanished instances detected", g.Detected, g.Vanished)
			if l, raw := lat("detect", false), lat("detect", true); l != nil && raw != nil {
				s.printf(": p50 %s after falling silent, %s after the last heartbeat (ttl %s)", fmtDuration(l.P50MS), fmtDuration(raw.P50MS), fmtDuration(g.TTLMS))
			}
			s.printf("\n")
		}
		if g.Expired > 0 {
			s.printf("  %s\n", s.paint(ansiRed, fmt.Sprintf("%d instances expired while they heartbeat", g.Expired)))
		}
		if g.MemoryPerInstanceKiB != nil {
			s.printf("  server memory %.1f KiB per instance\n", *g.MemoryPerInstanceKiB)
		}
		verdict := fmt.Sprintf("watches kept their promises (%d events)", g.Watch.Events)
		if !g.Watch.OK {
			verdict = s.paint(ansiRed, "WATCH PROMISE BROKEN: "+g.Watch.Detail)
		}
		s.printf("  %s", verdict)
		if g.Watch.Skipped > 0 {
			s.printf("; %d registrations never listed by some watcher (allowed by the model)", g.Watch.Skipped)
		}
		if g.Watch.Returns > 0 {
			s.printf("; %d instances left the healthy list and came back", g.Watch.Returns)
		}
		s.printf("\n")
		if g.ViolationsFile != "" {
			s.printf("  evidence: %s\n", g.ViolationsFile)
		}
		s.printf("\n")
	}
}

// locks prints each lock workload's figures and its mutual-exclusion
// verdict.
func (s *summaryWriter) locks(r *Results) {
	for _, l := range r.Locks {
		ops := workloadOps(r, l.Workload)
		s.printf("lock %s on %s: %d contenders (ttl %s, hold %s), %d holds", l.Workload, l.Store, l.Contenders, fmtDuration(l.TTLMS), fmtDuration(l.HoldMS), l.Holds)
		if o := ops["handover"]; o != nil && o.Latency != nil {
			s.printf(", handover p50 %s p99 %s", fmtDuration(o.Latency.P50MS), fmtDuration(o.Latency.P99MS))
		}
		s.printf("\n")
		if o := ops["takeover"]; o != nil && o.Latency != nil {
			s.printf("  %d paused holder(s) replaced after %s (max %s)\n", o.OK, fmtDuration(o.Latency.P50MS), fmtDuration(o.Latency.MaxMS))
		}
		if l.MutexOK {
			s.printf("  mutual exclusion held: no two contenders believed they held the lock at once\n\n")
			continue
		}
		s.printf("  %s\n", s.paint(ansiRed, fmt.Sprintf("MUTUAL EXCLUSION BROKEN: %d pairs of overlapping holds; first: %s", l.Overlaps, l.Detail)))
		if l.OverlapsFile != "" {
			s.printf("  evidence: %s\n", l.OverlapsFile)
		}
		s.printf("\n")
	}
}

// keyWatches prints what each key-value workload's watchers were told:
// how soon, and whether the store kept its watch's promises.
func (s *summaryWriter) keyWatches(r *Results) {
	for _, k := range r.KeyWatches {
		ops := workloadOps(r, k.Workload)
		s.printf("watchers of %s on %s: %d, %s watch model; %d of %d writes reached every watcher", k.Workload, k.Store, k.Watchers, k.Watch.Model, k.FannedOut, k.Writes)
		if o := ops["notify"]; o != nil && o.Latency != nil && o.RawLatency != nil {
			s.printf("\n  notify p50 %s p99 %s from the write's send (p50 %s p99 %s from its acknowledgement)",
				fmtDuration(o.Latency.P50MS), fmtDuration(o.Latency.P99MS), fmtDuration(o.RawLatency.P50MS), fmtDuration(o.RawLatency.P99MS))
		}
		if o := ops["fanout"]; o != nil && o.Latency != nil {
			s.printf(", fan-out p50 %s p99 %s", fmtDuration(o.Latency.P50MS), fmtDuration(o.Latency.P99MS))
		}
		s.printf("\n")
		verdict := fmt.Sprintf("watches kept their promises (%d events)", k.Watch.Events)
		if !k.Watch.OK {
			verdict = s.paint(ansiRed, "WATCH PROMISE BROKEN: "+k.Watch.Detail)
		}
		s.printf("  %s", verdict)
		if k.Watch.Skipped > 0 {
			s.printf("; %d values never told to some watcher, a newer one was (allowed by the model)", k.Watch.Skipped)
		}
		s.printf("\n")
		if k.ViolationsFile != "" {
			s.printf("  evidence: %s\n", k.ViolationsFile)
		}
		s.printf("\n")
	}
}

// workloadOps are one workload's whole-run figures by op, from whichever
// cluster ran it.
func workloadOps(r *Results, name string) map[string]*OpStats {
	runs := []Phase{r.Run}
	for _, c := range r.Clusters {
		runs = append(runs, c.Run)
	}
	ops := map[string]*OpStats{}
	for _, p := range runs {
		for _, w := range p.Workloads {
			if w.Name == name {
				for i := range w.Ops {
					ops[w.Ops[i].Op] = &w.Ops[i]
				}
			}
		}
	}
	return ops
}

// notes prints what the run noticed that fits no table: unexpected node
// exits, an early stop, checks that could not run.
// clients prints the settings each workload's clients ran with.
func (s *summaryWriter) clients(r *Results) {
	for _, w := range sortedKeys(r.Clients) {
		s.printf("clients of %s: %s\n", w, ClientText(r.Clients[w]))
	}
}

func (s *summaryWriter) preloads(r *Results) {
	for _, p := range r.Preloads {
		s.printf("preload of %s: %d keys (%.0f MiB of keys and values) in %s, %.0f keys/s\n", p.Workload, p.Keys, float64(p.Bytes)/(1<<20), fmtDuration(p.DurationMS), p.KeysPerS)
	}
}

// ClientText is one workload's client settings on one line.
func ClientText(settings map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(settings) {
		parts = append(parts, k+" "+settings[k])
	}
	return strings.Join(parts, "; ")
}

func (s *summaryWriter) notes(r *Results) {
	keys := sortedKeys(r.Notes)
	if len(keys) == 0 {
		return
	}
	s.printf("notes:\n")
	for _, k := range keys {
		s.printf("  %s: %s\n", k, r.Notes[k])
	}
	s.printf("\n")
}

func (s *summaryWriter) checks(r *Results) {
	if len(r.Checks) == 0 {
		s.printf("no checks\n")
		return
	}
	var pass, fail, errs int
	for _, c := range r.Checks {
		switch c.Status() {
		case StatusPass:
			pass++
		case StatusFail:
			fail++
		default:
			errs++
		}
	}
	s.printf("checks: %d passed, %d failed, %d could not be evaluated\n", pass, fail, errs)
	for _, c := range r.Checks {
		var label string
		switch c.Status() {
		case StatusPass:
			label = s.paint(ansiGreen, "PASS ")
		case StatusFail:
			label = s.paint(ansiRed, "FAIL ")
		default:
			label = s.paint(ansiYellow, "ERROR")
		}
		s.printf("  %s  %s\n", label, c.Name)
		s.printf("         %s\n", c.Condition)
		for _, k := range sortedKeys(c.Observed) {
			s.printf("         %s = %s\n", k, FormatValue(c.Observed[k]))
		}
		if c.Status() == StatusFail && c.Message != "" {
			s.printf("         %s\n", c.Message)
		}
		if c.Error != "" {
			s.printf("         error: %s\n", c.Error)
		}
	}
}

// ServedText says when each target of f answered clients again after the
// fault was undone: "n4 after 1.2s, n5 never"; "" when not measured.
func ServedText(f Failover) string {
	var parts []string
	for _, s := range f.Served {
		if s.TimeToServeMS == nil {
			parts = append(parts, s.Node+" never")
		} else {
			parts = append(parts, s.Node+" after "+fmtDuration(*s.TimeToServeMS))
		}
	}
	return strings.Join(parts, ", ")
}

func failoverOutcome(f Failover) string {
	if f.AppliedMS == nil {
		if f.Error != "" {
			return "not applied: " + f.Error
		}
		return "not applied"
	}
	parts := []string{"applied at " + fmtDuration(*f.AppliedMS)}
	if f.LagMS != nil {
		parts[0] += " (lag " + fmtDuration(*f.LagMS) + ")"
	}
	switch {
	case f.TimeToLeaderMS == nil:
	case *f.TimeToLeaderMS == 0:
		// A leader was there when the fault hit and it did not take
		// that one away: nothing was elected.
		parts = append(parts, "leader kept")
	default:
		parts = append(parts, "new leader after "+fmtDuration(*f.TimeToLeaderMS))
	}
	if f.TimeToWriteMS != nil {
		parts = append(parts, "first write after "+fmtDuration(*f.TimeToWriteMS))
	} else {
		parts = append(parts, "no write after it")
	}
	if u := f.Unavailable; u != nil {
		parts = append(parts, fmt.Sprintf("no write from %s to %s (%s)", fmtDuration(u.StartMS), fmtDuration(u.EndMS), fmtDuration(u.EndMS-u.StartMS)))
	}
	if f.RecoveredMS != nil {
		parts = append(parts, "recovered at "+fmtDuration(*f.RecoveredMS))
	}
	if s := ServedText(f); s != "" {
		parts = append(parts, "answering clients again: "+s)
	}
	if d := f.Disk; d != nil {
		if d.Writes > 0 {
			parts = append(parts, fmt.Sprintf("contender wrote %d blocks, %.0f MiB, fsync p50 %s p99 %s max %s",
				d.Writes, float64(d.Bytes)/(1<<20), fmtMS(d.FsyncP50MS), fmtMS(d.FsyncP99MS), fmtMS(d.FsyncMaxMS)))
		}
		if d.ThrottleBPS > 0 {
			parts = append(parts, fmt.Sprintf("writes throttled to %s/s, %.1f MiB written through it", plan.FormatBytes(d.ThrottleBPS), float64(d.ThrottledBytes)/(1<<20)))
		}
		if d.ThrottleNote != "" {
			parts = append(parts, d.ThrottleNote)
		}
	}
	if f.Error != "" {
		parts = append(parts, "error: "+f.Error)
	}
	return strings.Join(parts, ", ")
}

func availability(st *OpStats) *float64 {
	if st.Count == 0 {
		return nil
	}
	v := float64(st.OK) / float64(st.Count)
	return &v
}

// lateStarts says how many of o's operations went out late and, past
// lateShareShort, why: waiting for a client (all were busy), or for a CPU.
func lateStarts(o *OpStats, realtime bool) string {
	late := fmt.Sprintf("late starts %d (%.2g%%)", o.LateStarts, 100*o.LateShare())
	if o.LateShare() < lateShareShort {
		return late
	}
	late += ": the load generator fell behind the declared rate"
	cpu := o.LateStarts - o.LateQueued
	if o.LateQueued > 0 {
		late += fmt.Sprintf("; %d waited for a client, every one busy with an earlier request (more clients would have sent them on time)", o.LateQueued)
		if cpu == 0 {
			return late
		}
		late += fmt.Sprintf(", %d for a CPU", cpu)
	}
	if !realtime && float64(cpu) >= lateShareShort*float64(o.Count) {
		// Even on an idle machine a woken thread can wait out another
		// task's slice (README, Known gaps: open-loop late starts).
		late += " (with a light load, run --realtime puts it ahead of other tasks)"
	}
	return late
}

// latestPair is the pair whose held packets were latest at the 99th
// percentile (of two alike, the one with more packets), among those that
// held at least 1% of the held packets (a pair with a few heartbeats has
// a p99 of its two latest); nil unless at least two pairs held packets,
// where naming one says something.
func latestPair(pairs []NetworkPair) *NetworkPair {
	var held int64
	for _, pr := range pairs {
		if pr.Late != nil {
			held += pr.Late.Packets
		}
	}
	var latest *NetworkPair
	n := 0
	for i := range pairs {
		pr := &pairs[i]
		if pr.Late == nil {
			continue
		}
		n++
		if 100*pr.Late.Packets < held {
			continue
		}
		if latest == nil || pr.Late.P99MS > latest.Late.P99MS ||
			(pr.Late.P99MS == latest.Late.P99MS && pr.Late.Packets > latest.Late.Packets) {
			latest = pr
		}
	}
	if n < 2 {
		return nil
	}
	return latest
}

// LateNetworkMS is the shaper lateness p99 from which a phase's links are
// called slower than declared (the summary, compare's warning): what the
// shaper keeps to on a quiet machine (see the README's Benchmarks), and a
// twentieth of a 20 ms RTT.
const LateNetworkMS = 1.0

// fmtMS shows a latency with three significant digits, the precision the
// histograms keep; "-" when there is no value.
func fmtMS(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v < 1:
		return fmt.Sprintf("%.3f", v)
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func fmtRatio(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", *v*100)
}

// fmtDuration renders milliseconds with three significant digits and a unit
// a reader can take in: "850 µs", "14.2 ms", "2.41 s", "2m30s".
func fmtDuration(ms float64) string {
	switch {
	case ms < 1:
		return fmt.Sprintf("%.0f µs", ms*1000)
	case ms < 1000:
		return fmtMS(ms) + " ms"
	case ms < 60000:
		return fmtMS(ms/1000) + " s"
	default:
		return time.Duration(ms * float64(time.Millisecond)).Round(time.Second).String()
	}
}

func errorClasses(by map[string]int64) string {
	var parts []string
	for _, k := range classOrder(by) {
		if by[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, by[k]))
		}
	}
	return strings.Join(parts, " ")
}

// classOrder lists the classes of by in plan.ErrorClasses order, unknown
// ones after.
func classOrder(by map[string]int64) []string {
	var out []string
	for _, c := range plan.ErrorClasses {
		if _, ok := by[c]; ok {
			out = append(out, c)
		}
	}
	for _, c := range sortedKeys(by) {
		if !slices.Contains(plan.ErrorClasses, c) {
			out = append(out, c)
		}
	}
	return out
}

// ofFrames says how many frames the shaper read, for a count of drops to
// be read against: "" when that was not counted.
func ofFrames(frames *int64) string {
	if frames == nil {
		return ""
	}
	return fmt.Sprintf(" of %d", *frames)
}
