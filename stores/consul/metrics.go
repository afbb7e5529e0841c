package consul

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/coordlab/scenario/plan"
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

// MetricScraper reads the servers' metrics over one HTTP client per
// server, through the endpoint's Dial as the status poller connects. It is
// safe for concurrent use.
type MetricScraper struct {
	eps     []stores.Endpoint
	clients []*http.Client
}

// NewMetricScraper prepares a client per endpoint. Nothing is dialed yet.
func NewMetricScraper(eps []stores.Endpoint) (*MetricScraper, error) {
	if len(eps) == 0 {
		return nil, errors.New("consul metrics: no endpoints")
	}
	s := &MetricScraper{eps: eps}
	for _, ep := range eps {
		if _, _, err := net.SplitHostPort(ep.ClientAddr); err != nil {
			return nil, fmt.Errorf("consul metrics: %s HTTP address %q: %w", plan.NodeName(ep.Node), ep.ClientAddr, err)
		}
		// Two connections: a scrape may overlap the previous one.
		s.clients = append(s.clients, &http.Client{Transport: newTransport(ep.Dial, 2)})
	}
	return s, nil
}

// Scrape reads node's (1-based) metrics. It is bounded by ctx, or by
// promscrape.Timeout when ctx has no deadline. At is when the answer
// was read.
func (s *MetricScraper) Scrape(ctx context.Context, node int) (stores.MetricSnapshot, error) {
	i := -1
	for j, ep := range s.eps {
		if ep.Node == node {
			i = j
		}
	}
	if i < 0 {
		return stores.MetricSnapshot{}, fmt.Errorf("consul metrics: no endpoint of node %d", node)
	}
	ep := s.eps[i]
	values, err := promscrape.Scrape(ctx, s.clients[i], "http://"+ep.ClientAddr+metricsPath, serverMetrics)
	if err != nil {
		return stores.MetricSnapshot{}, fmt.Errorf("consul metrics of %s (%s): %w", plan.NodeName(ep.Node), ep.ClientAddr, err)
	}
	return stores.MetricSnapshot{At: time.Now(), Values: values}, nil
}

// Close drops idle connections; scrapes afterwards still work.
func (s *MetricScraper) Close() error {
	for _, c := range s.clients {
		c.CloseIdleConnections()
	}
	return nil
}
