package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// partitionAndHeal is issue 16's experiment: a 5-node etcd, 8 closed-loop
// clients over every endpoint with clientv3's default connection
// settings, put/get 50/50, 2 s timeouts; two followers cut off by a drop
// for 15 s, then healed. MODE is drop or reject.
const partitionAndHeal = `
cluster "main" {
  store = "etcd"
  nodes = 5
}

workload "w" {
  mix      = { put = 0.5, get = 0.5 }
  keyspace = 1000
  clients  = 8
  timeout  = "2s"
}

phase "before" {
  duration = "6s"
  load "w" {}
}

phase "cut" {
  duration = "12s"
  load "w" {}
  fault "partition" {
    target = "minority"
    at     = "0s"
    mode   = "MODE"
  }
}

phase "after" {
  duration = "20s"
  load "w" {}
}
`

// recovery is what a partition and its heal did to a run.
type recovery struct {
	cutShare   float64   // throughput during the cut (its first 2 s left out) / before
	firstServe float64   // s from the heal to the first answer of a healed member; -1: none
	allServe   float64   // s from the heal until every healed member had answered; -1: not all did
	to90       float64   // s from the heal to the first second at 90% of the level it settled at
	settled    float64   // the after phase's throughput over its last 10 s (median of seconds) / before
	raftActive float64   // s from the heal to the last sign of a member still cut off in the logs
	afterHeal  []float64 // throughput in each whole second after the heal, as a share of before's
}

func (r recovery) String() string {
	return fmt.Sprintf("cut %.0f%% of before; after the heal: a healed member answers after %.1f s, all of them after %.1f s, 90%% of the settled throughput (%.0f%% of before) after %.1f s, raft whole after %.1f s",
		100*r.cutShare, r.firstServe, r.allServe, 100*r.settled, r.to90, r.raftActive)
}

// cutOffSign reports whether an etcd log message shows raft not yet whole:
// a cut-off member campaigning (with pre-vote it campaigns every election
// timeout until it hears the leader), or a peer's streams coming back
// (after a reject, whose resets broke them).
func cutOffSign(msg string) bool {
	return strings.HasSuffix(msg, "became pre-candidate at term "+lastField(msg)) ||
		strings.Contains(msg, "is starting a new election") || msg == "peer became active"
}

func lastField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// measureRecovery reads the figures from a run's results and node logs.
func measureRecovery(t *testing.T, res *results.Results, logs string) recovery {
	t.Helper()
	perSecond := map[int]float64{} // ok ops by second of the run
	for _, s := range res.Series {
		for _, p := range s.Points {
			perSecond[int(p.AtMS/1000)] += float64(p.Ops - p.Errors)
		}
	}
	before, cut, after := phase(t, res, "before"), phase(t, res, "cut"), phase(t, res, "after")
	mean := func(from, to float64) float64 { // over whole seconds in [from, to) s
		var sum, n float64
		for s := int(math.Ceil(from)); s < int(to); s++ {
			sum += perSecond[s]
			n++
		}
		return sum / max(n, 1)
	}
	base := mean(before.StartMS/1000+2, (before.StartMS+before.DurationMS)/1000)
	heal := after.StartMS / 1000
	r := recovery{cutShare: mean(cut.StartMS/1000+2, heal) / base, to90: -1, firstServe: -1, allServe: -1}
	if len(cut.Failovers) != 1 || len(cut.Failovers[0].Served) != 2 {
		t.Fatalf("the cut's failovers: %+v; want one partition, with when each of its 2 targets answered again", cut.Failovers)
	}
	f := cut.Failovers[0]
	for _, s := range f.Served {
		if s.TimeToServeMS != nil && (r.firstServe < 0 || *s.TimeToServeMS/1000 < r.firstServe) {
			r.firstServe = *s.TimeToServeMS / 1000
		}
	}
	if f.TimeToServeMS != nil {
		r.allServe = *f.TimeToServeMS / 1000
	}
	var afterHeal []float64
	for s := int(math.Ceil(heal)); s < int(heal+after.DurationMS/1000); s++ {
		afterHeal = append(afterHeal, perSecond[s])
		r.afterHeal = append(r.afterHeal, math.Round(100*perSecond[s]/base)/100)
	}
	// Recovery is measured against the level the run settles at, not
	// before's: on a 2-core machine under the race detector a run's
	// throughput drifts by up to a third between its first and last
	// phase, either way (a CI run measured 0.7 and 1.3 of before, steady
	// for the last 15 s, on the two backends of one test).
	settled := slices.Clone(afterHeal[max(len(afterHeal)-10, 0):])
	slices.Sort(settled)
	level := settled[len(settled)/2]
	r.settled = level / base
	for i, ops := range afterHeal {
		if ops >= 0.9*level {
			r.to90 = float64(int(math.Ceil(heal))+i) - heal
			break
		}
	}
	healAt := res.Started.Add(time.Duration(after.StartMS * float64(time.Millisecond)))
	files, _ := filepath.Glob(filepath.Join(logs, "*.log"))
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct {
				TS  time.Time `json:"ts"`
				Msg string    `json:"msg"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil || !cutOffSign(line.Msg) {
				continue
			}
			if since := line.TS.Sub(healAt).Seconds(); since >= 0 && since < 30 {
				r.raftActive = max(r.raftActive, since)
			}
		}
		f.Close()
	}
	return r
}

// TestPartitionMatchesKernel runs the partition-and-heal experiment with
// the shaper and with the kernel reference (iptables on veth links) and
// wants the shaper's figures to agree with the kernel's. Before clients
// were declared, the runner's own gRPC keepalive (10 s / 3 s, hence
// TCP_USER_TIMEOUT 3 s) made every drop look like a reject. make test runs
// the default mode, drop (two runs, about three minutes);
// SCENARIO_REFERENCE_MODES=drop,reject runs both (the README's table).
func TestPartitionMatchesKernel(t *testing.T) {
	needFabric(t)
	if testing.Short() {
		t.Skip("skipped in -short mode: two runs of a 5-node etcd per mode")
	}
	modes := []string{plan.PartitionDrop}
	if m := os.Getenv("SCENARIO_REFERENCE_MODES"); m != "" {
		modes = strings.Split(m, ",")
	}
	// Tolerances from repeated runs on a 2-core machine (README, issue 16).
	// The recovery of throughput is the noisy figure, on both backends
	// alike: under a drop, the clients' connections to the cut members
	// resume at their next TCP retransmission, whose backoff doubles
	// through the cut, so it comes anywhere from at once to about a cut's
	// length after the heal (2 to 14 s measured for a 12-15 s cut, on
	// either backend). A single pair of runs can only be held to that.
	const (
		shareTol = 0.25 // throughput share during the cut, absolute
		to90Tol  = 12.0 // seconds: the retransmission backoff a 12 s cut allows
		raftTol  = 3.0  // seconds
	)
	// The first answer of a healed member waits for the client's next
	// try: under a drop, its connection's next TCP retransmission,
	// whose backoff reaches 6.4 s within a 12 s cut; under a reject,
	// gRPC's next reconnect, whose interval (x1.6 per try from 1 s)
	// is about 6.6 s by then, jittered by 20%.
	serveTol := map[string]float64{plan.PartitionDrop: 7, plan.PartitionReject: 3}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			src := strings.Replace(partitionAndHeal, "MODE", mode, 1)
			shaped := runReference(t, src, "")
			kernel := runReference(t, src, NetworkKernel)
			t.Logf("%s, shaper: %s", mode, shaped)
			t.Logf("%s, kernel: %s", mode, kernel)
			if d := math.Abs(shaped.cutShare - kernel.cutShare); d > shareTol {
				t.Errorf("throughput during the cut: shaper %.0f%%, kernel %.0f%% of before", 100*shaped.cutShare, 100*kernel.cutShare)
			}
			// After a reject, raft takes ~18 s to be whole again on both
			// backends, and whether the clients reconnect to the healed
			// members before that (and stall on them) depends on where
			// gRPC's jittered backoff falls: recovery is at once or past
			// the phase, on either backend (README). Only a drop's is
			// compared.
			// A run that never recovers settles low: hold both to half of
			// before's throughput, which drift alone has not come near
			// (after a reject, see below, settling may come past the phase).
			for _, r := range []struct {
				name string
				rec  recovery
			}{{"shaper", shaped}, {"kernel", kernel}} {
				if mode == plan.PartitionDrop && r.rec.settled < 0.5 {
					t.Errorf("%s: throughput settled at %.0f%% of before's after the heal; by second: %v", r.name, 100*r.rec.settled, r.rec.afterHeal)
				}
			}
			if mode == plan.PartitionDrop && (shaped.to90 < 0 || kernel.to90 < 0 || math.Abs(shaped.to90-kernel.to90) > to90Tol) {
				t.Errorf("back to 90%%: shaper %.1f s, kernel %.1f s after the heal; throughput by second after the heal, as a share of before's: shaper %v, kernel %v",
					shaped.to90, kernel.to90, shaped.afterHeal, kernel.afterHeal)
			}
			if shaped.firstServe < 0 || kernel.firstServe < 0 || math.Abs(shaped.firstServe-kernel.firstServe) > serveTol[mode] {
				t.Errorf("first answer of a healed member: shaper %.1f s, kernel %.1f s after the heal", shaped.firstServe, kernel.firstServe)
			}
			if math.Abs(shaped.raftActive-kernel.raftActive) > raftTol {
				t.Errorf("raft peers active again: shaper %.1f s, kernel %.1f s after the heal", shaped.raftActive, kernel.raftActive)
			}
		})
	}
}

// runReference runs src on the shaper ("") or the kernel reference and
// measures its recovery.
func runReference(t *testing.T, src, network string) recovery {
	t.Helper()
	build, diags := dsl.Load(hclparse.NewParser(), "partition.hcl", []byte(src), dsl.VarOptions{})
	if diags.HasErrors() {
		t.Fatalf("scenario: %s", diags.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := t.TempDir()
	res, err := Run(ctx, build.Plans[0], Options{
		OutDir: out, StateDir: t.TempDir(), Network: network,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := map[string]string{"": fabric.BypassBackend, NetworkKernel: fabric.KernelBackend}[network]
	if got := res.Backend["shaper"]; got != want {
		t.Fatalf("ran on %q, want %q", got, want)
	}
	if !slices.Contains([]string{"off (clientv3 default)"}, res.Clients["w"]["keepalive_time"]) {
		t.Errorf("clients ran with keepalive %q, want clientv3's default", res.Clients["w"]["keepalive_time"])
	}
	return measureRecovery(t, res, filepath.Join(out, "logs"))
}
