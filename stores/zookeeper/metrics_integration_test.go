//go:build linux

package zookeeper

import (
	"context"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

// serverMetricsContract scrapes every node of a running ensemble, writes
// keys, scrapes again and checks that the write path's metrics grew; then
// that a scrape of an address where no node listens fails quickly.
func serverMetricsContract(t *testing.T, ctx context.Context, eps []stores.Endpoint) {
	d := Driver()
	s := storetest.NewMetricScraper(t, d, eps)
	leader := storetest.WaitForLeader(t, ctx, d, eps)

	before := storetest.ScrapeAll(t, ctx, s, eps)
	for n, snap := range before {
		for _, m := range d.ServerMetrics {
			if _, ok := snap.Values[m.Name]; !ok {
				t.Errorf("%s does not report %s (%s)", plan.NodeName(n), m.Name, m.Source)
			}
		}
	}
	const writes = 50
	storetest.PutKeys(t, ctx, d, eps, "metrics/%d", writes)
	// A follower fsyncs a proposal when it receives it, which may be just
	// after the write returned.
	after := storetest.WaitForGrowth(t, ctx, s, eps, before, 10*time.Second, "every node's txn log fsyncs to grow", storetest.CountsGrew("fsync"))
	grew := func(node int, name string, field func(stores.MetricValue) float64) float64 {
		return field(after[node].Values[name]) - field(before[node].Values[name])
	}
	count := func(v stores.MetricValue) float64 { return v.Count }
	value := func(v stores.MetricValue) float64 { return v.Value }
	for _, name := range []string{"commit", "proposals_committed"} {
		f := count
		if name == "proposals_committed" {
			f = value
		}
		if g := grew(leader, name, f); g < writes {
			t.Errorf("leader %s: %s grew by %v; want at least %d", plan.NodeName(leader), name, g, writes)
		}
	}
	if g := grew(leader, "znodes", value); g < writes {
		t.Errorf("leader %s: znodes grew by %v; want at least %d", plan.NodeName(leader), g, writes)
	}
	var served float64
	for _, ep := range eps {
		served += grew(ep.Node, "write_latency", count)
	}
	if served < writes {
		t.Errorf("the servers measured %v writes of clients; want at least %d", served, writes)
	}
	for _, ep := range eps {
		b, a := before[ep.Node].Values, after[ep.Node].Values
		t.Logf("%s after %d writes: fsync count %v -> %v, sum %vms -> %vms; commit count %v -> %v; write_latency count %v -> %v, sum %vms; proposals_committed %v -> %v; znodes %v; db_size %v",
			plan.NodeName(ep.Node), writes, b["fsync"].Count, a["fsync"].Count, b["fsync"].Sum, a["fsync"].Sum,
			b["commit"].Count, a["commit"].Count, b["write_latency"].Count, a["write_latency"].Count, a["write_latency"].Sum,
			b["proposals_committed"].Value, a["proposals_committed"].Value, a["znodes"].Value, a["db_size"].Value)
	}

	storetest.CheckDeadScrapeFails(t, d)
}
