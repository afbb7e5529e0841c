package etcd

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/promscrape"
	"github.com/coordlab/scenario/stores/storetest"
)

func TestParseMetrics(t *testing.T) {
	storetest.CheckParse(t, parseMetrics, 1e-12, []storetest.ParseCase{
		{
			// A member of a 3-member cluster of etcd 3.5.17 after 50 puts
			// (trimmed to the families read, and a few others).
			Name: "etcd 3.5.17", Text: storetest.Testdata(t, "metrics-3.5.17.txt"),
			Want: map[string]stores.MetricValue{
				"fsync": {Sum: 0.031698753999999996, Count: 58, Buckets: storetest.Buckets(
					0.001, 53, 0.002, 56, 0.004, 57, 0.008, 58, 0.016, 58, 0.032, 58, 0.064, 58, 0.128, 58,
					0.256, 58, 0.512, 58, 1.024, 58, 2.048, 58, 4.096, 58, 8.192, 58, storetest.Inf, 58)},
				"commit": {Sum: 0.04556036499999999, Count: 13, Buckets: storetest.Buckets(
					0.001, 8, 0.002, 9, 0.004, 10, 0.008, 10, 0.016, 12, 0.032, 13, 0.064, 13, 0.128, 13,
					0.256, 13, 0.512, 13, 1.024, 13, 2.048, 13, 4.096, 13, 8.192, 13, storetest.Inf, 13)},
				// Two peers, 2 probes each, merged.
				"peer_rtt": {Sum: 0.00027490800000000003 + 0.000317336, Count: 4, Buckets: storetest.Buckets(
					0.0001, 0, 0.0002, 3, 0.0004, 4, 0.0008, 4, 0.0016, 4, 0.0032, 4, 0.0064, 4, 0.0128, 4,
					0.0256, 4, 0.0512, 4, 0.1024, 4, 0.2048, 4, 0.4096, 4, 0.8192, 4, 1.6384, 4, 3.2768, 4, storetest.Inf, 4)},
				"proposals_committed": {Value: 58},
				"proposals_failed":    {Value: 0},
				"proposals_pending":   {Value: 0},
				"leader_changes":      {Value: 1},
				"slow_applies":        {Value: 0},
				"heartbeat_failures":  {Value: 0},
				"watchers":            {Value: 0},
				"db_size":             {Value: 32768},
			},
		},
		{
			Name: "only what is reported",
			Text: "# TYPE etcd_mvcc_db_total_size_in_bytes gauge\netcd_mvcc_db_total_size_in_bytes 1.2e+06\n",
			Want: map[string]stores.MetricValue{"db_size": {Value: 1.2e6}},
		},
		{Name: "empty", Text: "", Want: map[string]stores.MetricValue{}},
	})
}

func parseMetrics(text string) (map[string]stores.MetricValue, error) {
	return promscrape.Parse(strings.NewReader(text), serverMetrics)
}

func TestServerMetricsList(t *testing.T) {
	d := Driver()
	storetest.CheckServerMetricsList(t, d, []string{"fsync", "commit", "peer_rtt", "proposals_committed", "proposals_failed", "proposals_pending",
		"leader_changes", "slow_applies", "heartbeat_failures", "watchers", "db_size"}, []string{"proposals_committed", "leader_changes"})
	for _, m := range d.ServerMetrics {
		if !slices.Contains([]string{stores.MetricHistogram, stores.MetricSummary, stores.MetricCounter, stores.MetricGauge}, m.Kind) {
			t.Errorf("%s: kind %q", m.Name, m.Kind)
		}
	}
}

// A scraper has an endpoint for every node it scrapes.
func TestMetricScraperEndpoints(t *testing.T) {
	if _, err := NewMetricScraper(nil); err == nil {
		t.Error("a scraper of no endpoints was made")
	}
	if _, err := NewMetricScraper([]stores.Endpoint{{Node: 1, ClientAddr: "no port"}}); err == nil {
		t.Error("a scraper of an address without a port was made")
	}
	s, err := NewMetricScraper([]stores.Endpoint{{Node: 1, ClientAddr: "127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Scrape(context.Background(), 3); err == nil || !strings.Contains(err.Error(), "no endpoint of node 3") {
		t.Errorf("scrape of a node without an endpoint: %v", err)
	}
}
