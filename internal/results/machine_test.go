package results

import (
	"bytes"
	"strings"
	"testing"
)

func TestSummarizeMachine(t *testing.T) {
	points := []MachinePoint{
		{AtMS: 1000, BusyShare: 0.2, StealShare: 0.01, WaitShare: Ptr(0.1)},
		{AtMS: 2000, BusyShare: 0.4, StealShare: 0.03, WaitShare: Ptr(0.3)},
		{AtMS: 3000, BusyShare: 0.9, StealShare: 0.05}, // no pressure file this second
	}
	tests := []struct {
		name       string
		from, to   float64
		want       *MachineSummary
		wantNoWait bool
	}{
		{name: "all", from: 0, to: 3000, want: &MachineSummary{Samples: 3, BusyMeanShare: 0.5, StealMeanShare: 0.03, StealMaxShare: 0.05, WaitMeanShare: Ptr(0.2), WaitMaxShare: Ptr(0.3)}},
		// A point covers the second before its stamp: the one stamped at
		// the window's start belongs to the span before.
		{name: "from is exclusive", from: 1000, to: 2000, want: &MachineSummary{Samples: 1, BusyMeanShare: 0.4, StealMeanShare: 0.03, StealMaxShare: 0.03, WaitMeanShare: Ptr(0.3), WaitMaxShare: Ptr(0.3)}},
		{name: "no wait known", from: 2000, to: 3000, want: &MachineSummary{Samples: 1, BusyMeanShare: 0.9, StealMeanShare: 0.05, StealMaxShare: 0.05}},
		{name: "empty", from: 3000, to: 9000, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SummarizeMachine(points, tc.from, tc.to)
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got == nil {
				return
			}
			if got.Samples != tc.want.Samples || got.BusyMeanShare != tc.want.BusyMeanShare || got.StealMeanShare != tc.want.StealMeanShare ||
				got.StealMaxShare != tc.want.StealMaxShare || !sameOpt(got.WaitMeanShare, tc.want.WaitMeanShare) || !sameOpt(got.WaitMaxShare, tc.want.WaitMaxShare) {
				t.Errorf("got %+v, want %+v", *got, *tc.want)
			}
		})
	}
}

func TestMachineMetricsAndSummary(t *testing.T) {
	r := sample()
	r.Phases[0].Machine = &MachineSummary{Samples: 10, BusyMeanShare: 0.62, StealMeanShare: 0.012, StealMaxShare: 0.05, WaitMeanShare: Ptr(0.25)}
	r.Phases[1].Machine = &MachineSummary{Samples: 10, BusyMeanShare: 0.3, StealMeanShare: 0}
	m := r.Metrics()
	for path, want := range map[string]float64{
		"phase.steady.steal_share":    0.012,
		"phase.steady.cpu_wait_share": 0.25,
		"phase.failover.steal_share":  0,
	} {
		if got, ok := m[path].(float64); !ok || got != want {
			t.Errorf("%s = %v, want %v", path, m[path], want)
		}
	}
	// Unknown is absent, not zero: a check on it fails to evaluate.
	for _, path := range []string{"phase.failover.cpu_wait_share", "run.steal_share"} {
		if v, ok := m[path]; ok {
			t.Errorf("%s = %v, want absent", path, v)
		}
	}
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"machine CPUs 62% busy, 1.2% stolen, a task waiting for a CPU 25% of the time",
		"machine CPUs 30% busy, 0% stolen",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestRunnerWait checks the runner's own wait for a CPU: summarized from
// the points that have it, as a share of the CPU time it wanted in the
// metrics and the summary, and absent where it is unknown.
func TestRunnerWait(t *testing.T) {
	points := []ResourcePoint{
		{AtMS: 1000, CPUPercent: 20, CPUWaitPercent: Ptr(4.0)},
		{AtMS: 2000, CPUPercent: 40},
		{AtMS: 3000, CPUPercent: 30, CPUWaitPercent: Ptr(6.0)},
		{AtMS: 4000, CPUPercent: 10, CPUWaitPercent: Ptr(50.0)}, // after the window
	}
	s := SummarizeResources(points, 0, 3000)
	if s.CPUWaitMeanPercent == nil || *s.CPUWaitMeanPercent != 5 || s.CPUMeanPercent != 30 {
		t.Fatalf("summary %+v, want wait 5%% (of the two points with one), CPU 30%%", s)
	}
	if w := s.WaitShare(); w == nil || *w != RoundShare(5.0/35) {
		t.Errorf("WaitShare = %v, want %v", w, RoundShare(5.0/35))
	}
	if w := SummarizeResources(points[1:2], 0, 3000).WaitShare(); w != nil {
		t.Errorf("WaitShare without a wait figure = %v, want nil", *w)
	}
	if w := (ResourceSummary{CPUWaitMeanPercent: Ptr(0.0)}).WaitShare(); w != nil {
		t.Errorf("WaitShare of a process that neither ran nor waited = %v, want nil", *w)
	}

	r := sample()
	r.Phases[0].Resources = map[string]ResourceSummary{RunnerNode: s}
	r.Phases[1].Resources = map[string]ResourceSummary{RunnerNode: {Samples: 3, CPUMeanPercent: 12}}
	m := r.Metrics()
	if got, ok := m["phase.steady.runner_wait_share"].(float64); !ok || got != RoundShare(5.0/35) {
		t.Errorf("phase.steady.runner_wait_share = %v, want %v", m["phase.steady.runner_wait_share"], RoundShare(5.0/35))
	}
	if v, ok := m["phase.failover.runner_wait_share"]; ok {
		t.Errorf("phase.failover.runner_wait_share = %v, want absent (no wait figure)", v)
	}
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"runner CPU 30% of a core, 0 MiB, waiting for a CPU 14% of the time it wanted one",
		"runner CPU 12% of a core, 0 MiB, new leader",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestNetworkDrops: a phase's undeclared network drops and the frames the
// shaper read are metrics where they were counted, absent where they were
// not (no fabric), and the summary names the drops, against the frames,
// only when there were some.
func TestNetworkDrops(t *testing.T) {
	r := sample()
	r.Phases[0].NetworkDrops, r.Phases[0].NetworkFrames = Ptr(int64(0)), Ptr(int64(9000))
	r.Phases[1].NetworkDrops, r.Phases[1].NetworkFrames = Ptr(int64(37)), Ptr(int64(51000))
	r.Run.NetworkDrops, r.Run.NetworkFrames = Ptr(int64(37)), Ptr(int64(60000))
	m := r.Metrics()
	for path, want := range map[string]float64{
		"phase.steady.network_drops": 0, "phase.failover.network_drops": 37, "run.network_drops": 37,
		"phase.steady.network_frames": 9000, "phase.failover.network_frames": 51000, "run.network_frames": 60000,
	} {
		if got, ok := m[path].(float64); !ok || got != want {
			t.Errorf("%s = %v, want %v", path, m[path], want)
		}
	}
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "no link declared"); n != 1 {
		t.Errorf("the summary names network drops %d times, want once (the phase with 37):\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "network dropped 37 of 51000 frames no link declared (the shaper fell behind)") {
		t.Errorf("summary lacks the failover phase's 37 drops:\n%s", buf.String())
	}
	for _, path := range []string{"run.network_drops", "run.network_frames"} {
		if _, ok := sample().Metrics()[path]; ok {
			t.Errorf("%s present in a run without a fabric", path)
		}
	}
}

// TestNetworkLate: the shaper's lateness is a metric where it was
// measured; the summary puts its median beside the write floor's excess,
// and names the phase whose p99 reached a millisecond, only that one.
func TestNetworkLate(t *testing.T) {
	r := sample()
	r.Phases[0].NetworkLate = &NetworkLate{Packets: 9000, P50MS: 0.061, P99MS: 0.35, MaxMS: 2.1}
	r.Phases[0].WriteFloor = &WriteFloor{Leader: 1, FloorMS: 81, ExcessPct: Ptr(3.9), FsyncP50MS: Ptr(1.2), JitterMS: Ptr(4.0)}
	r.Phases[1].NetworkLate = &NetworkLate{Packets: 51000, P50MS: 0.2, P99MS: 4.6, MaxMS: 18.5}
	r.Phases[1].NetworkPairs = []NetworkPair{
		{From: "clients-eu", To: "n1", Packets: 20000, Late: &NetworkLate{Packets: 20000, P50MS: 0.1, P99MS: 2.5, MaxMS: 9}},
		{From: "n1", To: "n2", Packets: 10000, Late: &NetworkLate{Packets: 10000, P50MS: 0.3, P99MS: 6.2, MaxMS: 18.5}},
		{From: "n1", To: "n3", Packets: 21000, Late: &NetworkLate{Packets: 21000, P50MS: 0.3, P99MS: 6.2, MaxMS: 12}},
		{From: "n2", To: "n3", Packets: 500, Lost: 20},
	}
	r.Run.NetworkLate = &NetworkLate{Packets: 60000, P50MS: 0.1, P99MS: 4.1, MaxMS: 18.5}
	m := r.Metrics()
	for path, want := range map[string]float64{
		"phase.steady.network_late_p99_ms": 0.35, "phase.steady.network_late_max_ms": 2.1,
		"phase.failover.network_late_p99_ms": 4.6, "run.network_late_max_ms": 18.5,
		"phase.failover.network_pair.n1.n3.packets": 21000, "phase.failover.network_pair.n1.n3.late_p99_ms": 6.2,
		"phase.failover.network_pair.n1.n3.late_max_ms": 12, "phase.failover.network_pair.n1.n3.lost_share": 0,
		"phase.failover.network_pair.n2.n3.lost": 20, "phase.failover.network_pair.n2.n3.lost_share": 20.0 / 520,
		"phase.failover.network_pair.n2.n3.cut": 0, "phase.failover.network_pair.n2.n3.dropped": 0,
	} {
		if got, ok := m[path].(float64); !ok || got != want {
			t.Errorf("%s = %v, want %v", path, m[path], want)
		}
	}
	// A pair that held nothing has no lateness; one that carried nothing
	// past a cut has no loss share (no packet met the loss draw).
	r.Phases[1].NetworkPairs = append(r.Phases[1].NetworkPairs, NetworkPair{From: "n3", To: "n1", Cut: 40})
	m = r.Metrics()
	for _, path := range []string{"phase.failover.network_pair.n2.n3.late_p99_ms", "phase.failover.network_pair.n3.n1.lost_share", "phase.steady.network_pair.n1.n2.packets"} {
		if v, ok := m[path]; ok {
			t.Errorf("%s = %v, want absent", path, v)
		}
	}
	if got := m["phase.failover.network_pair.n3.n1.cut"]; got != 40.0 {
		t.Errorf("cut pair: %v, want 40", got)
	}
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"write floor 81.0 ms with n1 leading (not counting the 4.00 ms of jitter declared on its path, which raises the median), put p50 +3.9% above it (store fsync p50 1.20 ms, shaper late p50 61 µs a packet)",
		"the shaper handed on 1% of 51000 packets over 4.60 ms after their due time (the latest 18.5 ms late; the latest pair n1>n3, p99 6.20 ms of 21000 packets)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "after their due time"); n != 1 {
		t.Errorf("the summary names the shaper's lateness %d times, want once (the phase at 4.6 ms):\n%s", n, out)
	}
	if !strings.Contains(out, "(a busy machine delays the shaper; see --realtime)") {
		t.Errorf("summary of a run without --realtime does not point at it:\n%s", out)
	}
	// A run at real-time priority already did what the pointer says.
	r.Notes = map[string]string{NoteRealtime: "the runner's threads ran at real-time priority"}
	buf.Reset()
	if err := WriteSummary(&buf, r, false); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "(a busy machine delays the shaper)") {
		t.Errorf("summary of a --realtime run:\n%s", out)
	}
	if _, ok := sample().Metrics()["run.network_late_p99_ms"]; ok {
		t.Error("run.network_late_p99_ms present in a run without a shaper")
	}
}

func TestLatestPair(t *testing.T) {
	late := func(p99 float64, n int64) *NetworkLate { return &NetworkLate{Packets: n, P99MS: p99} }
	tests := []struct {
		name  string
		pairs []NetworkPair
		want  string // "" for none
	}{
		{"none", nil, ""},
		{"one pair names nothing", []NetworkPair{{From: "a", To: "b", Late: late(5, 10)}}, ""},
		{"pairs that held nothing are not counted", []NetworkPair{{From: "a", To: "b", Late: late(5, 10)}, {From: "b", To: "a", Packets: 10}}, ""},
		{"the highest p99", []NetworkPair{{From: "a", To: "b", Late: late(5, 10)}, {From: "b", To: "a", Late: late(7, 3)}}, "b>a"},
		{"a pair with under 1% of the packets is not named", []NetworkPair{{From: "a", To: "b", Late: late(5, 1000)}, {From: "b", To: "a", Late: late(9, 9)}}, "a>b"},
		{"a tie goes to more packets", []NetworkPair{{From: "a", To: "b", Late: late(5, 10)}, {From: "b", To: "a", Late: late(5, 30)}, {From: "a", To: "c", Late: late(5, 20)}}, "b>a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if pr := latestPair(tt.pairs); pr != nil {
				got = pr.From + ">" + pr.To
			}
			if got != tt.want {
				t.Errorf("latestPair = %q, want %q", got, tt.want)
			}
		})
	}
}
