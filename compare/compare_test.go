package compare

import (
	"slices"
	"strings"
	"testing"

	"github.com/coordlab/scenario/internal/results"
)

// TestDefaultVerdicts judges one metric at a time under the default rules,
// floors included.
func TestDefaultVerdicts(t *testing.T) {
	const notGated Verdict = "not gated"
	tests := []struct {
		name      string
		metric    string
		base, new any
		want      Verdict
	}{
		{"p99 doubled", "phase.steady.put.p99", 20.0, 40.0, Regression},
		{"p99 +3% is noise", "phase.steady.put.p99", 10.0, 10.3, OK},
		{"p99 exactly +50% passes", "phase.steady.put.p99", 12.0, 18.0, OK},
		{"p99 just over +50%", "phase.steady.put.p99", 12.0, 18.1, Regression},
		{"p99 60% faster", "phase.steady.put.p99", 20.0, 8.0, Improved},
		{"p99 under the 5 ms floor", "phase.steady.put.p99", 2.0, 6.5, OK},
		{"p50 +20% is noise", "phase.steady.put.p50", 10.0, 12.0, OK},
		{"p50 +30%", "phase.steady.put.p50", 10.0, 13.0, Regression},
		{"sub-millisecond p50 tripled: under the 2 ms floor", "phase.steady.get.p50", 0.3, 0.9, OK},
		{"sub-millisecond p50 past the floor", "phase.steady.get.p50", 0.3, 2.4, Regression},
		{"phase-wide p999 is not gated", "phase.steady.p999", 40.0, 400.0, notGated},
		{"max is not gated", "run.workload.w.put.max", 100.0, 1150.0, notGated},
		{"raw latency is not gated", "phase.steady.put.raw.p99", 10.0, 50.0, notGated},
		{"min is not gated", "phase.steady.put.min", 1.0, 5.0, notGated},
		{"count is not gated", "phase.steady.count", 1000.0, 10.0, notGated},
		{"throughput -15% is noise", "phase.steady.throughput", 1000.0, 850.0, OK},
		{"throughput -25%", "phase.steady.put.throughput", 1000.0, 750.0, Regression},
		{"throughput +25%", "phase.steady.throughput", 1000.0, 1250.0, Improved},
		{"availability -1 point", "phase.steady.availability", 1.0, 0.99, Regression},
		{"availability -0.3 points", "phase.steady.availability", 0.999, 0.996, OK},
		{"availability exactly -0.5 points", "phase.steady.availability", 0.999, 0.994, OK},
		{"availability -0.6 points", "phase.steady.availability", 0.999, 0.993, Regression},
		{"availability of a workload", "phase.steady.workload.w.availability", 1.0, 0.98, Regression},
		{"failover +37% is noise", "phase.failover.failover_time", 1000.0, 1370.0, OK},
		{"failover 2x slower", "phase.failover.failover_time", 1000.0, 2000.0, Regression},
		{"failover +80% of 300 ms is under the 250 ms floor", "phase.failover.failover_time", 300.0, 540.0, OK},
		{"failover +260 ms from 300 ms", "phase.failover.failover_time", 300.0, 560.0, Regression},
		{"failover three times as fast", "run.failover_time", 3000.0, 1000.0, Improved},
		{"leader elected +70%", "phase.failover.leader_elected", 1000.0, 1700.0, Regression},
		{"rejoin +0.8 s from 1 s is under the 1 s floor", "phase.cut.rejoin_time", 1000.0, 1800.0, OK},
		{"rejoin three times as slow", "phase.cut.rejoin_time", 1000.0, 3000.0, Regression},
		{"max gap within the floor", "phase.steady.max_gap", 20.0, 260.0, OK},
		{"max gap past the floor", "phase.steady.max_gap", 20.0, 280.0, Regression},
		{"error rate +0.4 points", "phase.steady.error_rate", 0.0, 0.004, OK},
		{"error rate +1 point", "phase.steady.put.error_rate", 0.001, 0.011, Regression},
		{"elections unchanged", "phase.failover.elections", 1.0, 1.0, OK},
		{"one more election", "phase.failover.elections", 1.0, 2.0, Regression},
		{"one election fewer", "phase.failover.elections", 2.0, 1.0, Improved},
		{"a lost write", "run.lost_writes", 0.0, 1.0, Regression},
		{"no lost writes", "run.lost_writes", 0.0, 0.0, OK},
		{"linearizable lost", "run.linearizable", true, false, Regression},
		{"linearizable gained", "run.linearizable", false, true, Improved},
		{"linearizable kept", "run.linearizable", true, true, OK},
		{"a cluster's lost write", "cluster.etcd.run.lost_writes", 0.0, 1.0, Regression},
		{"a cluster's p99 doubled", "cluster.zk.phase.steady.put.p99", 10.0, 20.0, Regression},
		{"check pass to fail", "check.writes resume", "pass", "fail", Regression},
		{"check pass to error", "check.writes resume", "pass", "error", Regression},
		{"check fail to pass", "check.writes resume", "fail", "pass", Improved},
		{"check fail to error", "check.writes resume", "fail", "error", OK},
		{"check still passing", "check.writes resume", "pass", "pass", OK},
	}
	rules := DefaultRules()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tol, rule := resolve(rules, tt.metric)
			if rule < 0 || tol.Ignore {
				if tt.want != notGated {
					t.Fatalf("%s is not gated, want %s", tt.metric, tt.want)
				}
				return
			}
			if tt.want == notGated {
				t.Fatalf("%s is gated by %s=%s", tt.metric, rules[rule].Pattern, tol)
			}
			row, err := judge(tt.metric, tt.base, tt.new, tol)
			if err != nil {
				t.Fatal(err)
			}
			if row.Verdict != tt.want {
				t.Errorf("%s %v -> %v under %s: %s, want %s", tt.metric, tt.base, tt.new, tol, row.Verdict, tt.want)
			}
		})
	}
}

// TestUserTolerances judges with tolerances as --tolerance gives them.
func TestUserTolerances(t *testing.T) {
	tests := []struct {
		name      string
		metric    string
		spec      string
		base, new float64
		want      Verdict
	}{
		{"unsigned takes the metric's bad direction: latency", "run.p99", "5%", 100, 106, Regression},
		{"unsigned takes the metric's bad direction: throughput", "run.throughput", "5%", 100, 94, Regression},
		{"unsigned on a throughput rise", "run.throughput", "5%", 100, 106, Improved},
		{"unsigned count fails either way: drop", "run.count", "10%", 100, 80, Regression},
		{"unsigned count fails either way: rise", "run.count", "10%", 100, 120, Regression},
		{"unsigned count within", "run.count", "10%", 100, 95, OK},
		{"a sign overrides the direction", "run.p99", "-10%", 100, 150, Improved},
		{"floor larger than the share", "run.p99", "+10%,5ms", 10, 14.9, OK},
		{"share larger than the floor", "run.p99", "+50%,1ms", 100, 149, OK},
		{"zero base, relative only", "run.errors", "+10%", 0, 1, Regression},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tol, err := ParseTolerance(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			row, err := judge(tt.metric, tt.base, tt.new, tol)
			if err != nil {
				t.Fatal(err)
			}
			if row.Verdict != tt.want {
				t.Errorf("%s %v -> %v under %s: %s, want %s", tt.metric, tt.base, tt.new, tt.spec, row.Verdict, tt.want)
			}
		})
	}
}

func TestJudgeChange(t *testing.T) {
	tol, _ := ParseTolerance("+10%")
	row, err := judge("run.p99", 20.0, 30.0, tol)
	if err != nil {
		t.Fatal(err)
	}
	if row.Change == nil || *row.Change != 10 || row.ChangePct == nil || *row.ChangePct != 50 {
		t.Errorf("change %v, %v; want 10 and 50%%", row.Change, row.ChangePct)
	}
	row, _ = judge("run.errors", 0.0, 3.0, tol)
	if row.ChangePct != nil {
		t.Errorf("change from 0 has a percentage: %v", *row.ChangePct)
	}
	if _, err := judge("run.p99", 20.0, true, tol); err == nil {
		t.Error("comparing a number with a bool did not fail")
	}
}

// run builds a small results file: phases steady and failover, one
// workload w doing put and get, a kill, a correctness verdict and checks.
func run() *results.Results {
	op := func(name string, p99 float64) results.OpStats {
		return results.OpStats{Op: name, Count: 1000, OK: 1000, Throughput: 200,
			ErrorsBy: map[string]int64{"timeout": 0},
			Latency:  &results.Latency{P50MS: p99 / 4, P90MS: p99 / 2, P99MS: p99, P999MS: p99 * 1.5, MaxMS: p99 * 2, MinMS: 0.5, MeanMS: p99 / 3}}
	}
	phase := func(name string) results.Phase {
		total := op("", 12)
		return results.Phase{Name: name, DurationMS: 5000, Total: total, Availability: results.Ptr(1.0), MaxGapMS: results.Ptr(20.0),
			Ops:       []results.OpStats{op("put", 12), op("get", 8)},
			Workloads: []results.WorkloadStats{{Name: "w", Total: total, Availability: results.Ptr(1.0), Ops: []results.OpStats{op("put", 12), op("get", 8)}}}}
	}
	r := &results.Results{
		SchemaVersion: results.SchemaVersion, RunID: "r1", Scenario: "scenarios/failover.hcl",
		Phases:      []results.Phase{phase("steady"), phase("failover")},
		Run:         phase("run"),
		Correctness: &results.Correctness{Linearizable: results.Ptr(true), LostWrites: results.Ptr(int64(0))},
		Checks: []results.Check{
			{Name: "writes resume", Passed: true},
			{Name: "healthy", Passed: true},
		},
		Backend: map[string]string{"store": "etcd 3.5.17"},
	}
	r.Run.Machine = &results.MachineSummary{Samples: 60, BusyMeanShare: 0.2, StealMeanShare: 0.001, WaitMeanShare: results.Ptr(0.16)}
	if err := r.AddFailover("failover", results.Failover{FaultID: "failover/kill", TimeToWriteMS: results.Ptr(1000.0), TimeToLeaderMS: results.Ptr(900.0)}); err != nil {
		panic(err)
	}
	return r
}

func verdicts(d *Diff) map[string]Verdict {
	m := make(map[string]Verdict)
	for _, r := range d.Rows {
		m[r.Metric] = r.Verdict
	}
	return m
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name         string
		change       func(*results.Results)
		base         func(*results.Results) // the base run's change, if any
		opts         Options
		want         map[string]Verdict // rows that must be there
		absent       []string           // rows that must not
		wantWarnings []string
		wantErr      string
	}{
		{
			name: "identical runs",
			want: map[string]Verdict{"phase.steady.put.p99": OK, "run.linearizable": OK, "check.healthy": OK, "phase.failover.failover_time": OK},
		},
		{
			name: "planted regressions",
			change: func(r *results.Results) {
				r.Phases[0].Ops[0].Latency.P99MS *= 2
				r.Phases[0].Availability = results.Ptr(0.99)
				r.Phases[1].FailoverTimeMS = results.Ptr(2000.0)
				r.Checks[1].Passed = false
			},
			want: map[string]Verdict{
				"phase.steady.put.p99": Regression, "phase.steady.availability": Regression,
				"phase.failover.failover_time": Regression, "check.healthy": Regression,
				"phase.steady.get.p99": OK,
			},
		},
		{
			name: "one workload: its metrics are the phase's, judged once",
			change: func(r *results.Results) {
				r.Phases[0].Workloads[0].Ops[0].Latency.P99MS *= 2
			},
			absent: []string{"phase.steady.workload.w.put.p99", "phase.steady.workload.w.availability"},
		},
		{
			name: "one workload, named by a rule",
			change: func(r *results.Results) {
				r.Phases[0].Workloads[0].Ops[0].Latency.P99MS *= 2
			},
			opts: Options{Rules: []Rule{mustRule(t, "*.workload.*.p99=+10%")}},
			want: map[string]Verdict{"phase.steady.workload.w.put.p99": Regression},
		},
		{
			name: "two workloads: each is judged",
			change: func(r *results.Results) {
				w := r.Phases[0].Workloads[0]
				w.Name = "v"
				r.Phases[0].Workloads = append(r.Phases[0].Workloads, w)
			},
			want: map[string]Verdict{"phase.steady.workload.w.put.p99": OK, "phase.steady.workload.v.put.p99": New},
		},
		{
			name: "missing and new metrics",
			change: func(r *results.Results) {
				r.Phases[1].Ops[1].Latency = nil // no get succeeded
				r.Phases = append(r.Phases, results.Phase{Name: "extra", Availability: results.Ptr(1.0)})
				r.Correctness.Linearizable = nil // the checker gave up
			},
			want: map[string]Verdict{
				"phase.failover.get.p99": Missing, "run.linearizable": Missing,
				"phase.extra.availability": New,
			},
		},
		{
			name: "a later rule wins over the defaults",
			change: func(r *results.Results) {
				r.Phases[0].Ops[0].Latency.P99MS *= 1.5
				r.Phases[1].Ops[0].Latency.P99MS *= 1.5
			},
			opts:   Options{Rules: []Rule{mustRule(t, "*.p99=ignore"), mustRule(t, "phase.steady.put.p99=+60%")}},
			want:   map[string]Verdict{"phase.steady.put.p99": OK},
			absent: []string{"phase.failover.put.p99", "run.p99"},
		},
		{
			name:   "only",
			change: func(r *results.Results) { r.Phases[1].FailoverTimeMS = results.Ptr(2000.0) },
			opts:   Options{Only: []string{"phase.steady.*"}},
			want:   map[string]Verdict{"phase.steady.put.p99": OK},
			absent: []string{"phase.failover.failover_time", "run.p99", "check.healthy"},
		},
		{
			name:    "only, matching nothing",
			opts:    Options{Only: []string{"phase.stedy.*"}},
			wantErr: `--only "phase.stedy.*" matches no metric`,
		},
		{
			name:         "a tolerance matching nothing",
			opts:         Options{Rules: []Rule{mustRule(t, "phase.stedy.*=ignore")}},
			wantWarnings: []string{"--tolerance phase.stedy.*=ignore matches no metric"},
		},
		{
			name:    "another scenario is refused",
			change:  func(r *results.Results) { r.Scenario = "scenarios/partition.hcl" },
			wantErr: "pass --allow-different-scenarios if this is intended",
		},
		{
			name:    "a sign against the bad direction is refused",
			opts:    Options{Rules: []Rule{mustRule(t, "*.p99=-10%")}},
			wantErr: "gets worse when it rises, but -10% allows it to move the other way. A tolerance says how much worse a metric may get: write *.p99=+10%",
		},
		{
			name:    "a rise allowed for throughput is refused",
			opts:    Options{Rules: []Rule{mustRule(t, "phase.*.throughput=+5%")}},
			wantErr: "gets worse when it drops",
		},
		{
			name: "another scenario on another store, when intended",
			opts: Options{AllowDifferentScenarios: true},
			change: func(r *results.Results) {
				r.Scenario = "scenarios/partition.hcl"
				r.Backend["store"] = "zookeeper 3.8.0"
				r.Point = []results.SweepValue{{Variable: "election", Value: `"2s"`}}
			},
			wantWarnings: []string{
				"different scenarios: base ran failover.hcl, new ran partition.hcl",
				"different stores: base ran etcd 3.5.17, new ran zookeeper 3.8.0",
				`different sweep points: base ran (none), new ran election="2s"`,
			},
		},
		{
			name: "a busier machine is named, a similar one is not",
			change: func(r *results.Results) {
				r.Run.Machine = &results.MachineSummary{Samples: 60, StealMeanShare: 0.031, WaitMeanShare: results.Ptr(0.24)}
			},
			wantWarnings: []string{
				"the new run's machine was busier: steal (the CPUs' time the hypervisor withheld) 0.1% in base, 3.1% in new (run.steal_share)",
			},
		},
		{
			name: "a quieter machine is named too",
			change: func(r *results.Results) {
				r.Run.Machine = &results.MachineSummary{Samples: 60, StealMeanShare: 0.001, WaitMeanShare: results.Ptr(0.02)}
			},
			wantWarnings: []string{
				"the base run's machine was busier: CPU wait (the time a runnable task waited for a CPU) 16% in base, 2% in new (run.cpu_wait_share)",
			},
		},
		{
			name:   "undeclared network drops in one run are named",
			change: func(r *results.Results) { r.Run.NetworkDrops = results.Ptr(int64(328)) },
			wantWarnings: []string{
				"the new run's network lost more frames that no link declared: 0 in base, 328 in new (run.network_drops); the shaper fell behind, and latency and throughput changes may be its doing, not the store's",
			},
		},
		{
			name: "undeclared network drops are named against the frames carried",
			change: func(r *results.Results) {
				r.Run.NetworkDrops, r.Run.NetworkFrames = results.Ptr(int64(552)), results.Ptr(int64(278436))
			},
			base: func(r *results.Results) { r.Run.NetworkFrames = results.Ptr(int64(270120)) },
			wantWarnings: []string{
				"the new run's network lost more frames that no link declared: 0 of 270120 in base, 552 of 278436 in new (run.network_drops of run.network_frames); the shaper fell behind, and latency and throughput changes may be its doing, not the store's",
			},
		},
		{
			name: "a markedly later shaper is named",
			change: func(r *results.Results) {
				r.Run.NetworkLate = &results.NetworkLate{Packets: 9000, P50MS: 0.2, P99MS: 4.6, MaxMS: 18}
			},
			base: func(r *results.Results) {
				r.Run.NetworkLate = &results.NetworkLate{Packets: 9100, P50MS: 0.06, P99MS: 0.35, MaxMS: 2}
			},
			wantWarnings: []string{
				"the new run's shaper was later: run.network_late_p99_ms 0.35 ms in base, 4.6 ms in new; its links were slower than declared by about that much, and latency changes may be its doing, not the store's",
			},
		},
		{
			name: "shaper lateness under a millisecond is not named",
			change: func(r *results.Results) {
				r.Run.NetworkLate = &results.NetworkLate{Packets: 9000, P50MS: 0.2, P99MS: 0.9, MaxMS: 18}
			},
			base: func(r *results.Results) {
				r.Run.NetworkLate = &results.NetworkLate{Packets: 9100, P50MS: 0.06, P99MS: 0.1, MaxMS: 2}
			},
		},
		{
			name: "shaper lateness in one run only is not named",
			change: func(r *results.Results) {
				r.Run.NetworkLate = &results.NetworkLate{Packets: 9000, P50MS: 0.2, P99MS: 4.6, MaxMS: 18}
			},
		},
		{
			name: "runs with different runner settings are named",
			change: func(r *results.Results) {
				r.Backend["poll_idle"] = "every CPU's wake-up latency held at 0"
				r.Backend["busy_poll"] = "200µs"
			},
			base: func(r *results.Results) { r.Backend["busy_poll"] = "100µs" },
			wantWarnings: []string{
				"different runner settings: base ran with --busy-poll 100µs, new ran with --busy-poll 200µs; the stores' latency",
				"different runner settings: base ran without --poll-idle, new ran with --poll-idle;",
			},
		},
		{
			name: "a run that does not say how it walked sequential keys is named",
			change: func(r *results.Results) {
				r.Backend[results.BackendSequentialKeys] = results.SequentialKeysShared
			},
			wantWarnings: []string{
				"different key orders: new walked its sequential keys as one walk of the keyspace shared by the workload's workers, and base's results do not say how it walked them; a run before 2026-12-07 walked a lap per worker",
			},
		},
		{
			name:   "the same key order is not named",
			change: func(r *results.Results) { r.Backend[results.BackendSequentialKeys] = results.SequentialKeysShared },
			base:   func(r *results.Results) { r.Backend[results.BackendSequentialKeys] = results.SequentialKeysShared },
		},
		{
			name:   "the same runner settings are not named",
			change: func(r *results.Results) { r.Backend["realtime"] = "SCHED_FIFO 1" },
			base:   func(r *results.Results) { r.Backend["realtime"] = "SCHED_FIFO 1" },
		},
		{
			name:   "the same scenario run from another directory",
			change: func(r *results.Results) { r.Scenario = "/src/repo/scenarios/failover.hcl" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, next := run(), run()
			if tt.change != nil {
				tt.change(next)
			}
			if tt.base != nil {
				tt.base(base)
			}
			d, err := Compare(base, next, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := verdicts(d)
			for metric, want := range tt.want {
				if got[metric] != want {
					t.Errorf("%s: %q, want %q", metric, got[metric], want)
				}
			}
			for _, metric := range tt.absent {
				if v, ok := got[metric]; ok {
					t.Errorf("%s is in the diff (%s)", metric, v)
				}
			}
			if !slices.EqualFunc(d.Warnings, tt.wantWarnings, strings.HasPrefix) {
				t.Errorf("warnings %q, want %q", d.Warnings, tt.wantWarnings)
			}
			if tt.change == nil && len(tt.opts.Rules) == 0 && d.Count(OK) != len(d.Rows) {
				t.Errorf("identical runs: %d of %d rows ok", d.Count(OK), len(d.Rows))
			}
		})
	}
}

// TestRowOrder: regressions first, then improvements, then the rest; in
// timeline order within each, the whole run and the checks last.
func TestRowOrder(t *testing.T) {
	base, next := run(), run()
	next.Phases[1].Ops[0].Latency.P99MS *= 2 // failover regresses
	next.Phases[0].Ops[0].Latency.P99MS /= 4 // steady improves
	next.Checks[0].Passed = false
	d, err := Compare(base, next, Options{Only: []string{"*.put.p99", "check.*"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range d.Rows {
		got = append(got, string(r.Verdict)+" "+r.Metric)
	}
	want := []string{
		"regression phase.failover.put.p99",
		"regression check.writes resume",
		"improved phase.steady.put.p99",
		"ok run.put.p99",
		"ok check.healthy",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func mustRule(t *testing.T, s string) Rule {
	t.Helper()
	r, err := ParseRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
