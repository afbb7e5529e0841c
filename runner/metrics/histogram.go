package metrics

import (
	"math"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// Histogram geometry: microsecond units, 3 significant digits, up to an
// hour. An hour rather than a minute because corrected latency grows with
// the length of a stall, and a long partition must not be clipped (the
// extra range costs ~50 KB per histogram).
const (
	histLowest  = 1
	histHighest = int64(time.Hour / time.Microsecond)
	histDigits  = 3
)

func newHist() *hdr.Histogram { return hdr.New(histLowest, histHighest, histDigits) }

// micros converts a latency to histogram units, rounding up so that a
// sub-microsecond latency is 1 µs rather than vanishing, and clamping to the
// histogram's range. clamped reports a value above the range.
func micros(d time.Duration) (v int64, clamped bool) {
	if d <= 0 {
		return 0, false
	}
	v = int64((d + time.Microsecond - 1) / time.Microsecond)
	if v > histHighest {
		return histHighest, true
	}
	return v, false
}

// latency is a histogram plus the exact extremes and sum, which HdrHistogram
// only approximates. The histogram is allocated on first use: most
// phase × workload × op combinations never see a sample.
type latency struct {
	h             *hdr.Histogram
	n             int64
	min, max, sum time.Duration
}

// record adds d; it reports whether d had to be clamped into the
// histogram's range.
func (l *latency) record(d time.Duration) bool {
	if d < 0 {
		d = 0
	}
	if l.h == nil {
		l.h = newHist()
	}
	v, clamped := micros(d)
	_ = l.h.RecordValue(v) // cannot fail: v is within range
	if l.n == 0 || d < l.min {
		l.min = d
	}
	if d > l.max {
		l.max = d
	}
	l.n++
	l.sum += d
	return clamped
}

func (l *latency) merge(o *latency) {
	if o.n == 0 {
		return
	}
	if l.h == nil {
		l.h = newHist()
	}
	l.h.Merge(o.h)
	if l.n == 0 || o.min < l.min {
		l.min = o.min
	}
	l.max = max(l.max, o.max)
	l.n += o.n
	l.sum += o.sum
}

// stats renders the distribution in the schema's units; nil when empty.
// Percentiles are capped at the exact maximum: the histogram reports the top
// of a bucket, which may lie above every recorded value.
func (l *latency) stats() *results.Latency {
	if l.n == 0 {
		return nil
	}
	pct := func(q float64) float64 {
		v := time.Duration(l.h.ValueAtQuantile(q)) * time.Microsecond
		return results.MS(min(v, l.max))
	}
	return &results.Latency{
		P50MS:  pct(50),
		P90MS:  pct(90),
		P99MS:  pct(99),
		P999MS: pct(99.9),
		MaxMS:  results.MS(l.max),
		MinMS:  results.MS(l.min),
		MeanMS: results.MS(l.sum / time.Duration(l.n)),
	}
}

// nClasses is the number of error classes; classIndex maps a class to its
// slot in plan.ErrorClasses order.
const nClasses = 4

func classIndex(class string) int {
	switch class {
	case plan.ErrTimeout:
		return 0
	case plan.ErrUnavailable:
		return 1
	case plan.ErrConnection:
		return 2
	default:
		// An unknown class still counts as an error rather than vanishing.
		return 3
	}
}

// tally is the counting part shared by a phase's cell and a second's row.
type tally struct {
	ok, errs int64
	byClass  [nClasses]int64
}

func (t *tally) add(o *tally) {
	t.ok += o.ok
	t.errs += o.errs
	for i := range t.byClass {
		t.byClass[i] += o.byClass[i]
	}
}

func (t *tally) errorsBy(all bool) map[string]int64 {
	m := make(map[string]int64, nClasses)
	for i, c := range plan.ErrorClasses {
		if all || t.byClass[i] > 0 {
			m[c] = t.byClass[i]
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// cell aggregates one set of operations: a phase × workload × op, or any
// sum of those.
type cell struct {
	tally
	late, lateQueued int64 // late starts, and those of them that waited for a client
	corrected, raw   latency
}

func (c *cell) add(o *cell) {
	c.tally.add(&o.tally)
	c.late += o.late
	c.lateQueued += o.lateQueued
	c.corrected.merge(&o.corrected)
	c.raw.merge(&o.raw)
}

// opStats renders the cell; dur is the phase length that throughput is
// measured over.
func (c *cell) opStats(op string, dur time.Duration) results.OpStats {
	s := results.OpStats{
		Op:         op,
		Count:      c.ok + c.errs,
		OK:         c.ok,
		Errors:     c.errs,
		ErrorsBy:   c.errorsBy(true),
		Latency:    c.corrected.stats(),
		RawLatency: c.raw.stats(),
		LateStarts: c.late,
		LateQueued: c.lateQueued,
	}
	if s.Count > 0 {
		s.ErrorRate = float64(c.errs) / float64(s.Count)
	}
	if dur > 0 {
		// A thousandth of an op per second is below anything measurable.
		s.Throughput = math.Round(float64(c.ok)/dur.Seconds()*1000) / 1000
	}
	return s
}
