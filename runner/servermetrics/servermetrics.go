// Package servermetrics keeps what the stores' own metrics say during a run
// (etcd's and Consul's Prometheus endpoints, ZooKeeper's mntr) and reduces
// it to figures per phase: quantiles of the fsyncs made in the phase, how
// many proposals failed in it, the most watchers a member held. This is
// how a tuning user sees why a client-side p99 moved.
//
// Every node is scraped every interval. The increase between two
// consecutive scrapes of a node belongs to the phase the later one falls
// in, so a phase's figures are exact to the interval. A count that went
// down means the node restarted; its increase is then the new count, as
// Prometheus's rate() takes it.
package servermetrics

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/stores"
)

// Recorder scrapes every node and keeps the snapshots. Safe for concurrent
// use.
type Recorder struct {
	scraper stores.MetricScraper
	metrics []stores.ServerMetric
	nodes   int
	base    time.Time
	log     *slog.Logger

	mu    sync.Mutex
	snaps [][]snap // per node, in time order
	errs  int
}

type snap struct {
	at     time.Duration // from base
	values map[string]stores.MetricValue
}

// New returns a recorder of nodes nodes (1..nodes) whose offsets count from
// base.
func New(scraper stores.MetricScraper, metrics []stores.ServerMetric, nodes int, base time.Time, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{scraper: scraper, metrics: metrics, nodes: nodes, base: base, log: log, snaps: make([][]snap, nodes)}
}

// Run scrapes every node every interval until ctx ends, and once more
// then, so that the last phase has its end.
func (r *Recorder) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r.ScrapeAll(ctx, every)
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), every)
			r.ScrapeAll(fctx, every)
			cancel()
			return
		case <-t.C:
		}
	}
}

// ScrapeAll scrapes every node at once, each within timeout. A node that
// does not answer (down, cut off) is skipped: its next answer covers the
// gap.
func (r *Recorder) ScrapeAll(ctx context.Context, timeout time.Duration) {
	var wg sync.WaitGroup
	for n := range r.nodes {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			s, err := r.scraper.Scrape(sctx, n+1)
			r.mu.Lock()
			defer r.mu.Unlock()
			if err != nil {
				r.errs++
				r.log.Debug("scrape server metrics", "node", n+1, "err", err)
				return
			}
			r.snaps[n] = append(r.snaps[n], snap{at: s.At.Sub(r.base), values: s.Values})
		})
	}
	wg.Wait()
}

// Window reduces what the nodes reported between start and end (offsets
// from base) to one figure per stat of every metric some node reported.
func (r *Recorder) Window(start, end time.Duration) map[string]results.ServerStat {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]results.ServerStat{}
	for _, m := range r.metrics {
		var acc accumulator
		for _, ss := range r.snaps {
			acc.node(m, ss, start, end)
		}
		if st, ok := acc.stat(m, end-start); ok {
			out[m.Name] = st
		}
	}
	return out
}

// accumulator gathers one metric's increases (or levels) over the nodes.
type accumulator struct {
	seen       bool
	sum, count float64
	delta      float64
	buckets    map[float64]float64 // upper bound -> observations in the window
	max, total float64
}

// node adds one node's part: the increases between consecutive snapshots
// whose later one falls in (start, end], or for a gauge its levels there.
func (a *accumulator) node(m stores.ServerMetric, ss []snap, start, end time.Duration) {
	var prev *stores.MetricValue
	var last *stores.MetricValue
	if m.EveryMember {
		// Each member counted the same events: the phase's increase is
		// the largest one member saw, not their sum.
		before := a.delta
		defer func() { a.delta = max(before, a.delta-before) }()
	}
	for i := range ss {
		v, ok := ss[i].values[m.Name]
		if !ok {
			continue
		}
		in := ss[i].at > start && ss[i].at <= end
		if m.Kind == stores.MetricGauge {
			if in {
				if !a.seen || v.Value > a.max {
					a.max = v.Value
				}
				a.seen, last = true, &v
			}
			continue
		}
		if prev != nil && in {
			a.seen = true
			a.add(m, *prev, v)
		}
		prev = &v
	}
	if last != nil {
		a.total += last.Value
	}
}

// add takes the increase from p to v.
func (a *accumulator) add(m stores.ServerMetric, p, v stores.MetricValue) {
	inc := func(before, after float64) float64 {
		if after < before {
			return after // the node restarted
		}
		return after - before
	}
	switch m.Kind {
	case stores.MetricCounter:
		a.delta += inc(p.Value, v.Value)
	case stores.MetricSummary:
		if v.Count < p.Count {
			a.sum, a.count = a.sum+v.Sum, a.count+v.Count
			return
		}
		a.sum, a.count = a.sum+v.Sum-p.Sum, a.count+v.Count-p.Count
	case stores.MetricHistogram:
		restarted := v.Count < p.Count
		if restarted {
			a.sum, a.count = a.sum+v.Sum, a.count+v.Count
		} else {
			a.sum, a.count = a.sum+v.Sum-p.Sum, a.count+v.Count-p.Count
		}
		if a.buckets == nil {
			a.buckets = map[float64]float64{}
		}
		before := map[float64]float64{}
		if !restarted {
			for _, b := range p.Buckets {
				before[b.UpperBound] = b.Count
			}
		}
		for _, b := range v.Buckets {
			a.buckets[b.UpperBound] += max(0, b.Count-before[b.UpperBound])
		}
	}
}

// stat renders the accumulated window in the metric's reported unit
// (milliseconds for durations).
func (a *accumulator) stat(m stores.ServerMetric, window time.Duration) (results.ServerStat, bool) {
	if !a.seen {
		return results.ServerStat{}, false
	}
	scale, unit := 1.0, m.Unit
	if m.Unit == stores.UnitSeconds {
		scale, unit = 1000, stores.UnitMillis
	}
	st := results.ServerStat{Kind: m.Kind, Unit: unit, Values: map[string]float64{}}
	switch m.Kind {
	case stores.MetricCounter:
		st.Values["delta"] = a.delta
		if window > 0 {
			st.Values["per_s"] = a.delta / window.Seconds()
		}
	case stores.MetricGauge:
		st.Values["max"], st.Values["total"] = a.max*scale, a.total*scale
	case stores.MetricSummary, stores.MetricHistogram:
		st.Values["count"] = a.count
		if a.count > 0 {
			st.Values["mean"] = a.sum / a.count * scale
		}
		if m.Kind == stores.MetricHistogram && a.count > 0 {
			for _, q := range []struct {
				name string
				q    float64
			}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}} {
				if v, ok := quantile(q.q, a.buckets); ok {
					st.Values[q.name] = v * scale
				}
			}
		}
	}
	return st, true
}

// quantile estimates the q-quantile from cumulative bucket counts as
// Prometheus's histogram_quantile does: linearly within the bucket that
// holds it, the lowest bucket starting at 0, and the +Inf bucket answered
// with the highest finite bound.
func quantile(q float64, buckets map[float64]float64) (float64, bool) {
	bounds := make([]float64, 0, len(buckets))
	for b := range buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return 0, false
	}
	total := buckets[bounds[len(bounds)-1]]
	if total <= 0 {
		return 0, false
	}
	rank := q * total
	i := sort.Search(len(bounds), func(i int) bool { return buckets[bounds[i]] >= rank })
	if i == len(bounds) {
		i = len(bounds) - 1
	}
	if math.IsInf(bounds[i], 1) {
		finite := slices.IndexFunc(bounds, func(b float64) bool { return math.IsInf(b, 1) })
		if finite <= 0 {
			return 0, false
		}
		return bounds[finite-1], true
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = bounds[i-1], buckets[bounds[i-1]]
	}
	in := buckets[bounds[i]] - below
	if in <= 0 {
		return bounds[i], true
	}
	return lo + (bounds[i]-lo)*(rank-below)/in, true
}

// Errors counts scrapes that failed.
func (r *Recorder) Errors() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errs
}
