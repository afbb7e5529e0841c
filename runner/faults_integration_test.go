package runner

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// These tests run real 3-node etcd clusters with faults injected along the
// timeline and assert what the results say about them.

const faultCluster = `
cluster "main" {
  store = "etcd"
  nodes = 3
  etcd {
    heartbeat_interval = "100ms"
    election_timeout   = "1000ms"
  }
}

workload "w" {
  mix      = { put = 0.7, get = 0.3 }
  keyspace = 200
  clients  = 6
  timeout  = "2s"
}
`

// runScenario compiles src and runs it, failing the test on any error.
func runScenario(t *testing.T, src string) *results.Results {
	t.Helper()
	return runScenarioWith(t, src, Options{})
}

// runScenarioWith is runScenario with options (a provider, say); the
// state directory is the test's own, and so is the output directory unless
// opts names one.
func runScenarioWith(t *testing.T, src string, opts Options) *results.Results {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped in -short mode: starts a real 3-node cluster (etcd and Consul are built from their Go modules on first use)")
	}
	build, diags := dsl.Load(hclparse.NewParser(), "test.hcl", []byte(src), dsl.VarOptions{})
	if diags.HasErrors() {
		t.Fatalf("scenario: %s", diags.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if opts.OutDir == "" {
		opts.OutDir = t.TempDir()
	}
	state, out := t.TempDir(), opts.OutDir
	opts.StateDir = state
	opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	res, err := Run(ctx, build.Plans[0], opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if runs, _ := os.ReadDir(filepath.Join(state, "runs")); len(runs) > 0 {
		t.Errorf("left behind in the state directory: %v", runs)
	}
	for k, v := range res.Notes {
		if strings.HasPrefix(k, "node.") || k == "correctness" {
			t.Errorf("note %s: %s", k, v)
		}
	}
	if c := res.Correctness; c == nil || c.Linearizable == nil || !*c.Linearizable || c.LostWrites == nil || *c.LostWrites != 0 {
		t.Errorf("correctness: %+v", c)
	}
	checkShaperReads(t, res, out)
	return res
}

// checkShaperReads checks that a run through the shaper saved its check of
// its own reads, made at teardown, in results.json, and that the shaper
// lost no frame.
func checkShaperReads(t *testing.T, res *results.Results, out string) {
	t.Helper()
	if res.Backend["network"] != "namespaces" || res.Backend["shaper"] == fabric.KernelBackend {
		return
	}
	saved, err := results.Read(filepath.Join(out, results.FileName))
	if err != nil {
		t.Fatal(err)
	}
	note := saved.Notes[results.NoteShaperReads]
	if !strings.HasPrefix(note, "the shaper read all ") || note != res.Notes[results.NoteShaperReads] {
		t.Errorf("results.json's note on the shaper's reads %q (returned %q), want that it read all its devices handed it", note, res.Notes[results.NoteShaperReads])
	}
	// junit.xml, written with results.json before the teardown, is
	// written again with it.
	junit, err := os.ReadFile(filepath.Join(out, results.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(junit), `name="note.`+results.NoteShaperReads+`" value="the shaper read all `) {
		t.Errorf("junit.xml lacks the note on the shaper's reads:\n%s", junit)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func phase(t *testing.T, res *results.Results, name string) *results.Phase {
	t.Helper()
	p, ok := res.Phase(name)
	if !ok {
		t.Fatalf("no phase %q in the results", name)
	}
	return p
}

func failover(t *testing.T, p *results.Phase, n int) []results.Failover {
	t.Helper()
	if len(p.Failovers) != n {
		t.Fatalf("phase %s: %d failovers, want %d: %+v", p.Name, len(p.Failovers), n, p.Failovers)
	}
	for _, f := range p.Failovers {
		if f.Error != "" || f.AppliedMS == nil {
			t.Errorf("fault %s: applied %v, error %q", f.FaultID, f.AppliedMS, f.Error)
		}
		// A graceful stop takes effect when the node has exited, which
		// etcd takes about a second to do; the rest act at once.
		limit := 500.0
		if f.Kind == plan.FaultStop || f.Kind == plan.FaultRestart {
			limit = 5000
		}
		if f.LagMS != nil && *f.LagMS > limit {
			t.Errorf("fault %s took effect %.0f ms late", f.FaultID, *f.LagMS)
		} else if f.LagMS != nil {
			t.Logf("fault %s took effect %.0f ms late", f.FaultID, *f.LagMS)
		}
	}
	return p.Failovers
}

// TestLeaderKill and TestStopRestartAndRepetition run side by side with
// each other (t.Parallel), once the tests that run alone are done: they
// hold to seconds (elections, restarts, first writes) and faults landing
// within 500 ms, as the stores' cases do (see storeCases). The others here
// hold to less (a pause's 1.3-2 s of unknown leader, latency under disk
// contention) and run alone.
func TestLeaderKill(t *testing.T) {
	t.Parallel()
	res := runScenario(t, faultCluster+`
phase "before" {
  duration = "4s"
  load "w" {}
  fault "transfer_leader" {
    target = "follower"
    at     = "1s"
  }
}

phase "kill" {
  duration = "10s"
  load "w" {}
  fault "kill" {
    target        = "leader"
    at            = "2s"
    restart_after = "5s"
  }
}

phase "after" {
  duration = "3s"
  load "w" {}
}
`)
	// The transfer hands the leadership over without an election timeout:
	// writes pause for the new leader's election round and its first
	// commit, where a kill stops them for at least the 800 ms below.
	tr := failover(t, phase(t, res, "before"), 1)[0]
	if len(tr.Targets) != 1 || tr.TimeToLeaderMS == nil || *tr.TimeToLeaderMS > 800 {
		t.Errorf("transfer to %v: the new leader seen after %v ms, want one target, seen within 800 ms", tr.Targets, tr.TimeToLeaderMS)
	} else if next := nextLeader(res, *tr.AppliedMS); plan.NodeName(next) != tr.Targets[0] {
		t.Errorf("transfer to %s: %s led next", tr.Targets[0], plan.NodeName(next))
	}
	if tr.Unavailable == nil {
		t.Errorf("no write after the transfer")
	} else if gap := tr.Unavailable.EndMS - tr.Unavailable.StartMS; gap > 800 {
		t.Errorf("write gap %.0f ms around the transfer, want under 800 ms (a kill's least)", gap)
	} else {
		t.Logf("the transfer to %s: leader seen after %.0f ms, write gap %.0f ms", tr.Targets[0], *tr.TimeToLeaderMS, gap)
	}

	kill := phase(t, res, "kill")
	f := failover(t, kill, 1)[0]
	if kill.Elections < 1 {
		t.Errorf("elections = %d, want >= 1", kill.Elections)
	}
	if f.TimeToLeaderMS == nil || *f.TimeToLeaderMS > 5000 {
		t.Errorf("time to a new leader = %v ms, want one within 5 s", f.TimeToLeaderMS)
	}
	// Followers campaign a randomised 1-2 election timeouts after the last
	// heartbeat they got, so writes stop for at least about one election
	// timeout less a heartbeat, and on a healthy machine not for seconds.
	if f.Unavailable == nil {
		t.Fatalf("no write after the kill")
	}
	if gap := f.Unavailable.EndMS - f.Unavailable.StartMS; gap < 800 || gap > 5000 {
		t.Errorf("write gap %.0f ms, want between 800 ms (election timeout less a heartbeat) and 5 s", gap)
	}
	if f.RecoveredMS == nil {
		t.Errorf("killed leader was not restarted")
	}
	if a := phase(t, res, "after").Availability; a == nil || *a < 0.99 {
		t.Errorf("availability after the restart = %v, want >= 0.99", a)
	}
}

// nextLeader is the first leader res observed after offset ms other than
// the one in office then, 0 if none.
func nextLeader(res *results.Results, ms float64) int {
	old := 0
	for _, o := range res.Leader {
		switch {
		case o.AtMS <= ms:
			old = o.Leader
		case o.Leader != 0 && o.Leader != old:
			return o.Leader
		}
	}
	return 0
}

// TestFollowerPause pauses a follower for longer than the election
// timeout. The cluster must not notice: no election, the leader unchanged,
// writes committed all along. Clients do notice: clientv3 balances requests
// over every member, so those sent to the paused one hang until their
// timeout; the test asserts that this is all the run records as failures.
func TestFollowerPause(t *testing.T) {
	res := runScenario(t, faultCluster+`
phase "pause" {
  duration = "8s"
  load "w" {}
  fault "pause" {
    target   = "follower"
    at       = "2s"
    duration = "4s"
  }
}

phase "after" {
  duration = "3s"
  load "w" {}
}

phase "all-paused" {
  duration = "4s"
  load "w" {}
  fault "pause" {
    target   = "all"
    at       = "1s"
    duration = "1500ms"
  }
}

phase "handover" {
  duration = "5s"
  load "w" {}
  fault "transfer_leader" {
    name   = "to-1"
    target = 1
    at     = "500ms"
  }
  fault "pause" {
    target   = 3
    at       = "1500ms"
    duration = "2500ms"
  }
  fault "transfer_leader" {
    name   = "to-2"
    target = 2
    at     = "2500ms"
  }
  fault "kill" {
    target        = "leader"
    at            = "2650ms"
    restart_after = "1s"
  }
}
`)
	p := phase(t, res, "pause")
	f := failover(t, p, 1)[0]
	if f.RecoveredMS == nil {
		t.Errorf("paused follower was not resumed")
	}
	if p.Elections != 0 {
		t.Errorf("elections = %d, want 0: a paused follower must not cost the leader", p.Elections)
	}
	if p.NoLeaderMS != 0 {
		t.Errorf("no leader for %.0f ms, want 0", p.NoLeaderMS)
	}
	for class, n := range p.Total.ErrorsBy {
		if class != plan.ErrTimeout && n > 0 {
			t.Errorf("%d %s errors: only requests stuck on the paused member may fail, by timeout", n, class)
		}
	}
	if p.Availability == nil {
		t.Fatal("no availability")
	}
	t.Logf("availability during the pause %.2f%%, longest write gap %.0f ms", 100**p.Availability, *p.MaxGapMS)
	if a := phase(t, res, "after").Availability; a == nil || *a < 0.999 {
		t.Errorf("availability after the resume = %v, want no loss", a)
	}

	// With every member paused no one answers the leader poll: who led is
	// unknown for the pause, give or take a fast poll's interval (10 ms)
	// at its start and the resume's lag at its end, and that is not time
	// without a leader. Measured 1474 ms with polls every 100 ms.
	all := phase(t, res, "all-paused")
	t.Logf("all paused for 1.5 s: leader unknown %.0f ms, no leader %.0f ms, elections %d", all.LeaderUnknownMS, all.NoLeaderMS, all.Elections)
	if all.LeaderUnknownMS < 1300 || all.LeaderUnknownMS > 2000 {
		t.Errorf("leader unknown for %.0f ms while every member was paused for 1500 ms, want 1300-2000", all.LeaderUnknownMS)
	}

	// A paused member's status question hangs until its timeout (500 ms),
	// and the leader timeline's states wait for it. A kill of the leader
	// 150 ms after a transfer went by the states, and so killed the leader
	// before the transfer whenever the paused member's question had not
	// timed out since: it must go by the members' latest answers.
	byID := map[string]results.Failover{}
	for _, f := range failover(t, phase(t, res, "handover"), 4) {
		byID[f.FaultID] = f
	}
	to2, kill := byID["handover/to-2"], byID["handover/kill"]
	if !slices.Equal(to2.Targets, []string{"n2"}) || !slices.Equal(kill.Targets, []string{"n2"}) {
		t.Errorf("leadership handed to %v while n3 was paused, then the leader killed 150 ms later was %v, want n2", to2.Targets, kill.Targets)
	} else {
		t.Logf("leadership handed to n2 in %s ms while n3 was paused, then the leader killed 150 ms later was n2", fmtOpt(to2.TimeToLeaderMS))
	}
}

// TestLeaderPause pauses the leader past the election timeout and holds
// the time the runner saw the next leader to the time that leader's own
// log says it became leader. A paused node answers no status poll, and a
// poll that waited for every node saw the new leader up to its 500 ms
// timeout late; each node is now asked on its own, every 10 ms after a
// fault.
func TestLeaderPause(t *testing.T) {
	out := t.TempDir()
	res := runScenarioWith(t, faultCluster+`
phase "pause" {
  duration = "8s"
  load "w" {}
  fault "pause" {
    target   = "leader"
    at       = "2s"
    duration = "3s"
  }
}
`, Options{OutDir: out})
	f := failover(t, phase(t, res, "pause"), 1)[0]
	if f.TimeToLeaderMS == nil {
		t.Fatalf("no new leader seen after the pause: %+v", f)
	}
	next := nextLeader(res, *f.AppliedMS)
	if next == 0 || len(f.Targets) != 1 || plan.NodeName(next) == f.Targets[0] {
		t.Fatalf("the leader after pausing %v was n%d", f.Targets, next)
	}
	elected := becameLeader(t, filepath.Join(out, "logs", plan.NodeName(next)+".log"), res.Started.Add(time.Duration(*f.AppliedMS*float64(time.Millisecond))))
	// The log line is written as the node becomes leader, before it can
	// answer a poll; the poll comes at most fastPollInterval after, plus
	// the time its answer takes on a busy machine.
	byLog := float64(elected.Sub(res.Started))/float64(time.Millisecond) - *f.AppliedMS
	if late := *f.TimeToLeaderMS - byLog; late < -5 || late > 75 {
		t.Errorf("time to leader %.1f ms, but %s's log has it leading %.1f ms after the pause: %.1f ms apart, want within 0-75 ms", *f.TimeToLeaderMS, plan.NodeName(next), byLog, late)
	} else {
		t.Logf("time to leader %.1f ms, by %s's log %.1f ms", *f.TimeToLeaderMS, plan.NodeName(next), byLog)
	}
}

// becameLeader returns when the etcd log at path says its member became
// leader, the first time at or after after.
func becameLeader(t *testing.T, path string, after time.Time) time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		var e struct {
			TS  time.Time `json:"ts"`
			Msg string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || !strings.Contains(e.Msg, "became leader at term") {
			continue
		}
		if !e.TS.Before(after) {
			return e.TS
		}
	}
	t.Fatalf("%s: no \"became leader\" after %v", path, after)
	return time.Time{}
}

func TestStopRestartAndRepetition(t *testing.T) {
	t.Parallel() // see TestLeaderKill
	res := runScenario(t, faultCluster+`
phase "stop" {
  duration = "6s"
  load "w" {}
  fault "stop" {
    target        = "follower"
    at            = "1s"
    restart_after = "3s"
  }
}

phase "restart" {
  duration = "5s"
  load "w" {}
  fault "restart" {
    target = "leader"
    at     = "1s"
  }
}

phase "repeat" {
  duration = "9s"
  load "w" {}
  fault "kill" {
    target        = "random"
    at            = "1s"
    every         = "3s"
    restart_after = "1500ms"
  }
}
`)
	failover(t, phase(t, res, "stop"), 1)
	restart := failover(t, phase(t, res, "restart"), 1)[0]
	if restart.TimeToWriteMS == nil || *restart.TimeToWriteMS > 5000 {
		t.Errorf("restart of the leader: first write after %v ms", restart.TimeToWriteMS)
	}
	repeat := failover(t, phase(t, res, "repeat"), 3)
	for i, f := range repeat {
		if want := "repeat/kill#" + string(rune('1'+i)); f.FaultID != want {
			t.Errorf("occurrence %d is %s, want %s", i, f.FaultID, want)
		}
		if f.RecoveredMS == nil || *f.RecoveredMS-*f.AppliedMS < 1000 {
			t.Errorf("%s: applied %v, recovered %v: want a restart 1.5 s later", f.FaultID, *f.AppliedMS, f.RecoveredMS)
		}
	}
}

func TestDiskContention(t *testing.T) {
	// One CI run saw a 53 ms p99 in a 5 s quiet phase that was the first
	// of a new cluster, above the contended phase's 32 ms; alone the test
	// passed every time. So the baseline now leaves out the cluster's first
	// seconds (connections, the first WAL segment, the runner's start), and
	// is long enough that one stall is not its p99.
	res := runScenario(t, strings.Replace(faultCluster, `mix      = { put = 0.7, get = 0.3 }`, `mix      = { put = 1 }`, 1)+`
phase "warm" {
  duration = "2s"
  load "w" {}
}

phase "quiet" {
  duration = "8s"
  load "w" {}
}

phase "contended" {
  duration = "8s"
  load "w" {}
  fault "disk" {
    target      = "leader"
    block_size  = "1MiB"
    fsync       = true
    parallelism = 2
    at          = "1s"
    duration    = "6s"
  }
}
`+throttledPhase(t))
	f := failover(t, phase(t, res, "contended"), 1)[0]
	if f.Disk == nil || f.Disk.Writes == 0 || f.Disk.FsyncP99MS <= 0 {
		t.Fatalf("disk contender stats: %+v", f.Disk)
	}
	quiet, contended := phase(t, res, "quiet").Total.Latency, phase(t, res, "contended").Total.Latency
	if quiet == nil || contended == nil {
		t.Fatalf("no latencies: quiet %v, contended %v", quiet, contended)
	}
	t.Logf("put p99: quiet %.1f ms, contended %.1f ms (%.2fx); contender fsync p99 %.1f ms",
		quiet.P99MS, contended.P99MS, contended.P99MS/quiet.P99MS, f.Disk.FsyncP99MS)
	if contended.P99MS <= quiet.P99MS {
		t.Errorf("put p99 did not rise under disk contention: quiet %.1f ms, contended %.1f ms", quiet.P99MS, contended.P99MS)
	}

	if faults.ThrottleAvailable() != nil {
		return
	}
	// The leader's own WAL writes limited to 256 KiB/s: etcd syncs every
	// batch, so the throttle applies and commits slow down.
	tf := failover(t, phase(t, res, "throttled"), 1)[0]
	if tf.Disk == nil || tf.Disk.ThrottleBPS != 256<<10 || tf.Disk.Writes != 0 {
		t.Fatalf("throttle stats: %+v", tf.Disk)
	}
	throttled := phase(t, res, "throttled").Total
	t.Logf("leader throttled to 256 KiB/s: %.1f KiB/s written through it, put rate %.0f/s (quiet %.0f/s), p99 %.1f ms; note %q",
		float64(tf.Disk.ThrottledBytes)/4/1024, throttled.Throughput, phase(t, res, "quiet").Total.Throughput, throttled.Latency.P99MS, tf.Disk.ThrottleNote)
	if tf.Disk.ThrottledBytes == 0 || tf.Disk.ThrottleNote != "" {
		t.Errorf("the throttle was not effective on etcd's WAL: %+v", tf.Disk)
	}
	if throttled.Latency.P99MS <= quiet.P99MS {
		t.Errorf("put p99 did not rise with the leader's writes throttled: quiet %.1f ms, throttled %.1f ms", quiet.P99MS, throttled.Latency.P99MS)
	}
}

// throttledPhase throttles the leader's own writes, where this machine can.
func throttledPhase(t *testing.T) string {
	if err := faults.ThrottleAvailable(); err != nil {
		t.Logf("throttled phase left out: %v", err)
		return ""
	}
	return `
phase "throttled" {
  duration = "6s"
  load "w" {}
  fault "disk" {
    target      = "leader"
    throttle    = "256KiB/s"
    parallelism = 0
    at          = "1s"
    duration    = "4s"
  }
}
`
}
