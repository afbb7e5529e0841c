package consul

import (
	"net/http"

	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/promscrape"
)

// serverMetrics are the Consul metrics the runner keeps, read from a
// server's /v1/agent/metrics?format=prometheus, which answers only with
// telemetry.prometheus_retention_time set (see agentConfig). Consul's
// timers are Prometheus summaries in milliseconds; what a server has
// never measured is absent (a follower has no commitTime samples, a
// server that never led no dispatchLog).
var serverMetrics = []promscrape.Metric{
	{ServerMetric: stores.ServerMetric{Name: "fsync", Kind: stores.MetricSummary, Unit: stores.UnitMillis,
		Source: "consul_raft_leader_dispatchLog + consul_raft_rpc_appendEntries_storeLogs",
		Help: "a server writing raft log entries to its log store (Consul 1.20's WAL: write and fsync), " +
			"as leader (dispatchLog) and as follower (appendEntries storeLogs); the store has no fsync timer of its own"},
		Families: []string{"consul_raft_leader_dispatchLog", "consul_raft_rpc_appendEntries_storeLogs"}},
	{ServerMetric: stores.ServerMetric{Name: "commit", Kind: stores.MetricSummary, Unit: stores.UnitMillis,
		Source: "consul_raft_commitTime",
		Help:   "the leader committing a new raft log entry: from dispatch until a quorum has it (leader only)"},
		Families: []string{"consul_raft_commitTime"}},
	{ServerMetric: stores.ServerMetric{Name: "kv_apply", Kind: stores.MetricSummary, Unit: stores.UnitMillis,
		Source: "consul_kvs_apply",
		Help:   "a KV write through the server that handles it, raft commit and apply included (the leader, writes are forwarded to it)"},
		Families: []string{"consul_kvs_apply"}},
	{ServerMetric: stores.ServerMetric{Name: "proposals_committed", Kind: stores.MetricCounter, Unit: stores.UnitCount,
		Source: "consul_raft_apply",
		Help:   "raft transactions applied through the leader (leader only)"},
		Families: []string{"consul_raft_apply"}},
	{ServerMetric: stores.ServerMetric{Name: "leader_changes", Kind: stores.MetricCounter, Unit: stores.UnitCount,
		Source: "consul_raft_state_leader",
		Help:   "times this server became leader (the cluster's leader changes are the sum over the servers)"},
		Families: []string{"consul_raft_state_leader"}},
	{ServerMetric: stores.ServerMetric{Name: "elections", Kind: stores.MetricCounter, Unit: stores.UnitCount,
		Source: "consul_raft_state_candidate",
		Help:   "elections this server started (became a candidate)"},
		Families: []string{"consul_raft_state_candidate"}},
}

// ServerMetrics lists the Consul metrics the runner keeps
// (Driver.ServerMetrics).
func ServerMetrics() []stores.ServerMetric {
	out := make([]stores.ServerMetric, len(serverMetrics))
	for i, m := range serverMetrics {
		out[i] = m.ServerMetric
	}
	return out
}

// metricsPath is the agent's Prometheus exposition.
const metricsPath = "/v1/agent/metrics?format=prometheus"

// NewMetricScraper reads the servers' metrics over one HTTP client per
// server, through the endpoint's Dial as the status poller connects.
// Nothing is dialed yet.
func NewMetricScraper(eps []stores.Endpoint) (*promscrape.Scraper, error) {
	// Two connections: a scrape may overlap the previous one.
	return promscrape.NewScraper("consul", metricsPath, "HTTP address", eps, serverMetrics,
		func(dial stores.DialFunc) http.RoundTripper { return newTransport(dial, 2) })
}
