package runner

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// geoCluster places three etcd nodes in three regions with a declared RTT
// matrix and the clients in us-east.
const geoCluster = `
cluster "main" {
  store     = "etcd"
  nodes     = 3
  placement = ["us-east", "eu-west", "ap-south"]
  etcd {
    heartbeat_interval = "100ms"
    election_timeout   = "1500ms"
  }
}

network {
  within {
    rtt = "1ms"
  }
  link "us-east" "eu-west" {
    rtt = "80ms"
  }
  link "us-east" "ap-south" {
    rtt = "190ms"
  }
  link "eu-west" "ap-south" {
    rtt = "150ms"
  }
}

workload "w" {
  region      = "us-east"
  mix         = { put = 1 }
  consistency = "linearizable"
  keyspace    = 200
  clients     = 20
  timeout     = "3s"
  endpoints   = "local" # n1, in us-east with the clients
}
`

// geoElectionBound is how soon, in ms, geoCluster must have a new leader
// after losing one. An election round there takes the 1.5 s timeout plus
// up to as much again of randomisation, and with 80-190 ms between
// candidates a split vote sends it round again: 6.8 s was seen once in
// containers, and 10.7 s once (a cold CI run of 2026-11-26, the isolated
// leader of TestDockerEtcd, a second after its disk throttle ended; the
// cause was not found, the run's logs being gone with it). Four rounds.
const geoElectionBound = 12000.0

// geoRTT is geoCluster's RTT matrix in ms, by node index (1-based); the
// clients sit in us-east with node 1.
var geoRTT = map[[2]int]float64{
	{1, 1}: 1, {2, 2}: 1, {3, 3}: 1,
	{1, 2}: 80, {2, 1}: 80, {1, 3}: 190, {3, 1}: 190, {2, 3}: 150, {3, 2}: 150,
}

func needFabric(t *testing.T) {
	t.Helper()
	if err := fabric.Available(); err != nil {
		t.Skipf("needs network namespaces: %v", err)
	}
}

// TestGeoWriteLatency checks the measured put latency against what raft
// implies. The clients talk to n1, in their region (1 ms away); n1 forwards
// a put to the leader unless it leads, and the leader commits once its
// nearest follower has the entry (a majority of 3). So a put costs the
// client's RTT to n1, plus n1's RTT to the leader, plus the leader's RTT to
// its nearest follower, plus an fsync and processing, which on this machine
// take a few milliseconds. It runs with the shaper's schedulers and the
// dispatcher sleeping until each due time, and again spinning through the
// last 200 µs of it (Options.BusyPoll).
func TestGeoWriteLatency(t *testing.T) {
	needFabric(t)
	for _, busyPoll := range []time.Duration{0, 200 * time.Microsecond} {
		t.Run(fmt.Sprintf("busy-poll=%v", busyPoll), func(t *testing.T) { testGeoWriteLatency(t, busyPoll) })
	}
}

func testGeoWriteLatency(t *testing.T, busyPoll time.Duration) {
	res := runScenarioWith(t, geoCluster+`
phase "steady" {
  duration = "10s"
  load "w" {
    rate = 20
  }
}

check "links as declared" {
  condition = (phase.steady.network_pair["client-us-east"].n1.packets > 100 && phase.steady.network_pair.n1.n2.dropped == 0 &&
    run.network_pair.n2.n1.lost_share == 0 && run.network_pair.n1.n3.late_p99_ms < 1000)
}
`, Options{BusyPoll: busyPoll})
	checkGeoLatency(t, res, "steady")
	if got, want := res.Backend["busy_poll"], map[bool]string{true: busyPoll.String()}[busyPoll > 0]; got != want {
		t.Errorf("backend.busy_poll = %q, want %q", got, want)
	}
	switch note := res.Notes[results.NoteBusyPoll]; {
	case busyPoll == 0 && note != "":
		t.Errorf("notes.busy_poll = %q without a busy-poll window", note)
	case busyPoll > 0 && !strings.Contains(note, busyPoll.String()):
		t.Errorf("notes.busy_poll = %q, want it to name the %v window", note, busyPoll)
	}
	// A check reads the pairs, as results.json has them.
	if len(res.Checks) != 1 || !res.Checks[0].Passed {
		t.Errorf("checks %+v, want the pairs' check passed", res.Checks)
	}
}

// checkGeoLatency checks a phase of geoCluster with a steady, light put
// load against the put latency raft implies there.
func checkGeoLatency(t *testing.T, res *results.Results, phaseName string) {
	t.Helper()
	if res.Backend["network"] != "namespaces" {
		t.Fatalf("backend %v: the run did not use the fabric", res.Backend)
	}
	p := phase(t, res, phaseName)
	leader, ok := leaderOver(res.Leader, p.StartMS, p.StartMS+p.DurationMS)
	if !ok {
		if !slices.ContainsFunc(res.Leader, func(o results.LeaderObservation) bool { return o.Leader != 0 }) {
			t.Fatal("no leader observed")
		}
		t.Skipf("no single leader over the phase (%+v): no single expectation", res.Leader)
	}
	nearest := 1e9
	for f := 1; f <= 3; f++ {
		if f != leader {
			nearest = min(nearest, geoRTT[[2]int{leader, f}])
		}
	}
	forward := 0.0
	if leader != 1 {
		forward = geoRTT[[2]int{1, leader}]
	}
	expected := 1 + forward + nearest
	lat := p.Total.Latency
	if lat == nil {
		t.Fatal("no latency")
	}
	// Below the RTTs is impossible. Above them, the path adds the
	// follower's fsync before its ack (the store's own histogram says how
	// long) and processing that grows with the path: 4-8% of the floor
	// measured on this machine (issue 21), +28 ms on the 341 ms floor in
	// containers in a cold CI run. More than that means the shaper or the
	// cluster adds delay of its own.
	fsync := 0.0
	if st, ok := p.Server["fsync"]; ok {
		fsync = st.Values["p99"]
	}
	slack := max(25, 0.1*expected) + fsync
	t.Logf("leader n%d: expected put p50 >= %.0f ms (client-n1 RTT 1 + n1-leader RTT %.0f + leader-nearest follower RTT %.0f), measured p50 %.1f ms (+%.1f%%), p99 %.1f ms; store's fsync p99 %.1f ms",
		leader, expected, forward, nearest, lat.P50MS, 100*(lat.P50MS/expected-1), lat.P99MS, fsync)
	if f := p.WriteFloor; f == nil || f.Leader != leader || f.FloorMS != expected {
		t.Errorf("the results' write floor %+v, want %.0f ms with n%d leading", f, expected, leader)
	}
	// Twenty puts a second never fill a device's queue of 500 frames.
	if p.NetworkDrops == nil || *p.NetworkDrops != 0 || res.Run.NetworkDrops == nil {
		t.Errorf("network drops: phase %v, run %v; want 0 in both", p.NetworkDrops, res.Run.NetworkDrops)
	}
	// Every put crosses shaped links at least twice: the leader's
	// appends to both followers.
	if f := p.NetworkFrames; f == nil || *f < 2*p.Total.OK || res.Run.NetworkFrames == nil || *res.Run.NetworkFrames < *f {
		t.Errorf("network frames: phase %v, run %v; want at least 2 a put (%d puts) in the phase, and at least as many in the run", p.NetworkFrames, res.Run.NetworkFrames, p.Total.OK)
	}
	// Every pair here has a delay, so the shaper holds every frame it
	// reads; a phase's two counts differ only by the frames in flight at
	// its ends. The shaper's wake-ups take tens of µs on a quiet machine.
	if l, f := p.NetworkLate, p.NetworkFrames; l == nil || f == nil || float64(l.Packets) < 0.9*float64(*f)-100 || float64(l.Packets) > 1.1*float64(*f)+100 ||
		l.P50MS > 2 || l.P50MS > l.P99MS || l.P99MS > l.MaxMS || res.Run.NetworkLate == nil {
		t.Errorf("shaper lateness: phase %+v (frames %v), run %+v; want about one packet held a frame read, p50 under 2 ms, p50 <= p99 <= max", l, f, res.Run.NetworkLate)
	} else {
		t.Logf("shaper lateness over the phase: %+v", *l)
		checkPairsLate(t, p)
	}
	if lat.P50MS < expected || lat.P50MS > expected+slack {
		t.Errorf("put p50 %.1f ms, want between %.0f and %.0f ms (the floor, plus the larger of 25 ms and 10%%, plus the fsync p99)", lat.P50MS, expected, expected+slack)
	}
}

// regionTransferPhase hands geoCluster's leadership to region eu-west,
// whose only node is n2, then to ap-south, n3 (checkRegionTransfer): the
// second always moves it, whoever led before the first.
const regionTransferPhase = `
phase "transfer" {
  duration = "6s"
  load "w" {
    rate = 20
  }
  fault "transfer_leader" {
    region = "eu-west"
    at     = "1s"
  }
  fault "transfer_leader" {
    region = "ap-south"
    at     = "3500ms"
  }
}
`

// checkRegionTransfer checks regionTransferPhase: each transfer's target
// is its region's node, and leads next (or led already), seen within an
// election timeout of the request: a transfer waits for none.
func checkRegionTransfer(t *testing.T, res *results.Results) {
	t.Helper()
	const bound = 1500 // geoCluster's election timeout
	for i, f := range failover(t, phase(t, res, "transfer"), 2) {
		target := i + 2
		switch {
		case !slices.Equal(f.Targets, []string{plan.NodeName(target)}):
			t.Errorf("transfer %s: targets %v, want [%s]", f.FaultID, f.Targets, plan.NodeName(target))
		case f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > bound:
			t.Errorf("transfer to %s: the new leader seen after %s ms, want within %d ms", f.Targets[0], fmtOpt(f.TimeToLeaderMS), bound)
		case *f.TimeToLeaderMS == 0 && i == 0:
			t.Logf("transfer to %s: it led already", f.Targets[0])
		case *f.TimeToLeaderMS == 0:
			t.Errorf("transfer to %s: kept, but %s led", f.Targets[0], plan.NodeName(target-1))
		case nextLeader(res, *f.AppliedMS) != target:
			t.Errorf("transfer to %s: n%d led next", f.Targets[0], nextLeader(res, *f.AppliedMS))
		default:
			t.Logf("transfer to %s: seen leading %s ms after the request, first write after %s ms", f.Targets[0], fmtOpt(f.TimeToLeaderMS), fmtOpt(f.TimeToWriteMS))
		}
	}
}

// TestPartitions cuts one follower off; the majority keeps serving.
// Then the leader is isolated, and the rest elect a new one.
func TestPartitions(t *testing.T) {
	needFabric(t)
	res := runScenario(t, faultCluster+`
phase "minority" {
  duration = "8s"
  load "w" {}
  fault "partition" {
    target   = "follower"
    at       = "2s"
    duration = "4s"
  }
}

phase "leader" {
  duration = "12s"
  load "w" {}
  fault "partition" {
    target   = "leader"
    at       = "2s"
    duration = "6s"
  }
}
`)
	minority := phase(t, res, "minority")
	failover(t, minority, 1)
	if minority.Elections != 0 {
		t.Errorf("a cut-off follower caused %d elections", minority.Elections)
	}
	leader := phase(t, res, "leader")
	f := failover(t, leader, 1)[0]
	if f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > 5000 {
		t.Errorf("isolated leader: new leader after %v ms, want within 5 s", f.TimeToLeaderMS)
	}
	if leader.Elections < 1 {
		t.Errorf("isolating the leader caused no election")
	}
	if f.LagMS == nil || *f.LagMS > 100 {
		t.Errorf("partition applied %s ms late, want within 100 ms", fmtOpt(f.LagMS))
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), fmt.Sprintf("scn-%d-", os.Getpid())) {
			t.Errorf("namespace left behind: %s", e.Name())
		}
	}
}

// fmtOpt formats a figure the results may leave out, to six significant
// digits: a time in milliseconds to a tenth or better, an availability
// such as 0.9876 whole.
func fmtOpt(v *float64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatFloat(*v, 'g', 6, 64)
}

// checkPairsLate requires a phase's per-pair figures to add up to its
// lateness, for a network where every pair has a delay: each pair holds
// every packet it hands on, and nothing is dropped. A packet is counted as
// handed on before its write and timed after it, so one being written as
// the phase starts or ends may fall in the phase for one count and not the
// other.
func checkPairsLate(t *testing.T, p *results.Phase) {
	t.Helper()
	var held int64
	for _, pr := range p.NetworkPairs {
		if pr.Late != nil {
			held += pr.Late.Packets
		}
		if pr.From == pr.To || pr.Late == nil || pr.Late.Packets < pr.Packets-2 || pr.Late.Packets > pr.Packets+2 || pr.Lost+pr.Cut+pr.Dropped != 0 ||
			pr.Late.P50MS > pr.Late.P99MS || pr.Late.P99MS > pr.Late.MaxMS || pr.Late.MaxMS > p.NetworkLate.MaxMS {
			t.Errorf("pair %+v (late %+v): want every packet held (within one at each end of the phase), none dropped, p50 <= p99 <= max <= the phase's %v ms", pr, pr.Late, p.NetworkLate.MaxMS)
		}
	}
	if len(p.NetworkPairs) < 6 || held != p.NetworkLate.Packets {
		t.Errorf("%d pairs holding %d packets, want at least the members' 6 pairs, holding the phase's %d", len(p.NetworkPairs), held, p.NetworkLate.Packets)
	}
}
