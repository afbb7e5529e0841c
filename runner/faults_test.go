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
// its leader, whatever a later fault elects.
func TestTransferMeasured(t *testing.T) {
	type seen struct {
		at     time.Duration
		leader int
	}
	for _, tc := range []struct {
		name      string
		leaders   []seen // the leader timeline; the transfer is asked at 1 s
		target    int
		unchanged bool // the store found the target leading
		want      float64
	}{
		{"moved", []seen{{0, 1}, {1200 * time.Millisecond, 2}, {9 * time.Second, 3}}, 2, false, 200},
		// The next leader seen is a later fault's election.
		{"to the leader", []seen{{0, 2}, {9 * time.Second, 3}}, 2, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := time.Now()
			coll := metrics.NewCollector(nil, nil, base)
			for i, s := range tc.leaders {
				coll.Leader().ObserveLeader(s.at, s.leader, uint64(i+2))
			}
			d := &faultDriver{c: &clusterRun{x: &execution{base: base}, coll: coll}}
			o := &faultOcc{
				spec:   plan.FaultSpec{Kind: plan.FaultTransferLeader, Start: plan.Duration(time.Second)},
				leader: tc.leaders[0].leader, targets: []int{tc.target}, unchanged: tc.unchanged,
				applied: base.Add(time.Second), watch: coll.WatchWrites(time.Second),
			}
			var f results.Failover
			d.measure(&f, o)
			if f.TimeToLeaderMS == nil {
				t.Fatalf("no time to leader, want %v ms", tc.want)
			}
			if got := *f.TimeToLeaderMS; got != tc.want {
				t.Errorf("time to leader %v ms, want %v", got, tc.want)
			}
		})
	}
}
