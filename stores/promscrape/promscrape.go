// Package promscrape reads the stores' Prometheus endpoints (etcd's
// /metrics, Consul's agent metrics) into stores.MetricValue: it GETs the
// text exposition format (version 0.0.4, what such an endpoint answers a
// plain GET with), parses it with github.com/prometheus/common/expfmt and
// adds up the series of the families each of our metrics is read from.
package promscrape

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/coordlab/scenario/stores"
)

// Timeout bounds a scrape whose context has no deadline.
const Timeout = 2 * time.Second

// maxBody bounds what is read of one answer (etcd's and Consul's are about
// 150 KiB).
const maxBody = 16 << 20

// Metric is one of a store's ServerMetrics and the Prometheus metric
// families it is read from: one, or several whose series are all added up
// (a node reports each under one name or the other, say as leader and as
// follower).
type Metric struct {
	stores.ServerMetric
	Families []string
}

// Parse reads a text exposition and returns the values of ms that it has,
// by the metrics' names; a metric none of whose families has a series is
// left out. Every series of a metric's families is added in: a counter's
// or gauge's values; a summary's or histogram's sums and counts; a
// histogram's cumulative buckets, merged as mergeBuckets does. Lines of
// families no metric names are skipped unparsed (see keepFamilies), so an
// error is only ever about a named family's lines. A family whose type does not fit
// its metric's kind is an error naming it: a counter or gauge is read from
// a counter, gauge or untyped family (etcd exports a counter or two as
// gauges), a summary from a summary, a histogram from a histogram.
func Parse(r io.Reader, ms []Metric) (map[string]stores.MetricValue, error) {
	text, lineNo, err := keepFamilies(r, ms)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		// Line numbers of the answer, not of the lines kept.
		var pe expfmt.ParseError
		if errors.As(err, &pe) && pe.Line >= 1 && pe.Line <= len(lineNo) {
			pe.Line = lineNo[pe.Line-1]
			return nil, pe
		}
		return nil, err
	}
	out := map[string]stores.MetricValue{}
	for _, m := range ms {
		v, ok, err := value(m, families)
		if err != nil {
			return nil, err
		}
		if ok {
			out[m.Name] = v
		}
	}
	return out, nil
}

// keepFamilies returns the lines of r that belong to the families ms are
// read from, with each kept line's number in r. The stores answer with
// hundreds of families and we read a dozen: parsing them all into
// MetricFamily values was most of what the runner allocated in a run and
// an eighth of its CPU at 500 requests/s, once a second for every node.
//
// A line belongs to family f when it is f's # TYPE or # HELP line, or a
// sample named f, f_bucket, f_sum or f_count. Other comments and blank
// lines are dropped; a line whose name cannot be told cheaply (the quoted
// name form) is kept for the parser to judge.
func keepFamilies(r io.Reader, ms []Metric) (text []byte, lineNo []int, err error) {
	want := map[string]bool{}
	for _, m := range ms {
		for _, f := range m.Families {
			want[f] = true
		}
	}
	br := bufio.NewReader(r)
	var long []byte // a line longer than br's buffer, in pieces
	for n := 1; ; {
		piece, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, piece...)
			continue
		}
		line := piece
		if long != nil {
			line = append(long, piece...)
			long = nil
		}
		if len(line) > 0 {
			if belongs(line, want) {
				text = append(text, line...)
				lineNo = append(lineNo, n)
			}
			n++
		}
		if err == io.EOF {
			return text, lineNo, nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
}

// belongs tells whether a line of the text format is one of want's
// families'.
func belongs(line []byte, want map[string]bool) bool {
	line = bytes.TrimLeft(line, " \t")
	if len(line) == 0 || line[0] == '\n' {
		return false
	}
	if line[0] == '{' {
		return true
	}
	if line[0] == '#' {
		kw, rest := token(line[1:])
		name, _ := token(rest)
		return (string(kw) == "TYPE" || string(kw) == "HELP") && want[string(name)]
	}
	name := line
	if i := bytes.IndexAny(line, "{ \t\n"); i >= 0 {
		name = line[:i]
	}
	if want[string(name)] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := bytes.CutSuffix(name, []byte(suffix)); ok && want[string(base)] {
			return true
		}
	}
	return false
}

// token returns the first word of b, blanks and tabs around it, and what
// follows it.
func token(b []byte) (word, rest []byte) {
	b = bytes.TrimLeft(b, " \t")
	i := bytes.IndexAny(b, " \t\n")
	if i < 0 {
		return b, nil
	}
	return b[:i], b[i:]
}

// value adds up the series of m's families; ok is false when none has one
// that counts (a summary or histogram counts once it has a count).
func value(m Metric, families map[string]*dto.MetricFamily) (v stores.MetricValue, ok bool, err error) {
	var series []map[float64]float64 // a histogram's buckets by series, then by upper bound
	for _, name := range m.Families {
		f := families[name]
		if f == nil {
			continue
		}
		if !fits(m.Kind, f.GetType()) {
			return v, false, fmt.Errorf("family %s is a %s, not a %s (metric %s)",
				name, strings.ToLower(f.GetType().String()), m.Kind, m.Name)
		}
		for _, s := range f.GetMetric() {
			switch m.Kind {
			case stores.MetricCounter, stores.MetricGauge:
				v.Value += s.GetCounter().GetValue() + s.GetGauge().GetValue() + s.GetUntyped().GetValue()
				ok = true
			case stores.MetricSummary:
				sum := s.GetSummary()
				v.Sum += sum.GetSampleSum()
				v.Count += float64(sum.GetSampleCount())
				ok = ok || sum.SampleCount != nil
			case stores.MetricHistogram:
				h := s.GetHistogram()
				v.Sum += h.GetSampleSum()
				v.Count += float64(h.GetSampleCount())
				ok = ok || h.SampleCount != nil
				if len(h.GetBucket()) > 0 {
					bs := map[float64]float64{}
					for _, b := range h.GetBucket() {
						bs[b.GetUpperBound()] += float64(b.GetCumulativeCount())
					}
					series = append(series, bs)
				}
			}
		}
	}
	if ok && m.Kind == stores.MetricHistogram {
		v.Buckets = mergeBuckets(series)
	}
	return v, ok, nil
}

// fits tells whether a family of type t can be read as a metric of kind.
func fits(kind string, t dto.MetricType) bool {
	switch kind {
	case stores.MetricCounter, stores.MetricGauge:
		return t == dto.MetricType_COUNTER || t == dto.MetricType_GAUGE || t == dto.MetricType_UNTYPED
	case stores.MetricSummary:
		return t == dto.MetricType_SUMMARY
	case stores.MetricHistogram:
		return t == dto.MetricType_HISTOGRAM
	}
	return false
}

// mergeBuckets adds up the cumulative buckets of several series: the
// count at a bound is every series' count at its largest bound not above
// it, so series with different bounds still merge into cumulative buckets.
func mergeBuckets(series []map[float64]float64) []stores.Bucket {
	if len(series) == 0 {
		return nil
	}
	bounds := map[float64]bool{}
	for _, s := range series {
		for b := range s {
			bounds[b] = true
		}
	}
	all := slices.Sorted(maps.Keys(bounds))
	out := make([]stores.Bucket, len(all))
	for i, b := range all {
		out[i].UpperBound = b
	}
	for _, s := range series {
		own := slices.Sorted(maps.Keys(s))
		j, count := 0, 0.0
		for i, b := range all {
			for j < len(own) && own[j] <= b {
				count = s[own[j]]
				j++
			}
			out[i].Count += count
		}
	}
	return out
}

// Scrape GETs a Prometheus text exposition from url over c and reads ms
// from it (Parse). It is bounded by ctx, or by Timeout when ctx has no
// deadline. An answer other than 200, or one that is not the text format,
// is an error that says why: the start of the body for the one, the
// reason the server gives (Consul's X-Consul-Reason) for the other.
func Scrape(ctx context.Context, c *http.Client, url string, ms []Metric) (map[string]stores.MetricValue, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// The text format, never the protobuf or OpenMetrics one.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", req.URL.Path, resp.Status, strings.TrimSpace(string(b)))
	}
	// Anything but the text format is no exposition, even with a 200: a
	// Consul agent without prometheus_retention_time answers with no body,
	// as JSON, and says why in X-Consul-Reason.
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		err := fmt.Errorf("GET %s: answered %q, not Prometheus text", req.URL.Path, ct)
		if why := resp.Header.Get("X-Consul-Reason"); why != "" {
			err = fmt.Errorf("%w: %s", err, why)
		}
		return nil, err
	}
	values, err := Parse(io.LimitReader(resp.Body, maxBody), ms)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	// Drain what is left so the connection is reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	return values, nil
}
