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

// Recorder scrapes every node and keeps, per node, the steps between its
// consecutive snapshots. Safe for concurrent use.
//
// A run scrapes every node every second, and a snapshot with its
// histograms is a few kilobytes: kept whole, an hour would hold tens of
// megabytes. Steps that fall between the same two cut points (the phase
// boundaries) are merged as they come, so the memory is bounded by the
// phases, not the run's length, and a window from one cut point to another
// is still exact.
type Recorder struct {
	scraper stores.MetricScraper
	metrics []stores.ServerMetric
	nodes   int
	base    time.Time
	cuts    []time.Duration // sorted
	log     *slog.Logger
	// first and total place this recorder's nodes among every node the
	// run scrapes (see Spread): node n takes slot first+n of total.
	first, total int

	mu    sync.Mutex
	prev  []map[string]stores.MetricValue // per node: its last snapshot's values
	steps [][]step                        // per node, in time order
	errs  int
}

// step is what one node's metrics did between two snapshots, or over
// several consecutive ones merged: increases for counters, summaries and
// histograms, levels for gauges.
type step struct {
	at  time.Duration // the last snapshot's offset from base
	inc map[string]*increase
}

type increase struct {
	counted   bool // an increase was measured (counters, summaries, histograms)
	counts         // what it was
	leveled   bool // a gauge level was read
	max, last float64
}

// counts is how much counters, summaries and histograms grew.
type counts struct {
	delta      float64
	sum, count float64
	buckets    map[float64]float64 // upper bound -> observations
}

// plus adds o's growth to c's.
func (c *counts) plus(o counts) {
	c.delta += o.delta
	c.sum += o.sum
	c.count += o.count
	for b, n := range o.buckets {
		if c.buckets == nil {
			c.buckets = map[float64]float64{}
		}
		c.buckets[b] += n
	}
}

// New returns a recorder of nodes nodes (1..nodes) whose offsets count from
// base. Windows asked of it should start and end at cuts (the phase
// boundaries), between which it merges what it keeps; with no cuts it
// keeps every step and any window is exact.
func New(scraper stores.MetricScraper, metrics []stores.ServerMetric, nodes int, base time.Time, cuts []time.Duration, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{scraper: scraper, metrics: metrics, nodes: nodes, base: base, cuts: slices.Sorted(slices.Values(cuts)), log: log,
		total: nodes, prev: make([]map[string]stores.MetricValue, nodes), steps: make([][]step, nodes)}
}

// Nodes is how many nodes the recorder scrapes.
func (r *Recorder) Nodes() int { return r.nodes }

// Spread places this recorder's nodes at slots first to first+Nodes()-1 of
// total, the nodes of every recorder of a run, so that the recorders of
// several clusters, started together, read no two nodes at the same moment
// either. Call it before Run; slots that do not fit are ignored.
func (r *Recorder) Spread(first, total int) {
	if first >= 0 && first+r.nodes <= total {
		r.first, r.total = first, total
	}
}

// Run scrapes every node at once, then each node every interval at its own
// offset in the interval until ctx ends, and every node once more then, so
// that the last phase has its end.
//
// Why staggered: a store renders its metrics on demand (an etcd member's
// /metrics is a few milliseconds of its CPU), and three members doing it
// at the same moment, beside the collector's own tick, kept both cores of a
// small machine busy for 10-20 ms once a second. An open-loop arrival due
// then went out late: in a soak at 100 requests/s, a third to a half of
// the late starts fell in that window.
func (r *Recorder) Run(ctx context.Context, every time.Duration) {
	r.ScrapeAll(ctx, every)
	var wg sync.WaitGroup
	for n := range r.nodes {
		wg.Go(func() { r.scrapeEvery(ctx, n, every, stagger(r.first+n, r.total, every)) })
	}
	wg.Wait()
	fctx, cancel := context.WithTimeout(context.Background(), every)
	r.ScrapeAll(fctx, every)
	cancel()
}

// stagger is slot n's (of slots) offset in every: the slots spread evenly
// over the interval, none at its start, where the collectors tick.
func stagger(n, slots int, every time.Duration) time.Duration {
	return every * time.Duration(2*n+1) / time.Duration(2*slots)
}

// scrapeEvery scrapes node n every interval from offset on, until ctx ends.
func (r *Recorder) scrapeEvery(ctx context.Context, n int, every, offset time.Duration) {
	first := time.NewTimer(offset)
	defer first.Stop()
	select {
	case <-ctx.Done():
		return
	case <-first.C:
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r.scrape(ctx, n, every)
		select {
		case <-ctx.Done():
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
		wg.Go(func() { r.scrape(ctx, n, timeout) })
	}
	wg.Wait()
}

// scrape scrapes node n (0-based) within timeout and keeps its snapshot.
func (r *Recorder) scrape(ctx context.Context, n int, timeout time.Duration) {
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
	r.add(n, s.At.Sub(r.base), s.Values)
}

// add takes node n's snapshot at offset at; r.mu is held. Snapshots of a
// node come in time order.
func (r *Recorder) add(n int, at time.Duration, values map[string]stores.MetricValue) {
	st := step{at: at, inc: map[string]*increase{}}
	prev := r.prev[n]
	if prev == nil {
		prev = map[string]stores.MetricValue{}
		r.prev[n] = prev
	}
	for _, m := range r.metrics {
		v, ok := values[m.Name]
		if !ok {
			continue
		}
		if m.Kind == stores.MetricGauge {
			st.inc[m.Name] = &increase{leveled: true, max: v.Value, last: v.Value}
		} else if p, ok := prev[m.Name]; ok {
			in := &increase{counted: true}
			in.add(m, p, v)
			st.inc[m.Name] = in
		}
		prev[m.Name] = v
	}
	steps := r.steps[n]
	if k := len(steps) - 1; k >= 0 && len(r.cuts) > 0 && r.interval(steps[k].at) == r.interval(at) {
		steps[k].merge(st)
		return
	}
	r.steps[n] = append(steps, st)
}

// interval numbers the stretches between cut points: offsets in the same
// one fall in the same windows (start, end] whose ends are cut points.
func (r *Recorder) interval(at time.Duration) int {
	i, _ := slices.BinarySearch(r.cuts, at)
	return i
}

// merge folds the later step o into s.
func (s *step) merge(o step) {
	s.at = o.at
	for name, oi := range o.inc {
		si, ok := s.inc[name]
		if !ok {
			s.inc[name] = oi
			continue
		}
		si.fold(oi)
	}
}

// fold adds the later o to in: its growth, and its levels (the highest,
// and o's last).
func (in *increase) fold(o *increase) {
	if o.counted {
		in.counted = true
		in.plus(o.counts)
	}
	if o.leveled {
		if !in.leveled || o.max > in.max {
			in.max = o.max
		}
		in.leveled, in.last = true, o.last
	}
}

// add measures the increase from p to v into in.
func (in *increase) add(m stores.ServerMetric, p, v stores.MetricValue) {
	inc := func(before, after float64) float64 {
		if after < before {
			return after // the node restarted
		}
		return after - before
	}
	switch m.Kind {
	case stores.MetricCounter:
		in.delta = inc(p.Value, v.Value)
	case stores.MetricSummary:
		if v.Count < p.Count {
			in.sum, in.count = v.Sum, v.Count
			return
		}
		in.sum, in.count = v.Sum-p.Sum, v.Count-p.Count
	case stores.MetricHistogram:
		restarted := v.Count < p.Count
		if restarted {
			in.sum, in.count = v.Sum, v.Count
		} else {
			in.sum, in.count = v.Sum-p.Sum, v.Count-p.Count
		}
		before := map[float64]float64{}
		if !restarted {
			for _, b := range p.Buckets {
				before[b.UpperBound] = b.Count
			}
		}
		in.buckets = make(map[float64]float64, len(v.Buckets))
		for _, b := range v.Buckets {
			in.buckets[b.UpperBound] = max(0, b.Count-before[b.UpperBound])
		}
	}
}

// Window reduces what the nodes reported between start and end (offsets
// from base) to one figure per stat of every metric some node reported:
// the increases of the steps that ended in (start, end], and the levels
// read there.
func (r *Recorder) Window(start, end time.Duration) map[string]results.ServerStat {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]results.ServerStat{}
	for _, m := range r.metrics {
		var acc accumulator
		for _, steps := range r.steps {
			acc.node(m, steps, start, end)
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
	counts     // the growth in the window
	max, total float64
}

// node adds one node's part: its steps that ended in (start, end].
func (a *accumulator) node(m stores.ServerMetric, steps []step, start, end time.Duration) {
	if m.EveryMember {
		// Each member counted the same events: the phase's increase is
		// the largest one member saw, not their sum.
		before := a.delta
		defer func() { a.delta = max(before, a.delta-before) }()
	}
	var node increase // the node's steps in the window, folded
	for _, st := range steps {
		if in, ok := st.inc[m.Name]; ok && st.at > start && st.at <= end {
			node.fold(in)
		}
	}
	if node.leveled {
		if !a.seen || node.max > a.max {
			a.max = node.max
		}
		a.total += node.last
	}
	a.plus(node.counts)
	a.seen = a.seen || node.leveled || node.counted
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
