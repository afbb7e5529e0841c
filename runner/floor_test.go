package runner

import (
	"math"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

func rttLink(a, b string, ms int) plan.LinkSpec {
	return plan.LinkSpec{A: a, B: b, Shaping: plan.Shaping{RTT: plan.Duration(time.Duration(ms) * time.Millisecond)}}
}

// jittered is l with a jitter of ms.
func jittered(l plan.LinkSpec, ms int) plan.LinkSpec {
	l.Jitter = plan.Duration(time.Duration(ms) * time.Millisecond)
	return l
}

// geoNetwork is geoCluster's (network_integration_test.go).
var geoNetwork = plan.NetworkSpec{
	Within: plan.LinkSpec{Shaping: plan.Shaping{RTT: plan.Duration(time.Millisecond)}},
	Links:  []plan.LinkSpec{rttLink("us-east", "eu-west", 80), rttLink("us-east", "ap-south", 190), rttLink("eu-west", "ap-south", 150)},
}

// geoJittered is geoNetwork with examples/etcd-geo.hcl's jitter: 4 ms
// between us-east and eu-west.
var geoJittered = plan.NetworkSpec{
	Within: geoNetwork.Within,
	Links:  []plan.LinkSpec{jittered(rttLink("us-east", "eu-west", 80), 4), rttLink("us-east", "ap-south", 190), rttLink("eu-west", "ap-south", 150)},
}

func TestWriteFloor(t *testing.T) {
	three := plan.ClusterSpec{Name: "main", Nodes: 3, Placement: []string{"us-east", "eu-west", "ap-south"}}
	five := plan.ClusterSpec{Name: "main", Nodes: 5, Placement: []string{"us-east", "us-east", "eu-west", "ap-south", "ap-south"}}
	local := plan.WorkloadSpec{Region: "us-east", Endpoints: plan.EndpointsLocal}
	all := plan.WorkloadSpec{Region: "us-east", Endpoints: plan.EndpointsAll}
	tests := []struct {
		name   string
		spec   plan.ClusterSpec
		w      plan.WorkloadSpec
		leader int
		want   float64
	}{
		// What TestGeoWriteLatency expects: client-n1 1 + n1-leader + the
		// leader's nearest follower.
		{"local, n1 leads", three, local, 1, 1 + 0 + 80},
		{"local, n2 leads", three, local, 2, 1 + 80 + 80},
		{"local, n3 leads", three, local, 3, 1 + 190 + 150},
		// Through every member, n1 leading: 81, 80+80+80, 190+190+80; the
		// lower median.
		{"all members, n1 leads", three, all, 1, 240},
		// Five nodes: the quorum is the 2nd nearest of the leader's four
		// peers (1, 80, 190, 190 from n1). Local members n1 and n2: n1 1+0+80,
		// n2 1+1+80; the lower median is n1's.
		{"five nodes, local", five, local, 1, 81},
		// From n4 (ap-south): peers 1 (n5), 150, 190, 190: quorum 150. n1
		// and n2 each 1+190+150.
		{"five nodes, ap-south leads", five, local, 4, 341},
		{"one node", plan.ClusterSpec{Nodes: 1, Placement: []string{"eu-west"}}, local, 1, 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := writeFloor(geoNetwork, tt.spec, tt.w, tt.leader); math.Abs(got.ms-tt.want) > 1e-9 || got.jitterMS != 0 {
				t.Errorf("floor %+v, want %v ms and no jitter", got, tt.want)
			}
		})
	}
}

// TestWriteFloorJitter: the jitter summed is that of the floor's own path,
// and the floor itself does not move.
func TestWriteFloorJitter(t *testing.T) {
	three := plan.ClusterSpec{Name: "main", Nodes: 3, Placement: []string{"us-east", "eu-west", "ap-south"}}
	local := plan.WorkloadSpec{Region: "us-east", Endpoints: plan.EndpointsLocal}
	all := plan.WorkloadSpec{Region: "us-east", Endpoints: plan.EndpointsAll}
	tests := []struct {
		name       string
		w          plan.WorkloadSpec
		leader     int
		ms, jitter float64
	}{
		// The quorum is n2 over the jittered link.
		{"n1 leads", local, 1, 81, 4},
		// n1 to n2, then n2's quorum back to n1: both jittered.
		{"n2 leads", local, 2, 161, 8},
		// n1 to n3, n3's quorum n2: neither jittered, as etcd-geo's
		// steady phase with n3 leading.
		{"n3 leads", local, 3, 341, 0},
		// Through every member, n1 leading: n1 81 (4), n2 80+80+80 (12),
		// n3 190+190+80 (4); the lower median is n2's.
		{"all members, n1 leads", all, 1, 240, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := writeFloor(geoJittered, three, tt.w, tt.leader); math.Abs(got.ms-tt.ms) > 1e-9 || math.Abs(got.jitterMS-tt.jitter) > 1e-9 {
				t.Errorf("floor %+v, want %v ms with %v ms of jitter", got, tt.ms, tt.jitter)
			}
		})
	}
}

func TestLeaderOver(t *testing.T) {
	// n2's office has a stretch no node answered the poll in: it says
	// nothing about who led, so n2 stays in office over it.
	obs := []results.LeaderObservation{{AtMS: 0, Leader: 0}, {AtMS: 500, Leader: 2}, {AtMS: 2000, Unanswered: true}, {AtMS: 2500, Leader: 2}, {AtMS: 5000, Leader: 0}, {AtMS: 6000, Leader: 3}}
	tests := []struct {
		from, to float64
		want     int
		ok       bool
	}{
		{1000, 4000, 2, true},  // in office throughout
		{0, 4000, 2, true},     // none, then the first leader: it is the phase's
		{4000, 7000, 0, false}, // lost and replaced
		{7000, 9000, 3, true},  // the last one
		{0, 400, 0, false},     // none yet
		{2100, 2400, 2, true},  // only unanswered polls in the window
	}
	for _, tt := range tests {
		if got, ok := leaderOver(obs, tt.from, tt.to); got != tt.want || ok != tt.ok {
			t.Errorf("leaderOver(%v, %v) = %d, %v; want %d, %v", tt.from, tt.to, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPhaseFloor(t *testing.T) {
	spec := plan.ClusterSpec{Name: "main", Nodes: 3, Placement: []string{"us-east", "eu-west", "ap-south"}}
	w := plan.WorkloadSpec{Name: "w", Region: "us-east", Endpoints: plan.EndpointsLocal, Mix: []plan.OpWeight{{Op: plan.OpPut, Weight: 1}}}
	load := plan.Event{Phase: "steady", Kind: plan.EventLoad, Load: &plan.LoadSpec{Workload: "w"}}
	cut := plan.Event{Phase: "steady", Kind: plan.EventFaultInject, Fault: &plan.FaultSpec{Kind: plan.FaultPartition}}
	leaders := []results.LeaderObservation{{AtMS: 0, Leader: 1}}
	phase := func() *results.Phase {
		return &results.Phase{Name: "steady", DurationMS: 10000,
			Ops:    []results.OpStats{{Op: plan.OpPut, Latency: &results.Latency{P50MS: 84.24}}},
			Server: map[string]results.ServerStat{"fsync": {Values: map[string]float64{"p50": 1.5}}}}
	}
	pl := &plan.Plan{Network: geoNetwork, Workloads: []plan.WorkloadSpec{w}, Events: []plan.Event{load}}
	f, ok := phaseFloor(pl, spec, leaders, phase())
	if !ok || f.Leader != 1 || f.FloorMS != 81 || *f.PutP50MS != 84.24 || math.Abs(*f.ExcessMS-3.24) > 1e-9 || math.Abs(*f.ExcessPct-4) > 1e-9 || *f.FsyncP50MS != 1.5 {
		t.Fatalf("floor %+v, %v; want leader 1, 81 ms, p50 84.24 (+3.24 ms, +4%%), fsync 1.5", f, ok)
	}
	for name, pl := range map[string]*plan.Plan{
		"unshaped":         {Workloads: []plan.WorkloadSpec{w}, Events: []plan.Event{load}},
		"partitioned":      {Network: geoNetwork, Workloads: []plan.WorkloadSpec{w}, Events: []plan.Event{load, cut}},
		"no writer":        {Network: geoNetwork, Workloads: []plan.WorkloadSpec{{Name: "w", Mix: []plan.OpWeight{{Op: plan.OpGet, Weight: 1}}}}, Events: []plan.Event{load}},
		"no load in phase": {Network: geoNetwork, Workloads: []plan.WorkloadSpec{w}},
	} {
		if f, ok := phaseFloor(pl, spec, leaders, phase()); ok {
			t.Errorf("%s: floor %+v, want none", name, f)
		}
	}
}
