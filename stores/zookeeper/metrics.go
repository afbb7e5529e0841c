package zookeeper

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// mntrMetric is one of the ServerMetrics and the mntr keys it is read
// from: Key for a counter or gauge; for a summary, ZooKeeper's cumulative
// zk_sum_<Key> and zk_cnt_<Key> (its zk_avg_, zk_min_, zk_max_ and
// percentiles cannot be told apart per phase).
type mntrMetric struct {
	stores.ServerMetric
	key string
}

// serverMetrics are the ZooKeeper metrics the runner keeps, from the mntr
// four-letter word (ZooKeeper 3.6 on; its summaries count whole
// milliseconds). Only the leader reports the leader's own (quorum acks,
// commits); a server reports the latency of requests of clients connected
// to it.
var serverMetrics = []mntrMetric{
	{stores.ServerMetric{Name: "fsync", Kind: stores.MetricSummary, Unit: stores.UnitMillis,
		Source: "zk_sum_fsynctime / zk_cnt_fsynctime",
		Help:   "fsync of the transaction log, on every server: each batch of transactions is fsynced before it is acknowledged"}, "fsynctime"},
	{stores.ServerMetric{Name: "commit", Kind: stores.MetricSummary, Unit: stores.UnitMillis,
		Source: "zk_sum_quorum_ack_latency / zk_cnt_quorum_ack_latency",
		Help:   "a write on the leader from its arrival until a quorum has acknowledged its proposal, fsyncs included (leader only)"}, "quorum_ack_latency"},
	{stores.ServerMetric{Name: "write_latency", Kind: stores.MetricSummary, Unit: stores.UnitMillis,
		Source: "zk_sum_updatelatency / zk_cnt_updatelatency",
		Help:   "a write of a client connected to this server, from its arrival until its answer leaves the server"}, "updatelatency"},
	{stores.ServerMetric{Name: "read_latency", Kind: stores.MetricSummary, Unit: stores.UnitMillis,
		Source: "zk_sum_readlatency / zk_cnt_readlatency",
		Help:   "a read of a client connected to this server, from its arrival until its answer leaves the server"}, "readlatency"},
	{stores.ServerMetric{Name: "election_time", Kind: stores.MetricSummary, Unit: stores.UnitMillis,
		Source: "zk_sum_election_time / zk_cnt_election_time",
		Help:   "a leader election this server took part in, from looking until it leads or follows"}, "election_time"},
	{stores.ServerMetric{Name: "elections", Kind: stores.MetricCounter, Unit: stores.UnitCount,
		Source:      "zk_looking_count",
		Help:        "times this server started looking for a leader: every server that takes part in an election counts it",
		EveryMember: true}, "looking_count"},
	{stores.ServerMetric{Name: "proposals_committed", Kind: stores.MetricCounter, Unit: stores.UnitCount,
		Source: "zk_commit_count",
		Help:   "proposals the leader committed (leader only)"}, "commit_count"},
	{stores.ServerMetric{Name: "pending", Kind: stores.MetricGauge, Unit: stores.UnitCount,
		Source: "zk_outstanding_requests",
		Help:   "requests of clients connected to this server that are queued or in progress"}, "outstanding_requests"},
	{stores.ServerMetric{Name: "watchers", Kind: stores.MetricGauge, Unit: stores.UnitCount,
		Source: "zk_watch_count",
		Help:   "watches set through this server"}, "watch_count"},
	{stores.ServerMetric{Name: "znodes", Kind: stores.MetricGauge, Unit: stores.UnitCount,
		Source: "zk_znode_count",
		Help:   "znodes in the server's data tree"}, "znode_count"},
	{stores.ServerMetric{Name: "db_size", Kind: stores.MetricGauge, Unit: stores.UnitBytes,
		Source: "zk_approximate_data_size",
		Help:   "size of the data tree's paths and data"}, "approximate_data_size"},
}

// ServerMetrics lists the ZooKeeper metrics the runner keeps
// (Driver.ServerMetrics).
func ServerMetrics() []stores.ServerMetric {
	out := make([]stores.ServerMetric, len(serverMetrics))
	for i, m := range serverMetrics {
		out[i] = m.ServerMetric
	}
	return out
}

// scrapeTimeout bounds a scrape whose context has no deadline.
const scrapeTimeout = 2 * time.Second

// MetricScraper asks the nodes mntr, on a connection of its own each time,
// through the endpoint's Dial, as the status poller does. It holds no
// connections and is safe for concurrent use.
type MetricScraper struct {
	eps []stores.Endpoint
}

// NewMetricScraper returns a scraper of the nodes at eps.
func NewMetricScraper(eps []stores.Endpoint) (*MetricScraper, error) {
	if len(eps) == 0 {
		return nil, errors.New("zookeeper metrics: no endpoints")
	}
	return &MetricScraper{eps: eps}, nil
}

// Scrape reads node's (1-based) metrics. It is bounded by ctx, or by
// scrapeTimeout when ctx has no deadline. A node without a quorum answers
// mntr only that it is not serving: that is an error. At is when the
// answer was read.
func (s *MetricScraper) Scrape(ctx context.Context, node int) (stores.MetricSnapshot, error) {
	i := stores.EndpointIndex(s.eps, node)
	if i < 0 {
		return stores.MetricSnapshot{}, fmt.Errorf("zookeeper metrics: no endpoint of node %d", node)
	}
	ep := s.eps[i]
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, scrapeTimeout)
		defer cancel()
	}
	b, err := fourLetterWord(ctx, ep, "mntr")
	var values map[string]stores.MetricValue
	if err == nil {
		values, err = parseMntr(b, serverMetrics)
	}
	if err != nil {
		return stores.MetricSnapshot{}, fmt.Errorf("zookeeper mntr of %s (%s): %w", plan.NodeName(ep.Node), ep.ClientAddr, err)
	}
	return stores.MetricSnapshot{At: time.Now(), Values: values}, nil
}

// Close releases nothing (the scraper holds no connections).
func (s *MetricScraper) Close() error { return nil }

// parseMntr reads the values of ms an mntr answer ("zk_key\tvalue" lines)
// has, by the metrics' names.
func parseMntr(b []byte, ms []mntrMetric) (map[string]stores.MetricValue, error) {
	if bytes.Contains(b, []byte(notServing)) {
		return nil, errors.New("not serving requests")
	}
	if bytes.Contains(b, []byte("not in the whitelist")) {
		return nil, fmt.Errorf("mntr is refused (not in 4lw.commands.whitelist): %q", clip(b))
	}
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "\t"); ok {
			kv[k] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mntr: %w", err)
	}
	if _, ok := kv["zk_version"]; !ok {
		return nil, fmt.Errorf("mntr: no zk_version in %q", clip(b))
	}
	num := func(key string) (float64, bool, error) {
		s, ok := kv[key]
		if !ok {
			return 0, false, nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, false, fmt.Errorf("mntr: bad %s %q", key, s)
		}
		return v, true, nil
	}
	out := map[string]stores.MetricValue{}
	for _, m := range ms {
		if m.Kind == stores.MetricSummary {
			sum, okSum, err := num("zk_sum_" + m.key)
			if err != nil {
				return nil, err
			}
			cnt, okCnt, err := num("zk_cnt_" + m.key)
			if err != nil {
				return nil, err
			}
			if okSum && okCnt {
				out[m.Name] = stores.MetricValue{Sum: sum, Count: cnt}
			}
			continue
		}
		v, ok, err := num("zk_" + m.key)
		if err != nil {
			return nil, err
		}
		if ok {
			out[m.Name] = stores.MetricValue{Value: v}
		}
	}
	return out, nil
}
