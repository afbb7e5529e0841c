package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
)

func f64(v float64) *float64 { return &v }

// sample is results. sample run (a steady phase, a failover phase
// with a kill and a disk fault, a correctness verdict and checks, one
// failed) with what a chart needs besides: per-second series with an
// outage, leader changes and node samples with a restart.
func sample() *results.Results {
	r := &results.Results{
		SchemaVersion: results.SchemaVersion,
		RunID:         "20261123T101500Z-abc123",
		Scenario:      "sample",
		ScenarioFile:  "examples/sample.hcl",
		Description:   "a sample run with every section filled",
		Started:       time.Date(2026, 11, 23, 10, 15, 0, 0, time.UTC),
		Finished:      time.Date(2026, 11, 23, 10, 15, 10, 200_000_000, time.UTC),
		DurationMS:    10000,
		Backend:       map[string]string{"store": "etcd 3.5.17", "provider": "process", "network": "loopback"},
		Phases: []results.Phase{
			{Name: "steady", DurationMS: 5000, Availability: f64(1), Total: results.OpStats{Count: 100, OK: 100, Throughput: 20},
				Server: map[string]results.ServerStat{
					"fsync":          {Kind: "histogram", Unit: "ms", Values: map[string]float64{"p50": 1.2, "p90": 2, "p99": 4.5, "mean": 1.4, "count": 120}},
					"leader_changes": {Kind: "counter", Unit: "count", Values: map[string]float64{"delta": 0, "per_s": 0}},
				},
				Ops:       []results.OpStats{{Op: "put", Count: 50, OK: 50, Latency: &results.Latency{P50MS: 2, P90MS: 3, P99MS: 5, P999MS: 6, MaxMS: 6, MinMS: 1}}},
				Workloads: []results.WorkloadStats{{Name: "kv", Ops: []results.OpStats{{Op: "put", Count: 50, OK: 50, Latency: &results.Latency{P50MS: 2, P90MS: 3, P99MS: 5, P999MS: 6, MaxMS: 6, MinMS: 1}}}}}},
			{Name: "failover", StartMS: 5000, DurationMS: 5000, Availability: f64(0.98), Elections: 1, NoLeaderMS: 1200, MaxGapMS: f64(1520),
				Total:     results.OpStats{Count: 100, OK: 98, Errors: 2, ErrorsBy: map[string]int64{"unavailable": 2}},
				Ops:       []results.OpStats{{Op: "put", Count: 50, OK: 48, Errors: 2, Latency: &results.Latency{P50MS: 2.5, P90MS: 4, P99MS: 900, P999MS: 1400, MaxMS: 1500, MinMS: 1}}},
				Workloads: []results.WorkloadStats{{Name: "kv", Ops: []results.OpStats{{Op: "put", Count: 50, OK: 48, Errors: 2, Latency: &results.Latency{P50MS: 2.5, P90MS: 4, P99MS: 900, P999MS: 1400, MaxMS: 1500, MinMS: 1}}}}}},
		},
		Correctness: &results.Correctness{Linearizable: new(false), LostWrites: new(int64(1)), Operations: 10,
			Visualization: "linearizability.html", Detail: "10 operations on 2 keys are not linearizable."},
		Registries: []results.Registry{{Workload: "svc", Store: "etcd", Instances: 100, Watchers: 10, TTLMS: 10000, HeartbeatMS: 3000,
			RegistrationsPerS: 295, Vanished: 10, Detected: 10, Watch: results.WatchVerdict{Model: "events", Events: 2,
				Violations: 1, Detail: "1 broken promise(s); first: watcher 1, missed"}, ViolationsFile: "watch-violations-svc.json"}},
		Locks: []results.Lock{{Workload: "locks", Store: "etcd", Contenders: 3, TTLMS: 2000, HoldMS: 200, Holds: 50, Paused: 1,
			Overlaps: 2, Detail: "contender 1 held the lock"}},
		Notes: map[string]string{"node.n2": "exited unexpectedly"},
		Checks: []results.Check{
			{Name: "ok", Condition: "phase.steady.availability >= 0.99", Passed: true, Observed: map[string]any{"phase.steady.availability": 1.0}},
			{Name: "fast failover", Condition: "phase.failover.failover_time < seconds(1)", Message: "too slow",
				Observed: map[string]any{"phase.failover.failover_time": 1500.0}},
			{Name: "linearizable", Condition: "run.linearizable", Error: "not measured: run.linearizable",
				Observed: map[string]any{"run.linearizable": nil}},
		},
	}
	must(r.AddFailover("failover", results.Failover{
		FaultID: "failover/kill", Kind: "kill", Targets: []string{"n1"}, PlannedMS: 7000,
		AppliedMS: f64(7010), LagMS: f64(10), RecoveredMS: f64(9000),
		TimeToLeaderMS: f64(1200), TimeToWriteMS: f64(1500),
		Unavailable: &results.Window{StartMS: 6990, EndMS: 8510},
	}))
	must(r.AddFailover("failover", results.Failover{
		FaultID: "failover/disk", Kind: "disk", Targets: []string{"n3"}, PlannedMS: 6000,
		AppliedMS: f64(6001), TimeToLeaderMS: f64(0), TimeToWriteMS: f64(900),
		Disk: &results.DiskLoad{Writes: 10, Bytes: 10 << 20, FsyncP50MS: 2, FsyncP99MS: 14, FsyncMaxMS: 40},
	}))
	// Ten seconds of puts; nothing succeeds in second 7, the kill's.
	s := results.Series{Workload: "kv", Op: "put"}
	for k := range 10 {
		pt := results.SecondPoint{AtMS: float64(k) * 1000, Ops: 10, P50MS: f64(2 + float64(k%3)), P99MS: f64(5 + float64(k))}
		if k == 7 {
			pt = results.SecondPoint{AtMS: 7000, Ops: 2, Errors: 2, ErrorsBy: map[string]int64{"unavailable": 2}}
		}
		s.Points = append(s.Points, pt)
	}
	r.Series = []results.Series{s}
	r.Leader = []results.LeaderObservation{{AtMS: -300, Leader: 1, Term: 2}, {AtMS: 7100, Leader: 0, Term: 2}, {AtMS: 8200, Leader: 3, Term: 3}}
	for i, node := range []string{"n1", "n2", "n3"} {
		n := results.NodeResources{Node: node, Summary: results.ResourceSummary{WrittenBytes: new(int64(int64(i+1) << 22))}}
		for k := range 10 {
			if node == "n1" && k >= 7 && k < 9 {
				continue // killed, restarted at 9 s with a new pid
			}
			pid := 100 + i
			if node == "n1" && k >= 9 {
				pid = 200
			}
			pt := results.ResourcePoint{AtMS: float64(k)*1000 + 20, PID: pid, CPUPercent: 10 + float64(k), RSSBytes: int64(40+k) << 20}
			if node != "n3" { // n3's kernel keeps no schedstat
				pt.CPUWaitPercent = f64(1 + float64(k%3))
			}
			n.Points = append(n.Points, pt)
		}
		r.Resources = append(r.Resources, n)
	}
	r.Runner = &results.NodeResources{Node: results.RunnerNode}
	for k := range 10 {
		r.Runner.Points = append(r.Runner.Points, results.ResourcePoint{AtMS: float64(k)*1000 + 20, PID: 9, CPUPercent: 12, RSSBytes: 80 << 20, CPUWaitPercent: f64(float64(k % 4))})
	}
	r.Machine = &results.Machine{CPUs: 2}
	for k := range 10 {
		wait := 0.1 + 0.05*float64(k%4)
		r.Machine.Points = append(r.Machine.Points, results.MachinePoint{AtMS: float64(k)*1000 + 20, BusyShare: 0.3 + 0.04*float64(k), StealShare: 0.01 * float64(k%3), WaitShare: &wait})
	}
	return r
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// simulate records a run through the runner's own collector, so that the
// results and the interval logs in hlogDir are exactly what a run writes:
// one workload "kv" putting and getting at rate ops/s for seconds, in three
// phases (warmup, steady, failover), with a 2 s stall of every op in the
// middle of the failover phase. Latencies are drawn from a seeded
// log-normal around 2 ms. The leader timeline, node samples, fault and
// checks are added by hand.
func simulate(tb testing.TB, hlogDir string, seconds, rate int) *results.Results {
	tb.Helper()
	sec := time.Second
	total := time.Duration(seconds) * sec
	warm, steady := total/6, total/2
	phases := []plan.PhaseSpan{
		{Name: "warmup", Start: 0, Duration: plan.Duration(warm)},
		{Name: "steady", Start: plan.Duration(warm), Duration: plan.Duration(steady - warm)},
		{Name: "failover", Start: plan.Duration(steady), Duration: plan.Duration(total - steady)},
	}
	wl := []plan.WorkloadSpec{{Name: "kv", Mix: []plan.OpWeight{{Op: plan.OpPut, Weight: 0.5}, {Op: plan.OpGet, Weight: 0.5}}}}
	// A base far in the past: every second is over, as at the end of a run.
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	c := metrics.NewCollector(phases, wl, base)
	sink := c.NewSink()
	rng := rand.New(rand.NewPCG(1, 2))
	stallFrom, stallTo := steady+(total-steady)/3, steady+(total-steady)/3+2*sec
	interval := sec / time.Duration(rate)
	for at := time.Duration(0); at < total; at += interval {
		lat := time.Duration(math.Exp(rng.NormFloat64()*0.5) * float64(2*time.Millisecond))
		op, write := plan.OpGet, false
		if rng.IntN(2) == 0 {
			op, write = plan.OpPut, true
			lat *= 3
		}
		class := ""
		if at >= stallFrom && at < stallTo {
			if rng.IntN(4) == 0 {
				class = plan.ErrUnavailable
			}
			lat += stallTo - at // everything waits for the new leader
		}
		sink.Record(metrics.Sample{Workload: "kv", Op: op, Intended: at, Start: at, End: at + lat, Class: class, Write: write})
	}
	c.Flush()
	if hlogDir != "" {
		if err := c.WriteIntervalLogs(hlogDir); err != nil {
			tb.Fatal(err)
		}
	}
	r := c.Results()
	r.SchemaVersion = results.SchemaVersion
	r.Scenario, r.RunID, r.Started = "simulated", "sim", base
	r.Finished = base.Add(total)
	r.Backend = map[string]string{"store": "etcd 3.5.17"}
	ms := func(d time.Duration) *float64 { return f64(results.MS(d)) }
	if err := r.AddFailover("failover", results.Failover{FaultID: "failover/kill", Kind: "kill", Targets: []string{"n1"},
		PlannedMS: results.MS(stallFrom), AppliedMS: ms(stallFrom), RecoveredMS: ms(stallTo + 3*sec),
		TimeToLeaderMS: f64(1200), TimeToWriteMS: f64(2000)}); err != nil {
		tb.Fatal(err)
	}
	r.Leader = []results.LeaderObservation{{AtMS: 0, Leader: 1, Term: 2}, {AtMS: results.MS(stallFrom + 100*time.Millisecond), Leader: 0, Term: 2},
		{AtMS: results.MS(stallFrom + 1200*time.Millisecond), Leader: 2, Term: 3}}
	for i := range 3 {
		n := results.NodeResources{Node: fmt.Sprintf("n%d", i+1), Summary: results.ResourceSummary{WrittenBytes: new(int64(int64(i+3) << 22))}}
		for k := range seconds {
			n.Points = append(n.Points, results.ResourcePoint{AtMS: float64(k * 1000), PID: 100 + i, CPUPercent: 20 + 10*rng.Float64(), RSSBytes: int64(60+k/4) << 20})
		}
		r.Resources = append(r.Resources, n)
	}
	r.Checks = []results.Check{{Name: "p99", Condition: "phase.steady.put.p99 < ms(50)", Passed: true, Observed: map[string]any{"phase.steady.put.p99": 9.5}}}
	return r
}
