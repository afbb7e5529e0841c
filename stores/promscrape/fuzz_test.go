package promscrape

import (
	"math"
	"strings"
	"testing"

	"github.com/coordlab/scenario/stores"
)

// FuzzParse checks that any exposition parses without panicking, and that
// an accepted histogram's buckets are cumulative, in increasing bound.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.3\nh_count 2\n",
		"# TYPE c counter\nc{peer=\"a\"} 3\nc{peer=\"b\"} 4\n",
		"# TYPE g gauge\ng NaN\n",
		"# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 3\ns_count 2\n",
		"h_bucket{le=\"x\"} 1\n",
	} {
		f.Add(seed)
	}
	ms := []Metric{
		{ServerMetric: stores.ServerMetric{Name: "h", Kind: stores.MetricHistogram}, Families: []string{"h"}},
		{ServerMetric: stores.ServerMetric{Name: "c", Kind: stores.MetricCounter}, Families: []string{"c"}},
		{ServerMetric: stores.ServerMetric{Name: "g", Kind: stores.MetricGauge}, Families: []string{"g"}},
		{ServerMetric: stores.ServerMetric{Name: "s", Kind: stores.MetricSummary}, Families: []string{"s"}},
	}
	f.Fuzz(func(t *testing.T, text string) {
		vs, err := Parse(strings.NewReader(text), ms)
		if err != nil {
			return
		}
		h, ok := vs["h"]
		if !ok {
			return
		}
		for i := 1; i < len(h.Buckets); i++ {
			a, b := h.Buckets[i-1], h.Buckets[i]
			if !(a.UpperBound < b.UpperBound) || b.Count < a.Count && !math.IsNaN(a.Count) {
				t.Errorf("Parse(%q): buckets %v not cumulative in increasing bound", text, h.Buckets)
			}
		}
	})
}
