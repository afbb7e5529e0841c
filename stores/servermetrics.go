package stores

import (
	"context"
	"time"
)

// A server metric's kind says how a phase's figure is made from the
// snapshots taken before, during and after it.
const (
	// MetricHistogram: cumulative buckets (Prometheus histogram); a phase
	// gets quantiles of the observations made in it, and their mean.
	MetricHistogram = "histogram"
	// MetricSummary: a cumulative sum and count (a Prometheus summary, or
	// ZooKeeper's avg/min/max counters); a phase gets the mean and count
	// of the observations made in it.
	MetricSummary = "summary"
	// MetricCounter: a cumulative count; a phase gets its increase.
	MetricCounter = "counter"
	// MetricGauge: a level; a phase gets its largest and last value.
	MetricGauge = "gauge"
)

// ServerStats lists the stats a phase has of a metric of kind: the path
// <scope>.server.<metric>.<stat>.
func ServerStats(kind string) []string {
	switch kind {
	case MetricHistogram:
		return []string{"p50", "p90", "p99", "mean", "count"}
	case MetricSummary:
		return []string{"mean", "count"}
	case MetricCounter:
		return []string{"delta", "per_s"}
	case MetricGauge:
		return []string{"max", "total"}
	}
	return nil
}

// Units of server metrics. Durations are reported in milliseconds, as
// every latency of the tool is.
const (
	UnitSeconds = "seconds" // observations in seconds, reported in ms
	UnitMillis  = "ms"      // observations in milliseconds
	UnitBytes   = "bytes"
	UnitCount   = "count"
)

// ServerMetric is one of a store's own metrics that the runner keeps, under
// a name of ours that means the same on every store that has it (fsync,
// commit, leader_changes, ...).
type ServerMetric struct {
	Name string
	Kind string
	Unit string
	// Source names where the store reports it (a Prometheus metric, an
	// mntr key), for the README and the report.
	Source string
	Help   string
	// EveryMember marks a counter every member keeps of the same events
	// (etcd's leader changes seen): a phase takes the largest member's
	// increase, not the sum, which would count each event once a member.
	EveryMember bool
}

// Bucket is a histogram's cumulative bucket: Count observations at most
// UpperBound (in the metric's unit; +Inf for the last).
type Bucket struct {
	UpperBound float64
	Count      float64
}

// MetricValue is one metric of one node at one scrape, cumulative since
// the node started: Value for counters and gauges; Sum and Count for
// summaries and histograms; Buckets, in increasing bound, for histograms.
type MetricValue struct {
	Value   float64
	Sum     float64
	Count   float64
	Buckets []Bucket
}

// MetricSnapshot is one scrape of one node: its metrics by our name, and
// when it was taken.
type MetricSnapshot struct {
	At     time.Time
	Values map[string]MetricValue
}

// MetricScraper reads the store's own metrics from its nodes: etcd's and
// Consul's Prometheus endpoints, ZooKeeper's mntr. Safe for concurrent use.
type MetricScraper interface {
	// Scrape reads node's (1-based) metrics now, those of the driver's
	// ServerMetrics it reports.
	Scrape(ctx context.Context, node int) (MetricSnapshot, error)
	Close() error
}
