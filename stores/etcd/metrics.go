package etcd

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/promscrape"
)

// serverMetrics are the etcd metrics the runner keeps, read from a
// member's /metrics, which its client listener serves (etcd 3.4 to 3.6;
// --listen-metrics-urls would only add another listener).
var serverMetrics = []promscrape.Metric{
	{ServerMetric: stores.ServerMetric{Name: "fsync", Kind: stores.MetricHistogram, Unit: stores.UnitSeconds,
		Source: "etcd_disk_wal_fsync_duration_seconds",
		Help:   "fsync of the write-ahead log, on every member: each raft batch of entries is fsynced before it is acknowledged"},
		Families: []string{"etcd_disk_wal_fsync_duration_seconds"}},
	{ServerMetric: stores.ServerMetric{Name: "commit", Kind: stores.MetricHistogram, Unit: stores.UnitSeconds,
		Source: "etcd_disk_backend_commit_duration_seconds",
		Help:   "commit of the bbolt backend (applied entries written to the key-value database), on every member"},
		Families: []string{"etcd_disk_backend_commit_duration_seconds"}},
	{ServerMetric: stores.ServerMetric{Name: "peer_rtt", Kind: stores.MetricHistogram, Unit: stores.UnitSeconds,
		Source: "etcd_network_peer_round_trip_time_seconds",
		Help:   "round trip of a probe to a peer over the peer port, all peers of the member together"},
		Families: []string{"etcd_network_peer_round_trip_time_seconds"}},
	{ServerMetric: stores.ServerMetric{Name: "proposals_committed", Kind: stores.MetricCounter, Unit: stores.UnitCount,
		Source:      "etcd_server_proposals_committed_total",
		Help:        "raft proposals committed: the member's commit index, so every member counts each proposal (exported as a gauge, but it only grows while the member runs)",
		EveryMember: true},
		Families: []string{"etcd_server_proposals_committed_total"}},
	{ServerMetric: stores.ServerMetric{Name: "proposals_failed", Kind: stores.MetricCounter, Unit: stores.UnitCount,
		Source: "etcd_server_proposals_failed_total",
		Help:   "raft proposals that failed (no leader, timeouts)"},
		Families: []string{"etcd_server_proposals_failed_total"}},
	{ServerMetric: stores.ServerMetric{Name: "proposals_pending", Kind: stores.MetricGauge, Unit: stores.UnitCount,
		Source: "etcd_server_proposals_pending",
		Help:   "raft proposals waiting to be committed"},
		Families: []string{"etcd_server_proposals_pending"}},
	{ServerMetric: stores.ServerMetric{Name: "leader_changes", Kind: stores.MetricCounter, Unit: stores.UnitCount,
		Source:      "etcd_server_leader_changes_seen_total",
		Help:        "leader changes this member has seen (each member counts every change)",
		EveryMember: true},
		Families: []string{"etcd_server_leader_changes_seen_total"}},
	{ServerMetric: stores.ServerMetric{Name: "slow_applies", Kind: stores.MetricCounter, Unit: stores.UnitCount,
		Source: "etcd_server_slow_apply_total",
		Help:   "applies slower than 100 ms (usually a slow disk)"},
		Families: []string{"etcd_server_slow_apply_total"}},
	{ServerMetric: stores.ServerMetric{Name: "heartbeat_failures", Kind: stores.MetricCounter, Unit: stores.UnitCount,
		Source: "etcd_server_heartbeat_send_failures_total",
		Help:   "heartbeats the leader failed to send in time (overload or a slow disk)"},
		Families: []string{"etcd_server_heartbeat_send_failures_total"}},
	{ServerMetric: stores.ServerMetric{Name: "watchers", Kind: stores.MetricGauge, Unit: stores.UnitCount,
		Source: "etcd_debugging_mvcc_watcher_total",
		Help:   "watchers open on the member"},
		Families: []string{"etcd_debugging_mvcc_watcher_total"}},
	{ServerMetric: stores.ServerMetric{Name: "db_size", Kind: stores.MetricGauge, Unit: stores.UnitBytes,
		Source: "etcd_mvcc_db_total_size_in_bytes",
		Help:   "size of the backend database file, free pages included"},
		Families: []string{"etcd_mvcc_db_total_size_in_bytes"}},
}

// ServerMetrics lists the etcd metrics the runner keeps (Driver.ServerMetrics).
func ServerMetrics() []stores.ServerMetric {
	out := make([]stores.ServerMetric, len(serverMetrics))
	for i, m := range serverMetrics {
		out[i] = m.ServerMetric
	}
	return out
}

// NewMetricScraper reads the members' /metrics over one HTTP client per
// member, through the endpoint's Dial as the status poller connects.
// Nothing is dialed yet.
func NewMetricScraper(eps []stores.Endpoint) (*promscrape.Scraper, error) {
	return promscrape.NewScraper("etcd", "/metrics", "client address", eps, serverMetrics,
		func(dial stores.DialFunc) http.RoundTripper { return metricsTransport(dial) })
}

// metricsTransport is an HTTP transport of its own for one member; dial,
// if not nil, opens its connections.
func metricsTransport(dial stores.DialFunc) *http.Transport {
	t := &http.Transport{
		Proxy:               nil, // the members are on loopback or in the runner's namespaces
		MaxIdleConnsPerHost: 2,   // a scrape may overlap the previous one
		IdleConnTimeout:     90 * time.Second,
		// Loopback: gzip would only cost the member CPU.
		DisableCompression: true,
	}
	if dial != nil {
		t.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) }
	} else {
		d := &net.Dialer{KeepAlive: 30 * time.Second}
		t.DialContext = d.DialContext
	}
	return t
}
