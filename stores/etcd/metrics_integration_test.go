//go:build linux

package etcd

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

// serverMetricsContract scrapes every member of a running cluster, writes
// keys, scrapes again and checks that the write path's metrics grew; then
// that a scrape of an address where no member listens fails quickly.
func serverMetricsContract(t *testing.T, ctx context.Context, eps []stores.Endpoint) {
	d := Driver()
	s := storetest.NewMetricScraper(t, d, eps)

	// A member reports peer_rtt from its first probe of a peer, some
	// seconds after it started; every other metric from the start.
	before := storetest.ScrapeAll(t, ctx, s, eps)
	for n, snap := range before {
		for _, m := range d.ServerMetrics {
			if _, ok := snap.Values[m.Name]; !ok && m.Name != "peer_rtt" {
				t.Errorf("%s does not report %s (%s)", plan.NodeName(n), m.Name, m.Source)
			}
		}
	}
	const writes = 50
	storetest.PutKeys(t, ctx, d, eps, "metrics/%d", writes)
	// A follower fsyncs an entry when it receives it, which may be just
	// after the put returned; the backend commits its batch every 100 ms;
	// peers are probed every few seconds.
	after := storetest.WaitForGrowth(t, ctx, s, eps, before, 20*time.Second,
		"every member's WAL fsyncs, backend commits and committed proposals to grow, and peer round trips",
		func(node int, b, a map[string]stores.MetricValue) string {
			if reason := storetest.CountsGrew("fsync", "commit")(node, b, a); reason != "" {
				return reason
			}
			if got := a["proposals_committed"].Value - b["proposals_committed"].Value; got < writes {
				return fmt.Sprintf("%s committed %v proposals; want at least %d", plan.NodeName(node), got, writes)
			}
			if a["peer_rtt"].Count == 0 {
				return fmt.Sprintf("%s has no peer round trips", plan.NodeName(node))
			}
			return ""
		})
	for _, ep := range eps {
		b, a := before[ep.Node], after[ep.Node]
		if !a.At.After(b.At) {
			t.Errorf("%s: snapshot taken at %s, not after %s", plan.NodeName(ep.Node), a.At, b.At)
		}
		for _, name := range []string{"fsync", "commit", "peer_rtt"} {
			checkHistogram(t, plan.NodeName(ep.Node)+" "+name, a.Values[name])
		}
		if a.Values["db_size"].Value <= 0 {
			t.Errorf("%s db_size %v", plan.NodeName(ep.Node), a.Values["db_size"].Value)
		}
		f0, f1 := b.Values["fsync"], a.Values["fsync"]
		t.Logf("%s after %d puts: fsync count %v -> %v, sum %.4fs -> %.4fs; commit count %v -> %v; proposals_committed %v -> %v; peer_rtt count %v; db_size %v",
			plan.NodeName(ep.Node), writes, f0.Count, f1.Count, f0.Sum, f1.Sum, b.Values["commit"].Count, a.Values["commit"].Count,
			b.Values["proposals_committed"].Value, a.Values["proposals_committed"].Value, a.Values["peer_rtt"].Count, a.Values["db_size"].Value)
	}

	storetest.CheckDeadScrapeFails(t, d)
}

// checkHistogram checks that h has cumulative buckets ending in +Inf with
// its count.
func checkHistogram(t *testing.T, what string, h stores.MetricValue) {
	t.Helper()
	bs := h.Buckets
	if len(bs) == 0 || bs[len(bs)-1].UpperBound != storetest.Inf || bs[len(bs)-1].Count != h.Count {
		t.Errorf("%s: buckets %v do not end in +Inf with the count %v", what, bs, h.Count)
		return
	}
	for i := 1; i < len(bs); i++ {
		if bs[i].UpperBound <= bs[i-1].UpperBound || bs[i].Count < bs[i-1].Count {
			t.Errorf("%s: buckets %v are not cumulative", what, bs)
			return
		}
	}
}
