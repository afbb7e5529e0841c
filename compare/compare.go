// Package compare diffs two runs' results.json metric by metric against
// tolerances, so that a CI job can fail when a change makes a store slower,
// less available or slower to recover than a committed baseline.
//
// It reads the same metric paths checks read (results.Results.Metrics),
// plus one path per check, "check.<name>", whose value is the check's
// status. Only metrics present in both runs are judged; the rest are listed
// as missing from the new run or only in it.
package compare

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// Verdict is what a comparison concluded about one metric.
type Verdict string

const (
	// OK: the metric moved no further than its tolerance.
	OK Verdict = "ok"
	// Regression: the metric moved beyond its tolerance in its bad
	// direction, a boolean verdict went from true to false, or a check
	// went from passing to not passing.
	Regression Verdict = "regression"
	// Improved: the metric moved beyond its tolerance in its good
	// direction.
	Improved Verdict = "improved"
	// New: the metric is only in the new run.
	New Verdict = "new"
	// Missing: the metric is only in the base run.
	Missing Verdict = "missing"
)

// checkPrefix starts the path of each check's status.
const checkPrefix = results.CheckPrefix

// Row is one metric of the comparison.
type Row struct {
	// Metric is the metric's path.
	Metric string `json:"metric"`
	// Base and New are the values: a float64, a bool, or for a check its
	// status ("pass", "fail", "error"); nil on the side that lacks it.
	Base any `json:"base"`
	New  any `json:"new"`
	// Change is New - Base, for numbers.
	Change *float64 `json:"change,omitempty"`
	// ChangePct is Change as a percentage of Base; nil when Base is 0.
	ChangePct *float64 `json:"change_pct,omitempty"`
	// Tolerance is the tolerance the metric was judged by, as written.
	Tolerance string `json:"tolerance"`
	// Verdict is what the comparison concluded.
	Verdict Verdict `json:"verdict"`
	// Stats is set when either side has repetitions: Base and New are
	// then the medians (for booleans: true in every repetition; for
	// checks: passing in every one), Change is the median change.
	Stats *RowStats `json:"stats,omitempty"`
}

// RowStats is what a comparison of repeated runs adds to a row.
type RowStats struct {
	// BaseN and NewN count the repetitions that measured the metric.
	BaseN int `json:"base_n"`
	NewN  int `json:"new_n"`
	// BaseValues and NewValues are their values, in the order they ran.
	BaseValues []any `json:"base_values"`
	NewValues  []any `json:"new_values"`
	// Test is the test of difference, for numbers.
	Test *ShiftTest `json:"test,omitempty"`
}

// Run names one side of the comparison.
type Run struct {
	// File is where the results were read from; the caller sets it.
	File     string `json:"file,omitempty"`
	RunID    string `json:"run_id"`
	Scenario string `json:"scenario"`
	Store    string `json:"store,omitempty"`
	Point    string `json:"point,omitempty"`
	// Repetitions is how many runs an aggregate results.json holds (RunID
	// is the first's); 0 for a single run.
	Repetitions int `json:"repetitions,omitempty"`
}

// Diff is the outcome of Compare.
type Diff struct {
	Base Run `json:"base"`
	New  Run `json:"new"`
	// Warnings says what makes the comparison doubtful: different
	// scenarios or stores, tolerance patterns that matched nothing.
	Warnings []string `json:"warnings"`
	// Rows holds every gated metric: regressions first, then
	// improvements, metrics within tolerance, metrics missing from the new
	// run and metrics only in it; in timeline order within each.
	Rows []Row `json:"rows"`
	// Ungated counts the metrics in both runs that no tolerance gates.
	Ungated int `json:"ungated"`
	// Alpha is the significance level when either side has repetitions.
	Alpha float64 `json:"alpha,omitempty"`
}

// Options adjusts a comparison.
type Options struct {
	// Rules are applied after DefaultRules; the last matching rule wins.
	Rules []Rule
	// Only, when not empty, restricts the comparison to metrics matching
	// one of these globs (see Match).
	Only []string
	// AllowDifferentScenarios compares runs of different scenario files;
	// without it Compare refuses them, since their metrics need not mean
	// the same.
	AllowDifferentScenarios bool
	// Alpha is the significance level of comparisons of repeated runs
	// (DefaultAlpha when 0).
	Alpha float64
}

// Count returns how many rows have verdict v.
func (d *Diff) Count(v Verdict) int {
	n := 0
	for _, r := range d.Rows {
		if r.Verdict == v {
			n++
		}
	}
	return n
}

// Compare judges next against base. It fails on what would make the
// verdict meaningless: an Only pattern that matches no metric of either
// run (a typo would make a gate that always passes), a tolerance whose
// sign contradicts a metric's bad direction (it would call a regression an
// improvement), and runs of different scenario files unless
// opts.AllowDifferentScenarios.
func Compare(base, next *results.Results, opts Options) (*Diff, error) {
	return CompareSides(FromResults(base), FromResults(next), opts)
}

// CompareSides judges next against base, either of which may hold
// repetitions. With one run a side it is Compare. Otherwise each numeric
// metric is judged on its medians, and a change beyond the tolerance
// regresses (or improves) only when the Mann-Whitney test finds it
// significant at opts.Alpha (see ShiftTest). Where the sides hold too few
// repetitions for any p-value to reach alpha, the metric is judged by its
// tolerance on the medians alone, and a warning says so. A boolean
// metric or a check counts as good on a side when it is good in every
// repetition.
func CompareSides(base, next *Side, opts Options) (*Diff, error) {
	if b, n, same := sameScenario(base, next); !same && !opts.AllowDifferentScenarios {
		return nil, fmt.Errorf("base ran scenario %s and new ran %s: their metrics need not mean the same; compare runs of one scenario, or pass --allow-different-scenarios if this is intended", orNone(b), orNone(n))
	}
	alpha := cmp.Or(opts.Alpha, DefaultAlpha)
	if alpha <= 0 || alpha >= 1 {
		return nil, fmt.Errorf("alpha %v: want a significance level between 0 and 1, such as 0.05", alpha)
	}
	repeated := base.Repetitions() > 1 || next.Repetitions() > 1
	union := make(map[string]bool, len(base.values))
	for p := range base.values {
		if len(base.present(p)) > 0 {
			union[p] = true
		}
	}
	for p := range next.values {
		if len(next.present(p)) > 0 {
			union[p] = true
		}
	}
	for _, pat := range opts.Only {
		if !matchesAny(pat, union) {
			return nil, fmt.Errorf("--only %q matches no metric of either run", pat)
		}
	}
	if err := checkSigns(opts.Rules, union); err != nil {
		return nil, err
	}
	d := &Diff{Base: base.run, New: next.run, Warnings: mismatches(base, next), Rows: []Row{}}
	if repeated {
		d.Alpha = alpha
	}
	for _, r := range opts.Rules {
		if !matchesAny(r.Pattern, union) {
			d.Warnings = append(d.Warnings, fmt.Sprintf("--tolerance %s=%s matches no metric of either run", r.Pattern, r.Tolerance))
		}
	}
	defaults := DefaultRules()
	rules := append(defaults, opts.Rules...)
	// A workload alone in its scope in one run only is not a duplicate:
	// in the other, the scope's numbers include other workloads.
	dups := slices.DeleteFunc(slices.Clone(base.sole), func(prefix string) bool {
		return !slices.Contains(next.sole, prefix)
	})
	untestable := 0
	for p := range union {
		if len(opts.Only) > 0 && !slices.ContainsFunc(opts.Only, func(pat string) bool { return Match(pat, p) }) {
			continue
		}
		bs, ns := base.present(p), next.present(p)
		inBase, inNew := len(bs) > 0, len(ns) > 0
		b, n := summary(bs), summary(ns)
		tol, rule := resolve(rules, p)
		dup := slices.ContainsFunc(dups, func(prefix string) bool { return strings.HasPrefix(p, prefix) })
		if rule < 0 || tol.Ignore || (dup && rule < len(defaults)) {
			if inBase && inNew {
				d.Ungated++
			}
			continue
		}
		row := Row{Metric: p, Base: b, New: n, Tolerance: tolText(tol, b, n)}
		switch {
		case !inNew:
			row.Verdict = Missing
		case !inBase:
			row.Verdict = New
		case !repeated:
			var err error
			if row, err = judge(p, b, n, tol); err != nil {
				d.Warnings = append(d.Warnings, err.Error())
				continue
			}
		default:
			var err error
			if row, err = judgeRepeated(p, bs, ns, tol, alpha); err != nil {
				d.Warnings = append(d.Warnings, err.Error())
				continue
			}
			if t := row.Stats.Test; t != nil && !t.Testable {
				untestable++
			}
		}
		if repeated && row.Stats == nil {
			row.Stats = &RowStats{BaseN: len(bs), NewN: len(ns), BaseValues: orEmpty(bs), NewValues: orEmpty(ns)}
		}
		d.Rows = append(d.Rows, row)
	}
	if untestable > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%d metric(s) have too few repetitions for any change to be significant at alpha %g (%d in BASE, %d in NEW: the smallest p-value is %.3g; 5 a side reach %.4f): they are judged by their tolerance on the medians alone, as single runs are",
			untestable, alpha, base.Repetitions(), next.Repetitions(), MinP(base.Repetitions(), next.Repetitions()), MinP(5, 5)))
	}
	order := scopeOrder(base.phases, next.phases)
	slices.SortFunc(d.Rows, func(x, y Row) int {
		if c := verdictRank(x.Verdict) - verdictRank(y.Verdict); c != 0 {
			return c
		}
		if c := order(x.Metric) - order(y.Metric); c != 0 {
			return c
		}
		return strings.Compare(x.Metric, y.Metric)
	})
	return d, nil
}

// values flattens a run into metric paths and adds each check's status.
func values(r *results.Results) map[string]any {
	m := r.Metrics()
	for _, c := range r.Checks {
		m[checkPrefix+c.Name] = c.Status()
	}
	return m
}

// soleWorkloads lists the per-workload prefixes ("phase.steady.workload.w.")
// of the scopes that have a single workload. Those metrics equal the
// scope's own, so the default rules leave them out (when both runs agree)
// and every change is reported once; a --tolerance rule that names them
// still gates them.
func soleWorkloads(r *results.Results) []string {
	var out []string
	add := func(scope string, p *results.Phase) {
		if len(p.Workloads) == 1 {
			out = append(out, scope+".workload."+p.Workloads[0].Name+".")
		}
	}
	add("run", &r.Run)
	for i := range r.Phases {
		add("phase."+r.Phases[i].Name, &r.Phases[i])
	}
	return out
}

func matchesAny(pattern string, paths map[string]bool) bool {
	for p := range paths {
		if Match(pattern, p) {
			return true
		}
	}
	return false
}

// slack lets a change of exactly the allowance pass despite rounding: 10%
// of 12.3 ms is not exactly representable.
const slack = 1e-9

// judge compares one metric present in both runs.
func judge(metric string, b, n any, tol Tolerance) (Row, error) {
	row := Row{Metric: metric, Base: b, New: n, Tolerance: tolText(tol, b, n), Verdict: OK}
	switch bv := b.(type) {
	case float64:
		nv, ok := n.(float64)
		if !ok {
			break
		}
		delta := nv - bv
		row.Change = results.Ptr(round9(delta))
		if bv != 0 {
			row.ChangePct = results.Ptr(round9(delta / math.Abs(bv) * 100))
		}
		row.Verdict = tolVerdict(metric, bv, delta, tol)
		return row, nil
	case bool:
		nv, ok := n.(bool)
		if !ok {
			break
		}
		// true is the good value of every boolean metric (linearizable).
		row.Verdict = boolVerdict(bv, nv)
		return row, nil
	case string:
		nv, ok := n.(string)
		if !ok {
			break
		}
		row.Verdict = boolVerdict(bv == results.StatusPass, nv == results.StatusPass)
		return row, nil
	}
	return Row{}, fmt.Errorf("%s: cannot compare %v (%T) with %v (%T)", metric, b, b, n, n)
}

// tolVerdict judges a numeric change delta from base against tol.
func tolVerdict(metric string, base, delta float64, tol Tolerance) Verdict {
	allowed := tol.allowance(base)
	exceeds := func(v float64) bool { return v > allowed*(1+slack)+slack }
	switch dir := direction(tol, metric); {
	case dir == 0 && exceeds(math.Abs(delta)):
		return Regression
	case dir != 0 && exceeds(float64(dir)*delta):
		return Regression
	case dir != 0 && exceeds(-float64(dir)*delta):
		return Improved
	}
	return OK
}

// round9 drops the float noise of a subtraction (1 - 0.99 is
// 0.010000000000000009) from what --json shows. Results carry far fewer
// digits than nine decimals.
func round9(v float64) float64 { return math.Round(v*1e9) / 1e9 }

func boolVerdict(base, next bool) Verdict {
	switch {
	case base && !next:
		return Regression
	case !base && next:
		return Improved
	}
	return OK
}

// direction is the way metric gets worse under tol: +1 when it rises, -1
// when it drops, 0 either way. A signed tolerance says it; otherwise the
// metric's own.
func direction(tol Tolerance, metric string) int {
	if tol.Sign != 0 {
		return tol.Sign
	}
	return worseDirection(metric)
}

// checkSigns refuses a rule whose sign says a metric gets worse the way
// it gets better: '*.p99=-10%' would report a tripled p99 as improved.
func checkSigns(rules []Rule, metrics map[string]bool) error {
	names := slices.Sorted(maps.Keys(metrics))
	for _, r := range rules {
		if r.Tolerance.Sign == 0 {
			continue
		}
		for _, m := range names {
			want := worseDirection(m)
			if want == 0 || want == r.Tolerance.Sign || !Match(r.Pattern, m) {
				continue
			}
			amount := strings.TrimLeft(r.Tolerance.spec, "+-")
			worse, sign := "rises", "+"
			if want < 0 {
				worse, sign = "drops", "-"
			}
			return fmt.Errorf("--tolerance %s=%s: %s gets worse when it %s, but %s allows it to move the other way. A tolerance says how much worse a metric may get: write %s=%s%s, or %s without a sign",
				r.Pattern, r.Tolerance, m, worse, r.Tolerance, r.Pattern, sign, amount, amount)
		}
	}
	return nil
}

// worseDirection is the way a metric gets worse. Almost every metric is
// worse when it rises (latencies, errors, gaps, recovery times, elections,
// lost writes); throughput and availability are worse when they drop. The
// count of attempted operations has no good direction: open loop fixes it
// by schedule, closed loop ties it to latency.
func worseDirection(metric string) int {
	switch metric[strings.LastIndex(metric, ".")+1:] {
	case plan.StatThroughput, plan.MetricAvailability, plan.MetricTimeAvail:
		return -1
	case plan.StatCount:
		return 0
	}
	return 1
}

// tolText shows the tolerance a row was judged by; a boolean or a check
// has no amount, only a good value.
func tolText(tol Tolerance, b, n any) string {
	v := b
	if v == nil {
		v = n
	}
	switch v.(type) {
	case bool:
		return "stays true"
	case string:
		return "stays passing"
	}
	return tol.String()
}

func verdictRank(v Verdict) int {
	return slices.Index([]Verdict{Regression, Improved, OK, Missing, New}, v)
}

// scopeOrder ranks a metric by where it sits in the timeline: the phases in
// order (base's, then any only in the new run), then the whole run, then
// the checks.
func scopeOrder(base, next []string) func(metric string) int {
	var phases []string
	for _, name := range slices.Concat(base, next) {
		if !slices.Contains(phases, name) {
			phases = append(phases, name)
		}
	}
	return func(metric string) int {
		switch {
		case strings.HasPrefix(metric, checkPrefix):
			return len(phases) + 1
		case strings.HasPrefix(metric, "run."):
			return len(phases)
		}
		// The longest matching name wins, should one phase's name be a
		// prefix of another's with a dot ("a" and "a.b").
		best, bestLen := len(phases), -1
		for i, name := range phases {
			if strings.HasPrefix(metric, "phase."+name+".") && len(name) > bestLen {
				best, bestLen = i, len(name)
			}
		}
		return best
	}
}

func identify(r *results.Results) Run {
	return Run{RunID: r.RunID, Scenario: r.Scenario, Store: r.Backend["store"], Point: pointText(r.Point)}
}

func pointText(point []results.SweepValue) string {
	parts := make([]string, len(point))
	for i, p := range point {
		parts[i] = p.Variable + "=" + p.Value
	}
	return strings.Join(parts, " ")
}

// mismatches warns when the runs are not two runs of the same thing. The
// scenario is compared by file name only: the baseline may have been run
// from another directory.
func mismatches(base, next *Side) []string {
	w := []string{} // [], not null, in --json
	if b, n, same := sameScenario(base, next); !same {
		// Compare refuses this unless told it is intended.
		w = append(w, fmt.Sprintf("different scenarios: base ran %s, new ran %s", b, n))
	}
	if b, n := base.run.Store, next.run.Store; b != n {
		w = append(w, fmt.Sprintf("different stores: base ran %s, new ran %s", orNone(b), orNone(n)))
	}
	if b, n := base.run.Point, next.run.Point; b != n {
		w = append(w, fmt.Sprintf("different sweep points: base ran %s, new ran %s", orNone(b), orNone(n)))
	}
	w = append(w, settingWarnings(base, next)...)
	if k := keyOrderWarning(base, next); k != "" {
		w = append(w, k)
	}
	w = append(w, machineWarnings(base, next)...)
	return append(w, networkWarnings(base, next)...)
}

// runnerSettings are the backend entries that say how the runner itself
// ran, by the flag of scenario run that sets each. They change what the
// stores are measured under, not only the runner: --poll-idle took 17-32%
// off etcd's put p50 on loopback on one machine.
var runnerSettings = []struct{ key, flag string }{
	{"realtime", "--realtime"},
	{"busy_poll", "--busy-poll"},
	{"poll_idle", "--poll-idle"},
}

// settingWarnings warns when the runs differ in a runner setting.
func settingWarnings(base, next *Side) []string {
	var w []string
	with := func(s *Side, key, flag string) string {
		switch v, ok := s.backend[key]; {
		case !ok:
			return "without " + flag
		case key == "busy_poll":
			return "with " + flag + " " + v
		default:
			return "with " + flag
		}
	}
	for _, s := range runnerSettings {
		if b, n := with(base, s.key, s.flag), with(next, s.key, s.flag); b != n {
			w = append(w, fmt.Sprintf("different runner settings: base ran %s, new ran %s; the stores' latency and the load's timing move with it, so a change may be the setting's doing", b, n))
		}
	}
	return w
}

// keyOrderWarning warns when one run says how its sequential keys were
// walked and the other does not: results written before 2026-12-07 walked
// a lap per worker from spread-out starts, and that order cost etcd 4-6%
// more CPU a put at 1000 clients (BenchmarkEtcdPut). "" when both say
// the same.
func keyOrderWarning(base, next *Side) string {
	b, n := base.backend[results.BackendSequentialKeys], next.backend[results.BackendSequentialKeys]
	if b == n {
		return ""
	}
	if b != "" && n != "" {
		return fmt.Sprintf("different key orders: base walked its sequential keys as %s, new as %s; the stores' work a request moves with the order, so a change may be its doing", b, n)
	}
	said, unsaid, how := "new", "base", n
	if b != "" {
		said, unsaid, how = "base", "new", b
	}
	return fmt.Sprintf("different key orders: %s walked its sequential keys as %s, and %s's results do not say how it walked them; a run before 2026-12-07 walked a lap per worker from spread-out starts, which cost etcd 4-6%% more CPU a put at 1000 clients, so a change may be the order's doing",
		said, how, unsaid)
}

// networkWarnings warns when a run's network fabric lost frames that no
// link declared (run.network_drops) and the other's lost fewer: each was a
// retransmission, so a change in latency or throughput may be the
// shaper's doing. So may one where a run's shaper was markedly later
// (lateShaperWarning).
func networkWarnings(base, next *Side) []string {
	var w []string
	if late := lateShaperWarning(base, next); late != "" {
		w = append(w, late)
	}
	// A run without a shaper counts none.
	path, b, n, _, _ := runFigures(base, next, plan.MetricNetworkDrops)
	if b == n {
		return w
	}
	// Against the frames each run's shaper carried, where both counted
	// them: a run that carried more frames may lose more.
	inB, inN := fmt.Sprintf("%.0f", b), fmt.Sprintf("%.0f", n)
	if fpath, fb, fn, okB, okN := runFigures(base, next, plan.MetricNetworkFrames); okB && okN {
		inB, inN = fmt.Sprintf("%.0f of %.0f", b, fb), fmt.Sprintf("%.0f of %.0f", n, fn)
		path += " of " + fpath
	}
	return append(w, fmt.Sprintf("the %s run's network lost more frames that no link declared: %s in base, %s in new (%s); the shaper fell behind, and latency and throughput changes may be its doing, not the store's",
		larger(b, n), inB, inN, path))
}

// lateShaperWarning warns when one run's shaper handed packets on
// markedly later than the other's (run.network_late_p99_ms at least a
// millisecond and twice the other's): its links were slower than declared
// by that much. "" otherwise, and where a run had no shaper.
func lateShaperWarning(base, next *Side) string {
	path, b, n, okB, okN := runFigures(base, next, plan.MetricNetworkLateP99)
	if !okB || !okN || max(b, n) < results.LateNetworkMS || max(b, n) < 2*min(b, n) {
		return ""
	}
	return fmt.Sprintf("the %s run's shaper was later: %s %.3g ms in base, %.3g ms in new; its links were slower than declared by about that much, and latency changes may be its doing, not the store's",
		larger(b, n), path, b, n)
}

// runFigures reads run.<metric> of each side (the median over a side's
// repetitions), and whether each has it.
func runFigures(base, next *Side, metric string) (path string, b, n float64, okB, okN bool) {
	path = "run." + metric
	b, okB = summary(base.present(path)).(float64)
	n, okN = summary(next.present(path)).(float64)
	return path, b, n, okB, okN
}

// larger names the side whose figure is the larger.
func larger(b, n float64) string {
	if b > n {
		return "base"
	}
	return "new"
}

// machineWarnings warns when one run's machine was markedly busier than
// the other's over the timeline (run.cpu_wait_share, run.steal_share): a
// change in latency or late starts may then be the machine's doing, not
// the store's.
func machineWarnings(base, next *Side) []string {
	// How far apart the machines may be before it is said: CPU wait moved
	// between 15 and 18% over quiet one-minute runs of one machine, steal
	// stayed under 0.2%.
	busier := []struct {
		metric string
		label  string
		margin float64
	}{
		{plan.MetricCPUWait, "CPU wait (the time a runnable task waited for a CPU)", 0.10},
		{plan.MetricStealShare, "steal (the CPUs' time the hypervisor withheld)", 0.01},
	}
	var w []string
	for _, m := range busier {
		path, b, n, okB, okN := runFigures(base, next, m.metric)
		if !okB || !okN || math.Abs(n-b) < m.margin {
			continue
		}
		w = append(w, fmt.Sprintf("the %s run's machine was busier: %s %.3g%% in base, %.3g%% in new (%s); latency and late-start changes may be the machine's doing, not the store's",
			larger(b, n), m.label, 100*b, 100*n, path))
	}
	return w
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
