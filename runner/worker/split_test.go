package worker

import (
	"testing"

	"github.com/coordlab/scenario/plan"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		clientsFrom, clientsTo, n int
		rate                      float64
	}{
		{10, 10, 3, 100}, {1, 7, 2, 0}, {2, 2, 4, 30}, {0, 0, 2, 1000},
	} {
		var from, to int
		var rate float64
		for i := range tc.n {
			s := Split(plan.LoadSpec{ClientsFrom: tc.clientsFrom, ClientsTo: tc.clientsTo, RateFrom: tc.rate, RateTo: tc.rate}, i, tc.n)
			from += s.ClientsFrom
			to += s.ClientsTo
			rate += s.RateFrom
			if s.ClientsTo > tc.clientsTo/tc.n+1 {
				t.Errorf("%+v: worker %d takes %d clients, more than its share", tc, i, s.ClientsTo)
			}
		}
		if from != tc.clientsFrom || to != tc.clientsTo || rate < tc.rate-1e-9 || rate > tc.rate+1e-9 {
			t.Errorf("%+v: shares add up to clients %d..%d, rate %v", tc, from, to, rate)
		}
	}
	w := SplitWorkload(plan.WorkloadSpec{Clients: 3}, 3, 4)
	if w.Clients != 1 {
		t.Errorf("a worker beyond the clients gets %d clients, want 1 (an engine needs one)", w.Clients)
	}
}
