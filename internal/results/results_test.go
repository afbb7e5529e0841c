package results

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func f64(v float64) *float64 { return &v }

// sample is a small run with one faulted phase, a correctness verdict and
// two checks, one failed.
func sample() *Results {
	r := &Results{
		SchemaVersion: SchemaVersion,
		Scenario:      "sample",
		DurationMS:    10000,
		Phases: []Phase{
			{Name: "steady", DurationMS: 5000, Availability: f64(1), Total: OpStats{Count: 100, OK: 100}},
			{Name: "failover", StartMS: 5000, DurationMS: 5000, Availability: f64(0.98), Elections: 1,
				Total: OpStats{Count: 100, OK: 98, Errors: 2, ErrorsBy: map[string]int64{"unavailable": 2}}},
		},
		Correctness: &Correctness{Linearizable: f64b(false), LostWrites: new(int64(1)), Operations: 10,
			Visualization: "linearizability.html", Detail: "10 operations on 2 keys are not linearizable."},
		Notes: map[string]string{"node.n2": "exited unexpectedly"},
		Checks: []Check{
			{Name: "ok", Condition: "phase.steady.availability >= 0.99", Passed: true, Observed: map[string]any{"phase.steady.availability": 1.0}},
			{Name: "fast failover", Condition: "phase.failover.failover_time < seconds(1)", Message: "too slow",
				Observed: map[string]any{"phase.failover.failover_time": 1500.0}},
		},
	}
	err := r.AddFailover("failover", Failover{
		FaultID: "failover/kill", Kind: "kill", Targets: []string{"n1"}, PlannedMS: 7000,
		AppliedMS: f64(7010), LagMS: f64(10), RecoveredMS: f64(9000),
		TimeToLeaderMS: f64(1200), TimeToWriteMS: f64(1500),
		Unavailable: &Window{StartMS: 6990, EndMS: 8510},
		Served:      []NodeServed{{Node: "n1", TimeToServeMS: f64(800)}},
	})
	if err != nil {
		panic(err)
	}
	_ = r.AddFailover("failover", Failover{
		FaultID: "failover/disk", Kind: "disk", Targets: []string{"n3"}, PlannedMS: 6000,
		AppliedMS: f64(6001), TimeToLeaderMS: f64(0), TimeToWriteMS: f64(900),
		Disk: &DiskLoad{Writes: 10, Bytes: 10 << 20, FsyncP50MS: 2, FsyncP99MS: 14, FsyncMaxMS: 40},
	})
	return r
}

func f64b(v bool) *bool { return &v }

func TestAddFailoverKeepsTheWorst(t *testing.T) {
	r := sample()
	p, _ := r.Phase("failover")
	if got := *p.FailoverTimeMS; got != 1500 {
		t.Errorf("phase failover_time = %v, want the worst, 1500", got)
	}
	if got := *p.LeaderElectedMS; got != 1200 {
		t.Errorf("phase leader_elected = %v, want 1200", got)
	}
	if r.Run.FailoverTimeMS == nil || *r.Run.FailoverTimeMS != 1500 {
		t.Errorf("run failover_time = %v, want 1500", r.Run.FailoverTimeMS)
	}
	if err := r.AddFailover("nope", Failover{FaultID: "x"}); err == nil {
		t.Error("AddFailover to an unknown phase succeeded")
	}
	if p.RejoinTimeMS == nil || *p.RejoinTimeMS != 800 || p.Failovers[0].TimeToServeMS == nil || *p.Failovers[0].TimeToServeMS != 800 {
		t.Errorf("rejoin time = %v, kill's time to serve %v; want 800", p.RejoinTimeMS, p.Failovers[0].TimeToServeMS)
	}
	m := r.Metrics()
	if m["phase.failover.rejoin_time"] != 800.0 {
		t.Errorf("metric rejoin_time = %v, want 800", m["phase.failover.rejoin_time"])
	}
	if m["phase.failover.failover_time"] != 1500.0 || m["run.lost_writes"] != 1.0 || m["run.linearizable"] != false {
		t.Errorf("metrics: failover_time %v, lost_writes %v, linearizable %v",
			m["phase.failover.failover_time"], m["run.lost_writes"], m["run.linearizable"])
	}
}

func TestWriteSummary(t *testing.T) {
	var b bytes.Buffer
	r := sample()
	r.Scenario, r.ScenarioFile = "examples/fault-kill.hcl", "examples/fault-kill.hcl"
	r.Description = "kill the leader under load"
	r.Clients = map[string]map[string]string{"w": {"keepalive_time": "off (clientv3 default)", "retries": "none"}}
	if err := WriteSummary(&b, r, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if first := strings.SplitN(out, "\n", 3); first[0] != "scenario fault-kill (examples/fault-kill.hcl)" || first[1] != "kill the leader under load" {
		t.Errorf("summary starts %q, want the name, the file once and the description", first[:2])
	}
	for _, want := range []string{
		"clients of w: keepalive_time off (clientv3 default); retries none",
		"fault failover/kill (kill n1) applied at 7.01 s (lag 10.0 ms), new leader after 1.20 s, first write after 1.50 s, no write from 6.99 s to 8.51 s (1.52 s), recovered at 9.00 s, answering clients again: n1 after 800 ms",
		"first write after 1.50 s, members back after 800 ms",
		"fault failover/disk (disk n3) applied at 6.00 s, leader kept, first write after 900 ms",
		"contender wrote 10 blocks, 10 MiB, fsync p50 2.00 p99 14.0 max 40.0",
		"correctness: linearizable NO, lost writes 1",
		"evidence: linearizability.html",
		"node.n2: exited unexpectedly",
		"checks: 1 passed, 1 failed",
		"FAIL   fast failover",
		"phase.failover.failover_time = 1500",
		"too slow",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour codes without color")
	}
}

func TestResultsJSONRoundTrip(t *testing.T) {
	r := sample()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	p, _ := back.Phase("failover")
	if len(p.Failovers) != 2 || p.Failovers[0].Unavailable == nil || p.Failovers[1].Disk == nil || back.Passed() {
		t.Errorf("round trip lost failover details: %+v", p.Failovers)
	}
}

// A fault's time to serve is its slowest target's; a target that never
// answered again leaves it, and the phase's rejoin time, unmeasured for
// good, whatever later faults measure.
func TestRejoinTime(t *testing.T) {
	tests := []struct {
		name        string
		served      [][]NodeServed // per failover, in order
		wantFault   []*float64
		wantRejoin  *float64
		wantMissing []string
	}{
		{"no removing fault", [][]NodeServed{nil}, []*float64{nil}, nil, nil},
		{"slowest target", [][]NodeServed{{{"n4", f64(1200)}, {"n5", f64(7000)}}}, []*float64{f64(7000)}, f64(7000), nil},
		{"worst of two faults", [][]NodeServed{{{"n4", f64(300)}}, {{"n2", f64(900)}}}, []*float64{f64(300), f64(900)}, f64(900), nil},
		{"one never answered", [][]NodeServed{{{"n4", f64(1200)}, {"n5", nil}}}, []*float64{nil}, nil, []string{"n5"}},
		{"a later fault does not hide it", [][]NodeServed{{{"n5", nil}}, {{"n2", f64(900)}}}, []*float64{nil, f64(900)}, nil, []string{"n5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Results{Phases: []Phase{{Name: "p"}}, Run: Phase{Name: "run"}}
			for i, s := range tc.served {
				if err := r.AddFailover("p", Failover{FaultID: "p/f" + string(rune('0'+i)), Served: s}); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []*Phase{&r.Phases[0], &r.Run} {
				for i, f := range p.Failovers {
					if !sameOpt(f.TimeToServeMS, tc.wantFault[i]) {
						t.Errorf("%s: fault %d time to serve %v, want %v", p.Name, i, f.TimeToServeMS, tc.wantFault[i])
					}
				}
				if !sameOpt(p.RejoinTimeMS, tc.wantRejoin) || strings.Join(p.NotRejoined, ",") != strings.Join(tc.wantMissing, ",") {
					t.Errorf("%s: rejoin %v, not rejoined %v; want %v, %v", p.Name, p.RejoinTimeMS, p.NotRejoined, tc.wantRejoin, tc.wantMissing)
				}
			}
			_, measured := r.Metrics()["phase.p.rejoin_time"]
			if measured != (tc.wantRejoin != nil) {
				t.Errorf("metric rejoin_time present = %v", measured)
			}
		})
	}
}

func sameOpt(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func TestLateStartShare(t *testing.T) {
	r := sample()
	r.Phases[0].Total.LateStarts = 5     // of 100: 5%
	r.Phases[0].Total.LateQueued = 2     // of those, waited for a client
	r.Phases[1].Total.LateStarts = 0     // none
	r.Run.Total = OpStats{LateStarts: 0} // nothing counted: 0, not NaN
	m := r.Metrics()
	for path, want := range map[string]float64{
		"phase.steady.late_start_share":   0.05,
		"phase.steady.late_starts":        5,
		"phase.steady.late_queued":        2,
		"phase.failover.late_start_share": 0,
		"run.late_start_share":            0,
	} {
		if got, ok := m[path].(float64); !ok || got != want {
			t.Errorf("%s = %v, want %v", path, m[path], want)
		}
	}
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	if want := "late starts 5 (5%): the load generator fell behind the declared rate; 2 waited for a client, every one busy with an earlier request (more clients would have sent them on time), 3 for a CPU (with a light load, run --realtime puts it ahead of other tasks)"; !strings.Contains(buf.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, buf.String())
	}
	// A run at real-time priority already did what the hint says.
	r.Notes = map[string]string{NoteRealtime: "the runner's threads ran at real-time priority"}
	buf.Reset()
	if err := WriteSummary(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	if want := "the load generator fell behind the declared rate"; !strings.Contains(buf.String(), want) {
		t.Errorf("summary of a --realtime run lacks %q:\n%s", want, buf.String())
	}
	if strings.Contains(buf.String(), "--realtime puts") {
		t.Errorf("summary of a --realtime run suggests --realtime:\n%s", buf.String())
	}
}

// TestLateStartCauses: late starts that waited for a client are told apart
// from those that waited for a CPU, and --realtime is suggested only for
// the latter, when they pass the mark on their own.
func TestLateStartCauses(t *testing.T) {
	for _, tt := range []struct {
		name     string
		o        OpStats
		realtime bool
		want     string
	}{
		{"all for a CPU", OpStats{Count: 6000, LateStarts: 21}, false,
			"late starts 21 (0.35%): the load generator fell behind the declared rate (with a light load, run --realtime puts it ahead of other tasks)"},
		{"all for a client", OpStats{Count: 3000, LateStarts: 1536, LateQueued: 1536}, false,
			"late starts 1536 (51%): the load generator fell behind the declared rate; 1536 waited for a client, every one busy with an earlier request (more clients would have sent them on time)"},
		{"both, the CPU's part past the mark", OpStats{Count: 3000, LateStarts: 1536, LateQueued: 1500}, false,
			"late starts 1536 (51%): the load generator fell behind the declared rate; 1500 waited for a client, every one busy with an earlier request (more clients would have sent them on time), 36 for a CPU (with a light load, run --realtime puts it ahead of other tasks)"},
		{"both, the CPU's part under the mark", OpStats{Count: 30000, LateStarts: 1510, LateQueued: 1500}, false,
			"late starts 1510 (5%): the load generator fell behind the declared rate; 1500 waited for a client, every one busy with an earlier request (more clients would have sent them on time), 10 for a CPU"},
		{"at real-time priority", OpStats{Count: 3000, LateStarts: 1536, LateQueued: 1500}, true,
			"late starts 1536 (51%): the load generator fell behind the declared rate; 1500 waited for a client, every one busy with an earlier request (more clients would have sent them on time), 36 for a CPU"},
		{"under the mark", OpStats{Count: 100000, LateStarts: 50, LateQueued: 10}, false, "late starts 50 (0.05%)"},
	} {
		if got := lateStarts(&tt.o, tt.realtime); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}
