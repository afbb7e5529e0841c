package runner

import (
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
)

// A leadership transfer's time to a new leader counts from the request and
// leaves the old leader out; a transfer to the node that led already kept
// its leader, whatever a later fault elects. Its outage is the stretch
// without writes the handover cost, which may begin some way into the
// request (Consul's leader committed writes for 10-40 ms after it), and
// recovery is that stretch's end.
func TestTransferMeasured(t *testing.T) {
	const ms = time.Millisecond
	type seen struct {
		at     time.Duration
		leader int
	}
	type window struct{ from, to time.Duration } // writes every 5 ms in [from, to)
	for _, tc := range []struct {
		name      string
		leaders   []seen // the leader timeline; the transfer is asked at 1 s
		writes    []window
		target    int
		unchanged bool          // the store found the target leading
		done      time.Duration // when the request returned
		want      float64       // -1: no new leader seen
		// The first write after the outage, and the outage, in ms.
		wantWrite, wantFrom, wantTo float64
	}{
		{"moved", []seen{{0, 1}, {1200 * ms, 2}, {9 * time.Second, 3}}, []window{{0, 1020 * ms}, {1230 * ms, 2 * time.Second}}, 2, false, 1100 * ms, 200, 230, 1015, 1230},
		{"moved, the writes stopped at once", []seen{{0, 1}, {1100 * ms, 2}}, []window{{0, 1000 * ms}, {1090 * ms, 2 * time.Second}}, 2, false, 1050 * ms, 100, 90, 995, 1090},
		// The poll never saw the new leader (it was killed at once, say):
		// the handover was over when the request returned.
		{"moved, never seen", []seen{{0, 1}}, []window{{0, 1020 * ms}, {1230 * ms, 2 * time.Second}}, 2, false, 1100 * ms, -1, 230, 1015, 1230},
		// The next leader seen is a later fault's election, and the
		// first write sent after the request is recovery.
		{"to the leader", []seen{{0, 2}, {9 * time.Second, 3}}, []window{{0, 2 * time.Second}}, 2, true, 1010 * ms, 0, 5, 995, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := time.Now()
			coll := metrics.NewCollector([]plan.PhaseSpan{{Name: "p", Duration: plan.Duration(10 * time.Second)}},
				[]plan.WorkloadSpec{{Name: "w", Mix: []plan.OpWeight{{Op: plan.OpPut, Weight: 1}}}}, base)
			for i, s := range tc.leaders {
				coll.Leader().ObserveLeader(s.at, s.leader, uint64(i+2))
			}
			d := &faultDriver{c: &clusterRun{x: &execution{base: base}, coll: coll}}
			o := &faultOcc{
				spec:   plan.FaultSpec{Kind: plan.FaultTransferLeader, Start: plan.Duration(time.Second)},
				leader: tc.leaders[0].leader, targets: []int{tc.target}, unchanged: tc.unchanged,
				applied: base.Add(time.Second), done: base.Add(tc.done), watch: coll.WatchWrites(time.Second),
			}
			o.watch.Fix(time.Second)
			sink := coll.NewSink()
			for _, w := range tc.writes {
				for at := w.from; at < w.to; at += 5 * ms {
					// Each write is sent 5 ms before it completes.
					sink.Record(metrics.Sample{Workload: "w", Op: plan.OpPut, Intended: at - 5*ms, Start: at - 5*ms, End: at, Write: true})
				}
			}
			var f results.Failover
			d.measure(&f, o)
			switch {
			case tc.want < 0 && f.TimeToLeaderMS != nil:
				t.Errorf("time to leader %v ms, want none", *f.TimeToLeaderMS)
			case tc.want < 0:
			case f.TimeToLeaderMS == nil:
				t.Fatalf("no time to leader, want %v ms", tc.want)
			case *f.TimeToLeaderMS != tc.want:
				t.Errorf("time to leader %v ms, want %v", *f.TimeToLeaderMS, tc.want)
			}
			if f.TimeToWriteMS == nil || f.Unavailable == nil {
				t.Fatalf("time to write %v, unavailable %v; want %v ms, [%v, %v]", f.TimeToWriteMS, f.Unavailable, tc.wantWrite, tc.wantFrom, tc.wantTo)
			}
			if got, u := *f.TimeToWriteMS, *f.Unavailable; got != tc.wantWrite || u.StartMS != tc.wantFrom || u.EndMS != tc.wantTo {
				t.Errorf("time to write %v ms, unavailable [%v, %v]; want %v ms, [%v, %v]", got, u.StartMS, u.EndMS, tc.wantWrite, tc.wantFrom, tc.wantTo)
			}
		})
	}
}
