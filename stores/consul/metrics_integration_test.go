//go:build linux

package consul

import (
	"context"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

// serverMetricsContract scrapes every server of a running cluster, writes
// keys, scrapes again and checks that the write path's metrics grew; then
// that a scrape of an address where no server listens fails quickly.
func serverMetricsContract(t *testing.T, ctx context.Context, eps []stores.Endpoint) {
	d := Driver()
	s := storetest.NewMetricScraper(t, d, eps)
	leader := storetest.WaitForLeader(t, ctx, d, eps)

	before := storetest.ScrapeAll(t, ctx, s, eps)
	// The leader has measured every timer; a follower has never
	// committed or dispatched (unless it led before).
	for _, m := range d.ServerMetrics {
		if _, ok := before[leader].Values[m.Name]; !ok {
			t.Errorf("leader %s does not report %s (%s)", plan.NodeName(leader), m.Name, m.Source)
		}
	}
	const writes = 50
	storetest.PutKeys(t, ctx, d, eps, "/metrics/%d", writes)
	// A follower stores an entry when it receives it, which may be just
	// after the put returned.
	after := storetest.WaitForGrowth(t, ctx, s, eps, before, 10*time.Second, "every server's log writes to grow", storetest.CountsGrew("fsync"))
	b, a := before[leader].Values, after[leader].Values
	for _, name := range []string{"commit", "kv_apply"} {
		if g := a[name].Count - b[name].Count; g < writes {
			t.Errorf("leader %s: %s count grew by %v; want at least %d", plan.NodeName(leader), name, g, writes)
		}
		if a[name].Sum <= b[name].Sum {
			t.Errorf("leader %s: %s sum %v, before %v", plan.NodeName(leader), name, a[name].Sum, b[name].Sum)
		}
	}
	if g := a["proposals_committed"].Value - b["proposals_committed"].Value; g < writes {
		t.Errorf("leader %s: proposals_committed grew by %v; want at least %d", plan.NodeName(leader), g, writes)
	}
	if a["leader_changes"].Value < 1 {
		t.Errorf("leader %s: leader_changes %v; want at least 1", plan.NodeName(leader), a["leader_changes"].Value)
	}
	for _, ep := range eps {
		b, a := before[ep.Node].Values, after[ep.Node].Values
		t.Logf("%s after %d puts: fsync count %v -> %v, sum %.2fms -> %.2fms; commit count %v -> %v, sum %.2fms; kv_apply count %v -> %v; proposals_committed %v -> %v; leader_changes %v; elections %v",
			plan.NodeName(ep.Node), writes, b["fsync"].Count, a["fsync"].Count, b["fsync"].Sum, a["fsync"].Sum,
			b["commit"].Count, a["commit"].Count, a["commit"].Sum, b["kv_apply"].Count, a["kv_apply"].Count,
			b["proposals_committed"].Value, a["proposals_committed"].Value, a["leader_changes"].Value, a["elections"].Value)
	}

	storetest.CheckDeadScrapeFails(t, d)
}
