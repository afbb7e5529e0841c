package promscrape

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

// testMetrics are metrics of every kind, one read from two families.
var testMetrics = []Metric{
	{stores.ServerMetric{Name: "h", Kind: stores.MetricHistogram}, []string{"h"}},
	{stores.ServerMetric{Name: "c", Kind: stores.MetricCounter}, []string{"c"}},
	{stores.ServerMetric{Name: "g", Kind: stores.MetricGauge}, []string{"g"}},
	{stores.ServerMetric{Name: "both", Kind: stores.MetricSummary}, []string{"s1", "s2"}},
}

// The values in these cases are exact, so they are compared as printed:
// fmt prints a map in key order, and NaN and the infinities by name.
func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    map[string]stores.MetricValue
		wantErr string
	}{
		{name: "empty", text: "", want: map[string]stores.MetricValue{}},
		{
			name: "series with different bounds, labels escaped, timestamps",
			text: `# a comment
# HELP h two series of other bounds
# TYPE h histogram
h_bucket{peer="a\"b",le="1"} 1
h_bucket{peer="a\"b",le="2"} 3 1700000000000
h_bucket{peer="a\"b",le="+Inf"} 4
h_bucket{le="1.5",peer="c,d"} 10
h_bucket{ le = "+Inf" , peer="c,d", } 10
h_sum{peer="a\"b"} 5.5
h_sum{peer="c,d"} 7
h_count{peer="a\"b"} 4
h_count{peer="c,d"} 10
# TYPE c counter
c{code="x\\y\n"} 2
c{code="z"} 3
c_total 100
# TYPE s2 summary
s2_sum 1.5
s2_count 3
# TYPE s1 summary
s1_sum{op="set"} NaN
s1_count{op="set"} 1
s1{quantile="0.5"} 99
`,
			want: map[string]stores.MetricValue{
				"h":    {Sum: 12.5, Count: 14, Buckets: storetest.Buckets(1, 1, 1.5, 11, 2, 13, storetest.Inf, 14)},
				"c":    {Value: 5},
				"both": {Sum: math.NaN(), Count: 4},
			},
		},
		{
			name: "NaN and infinities",
			text: "# TYPE g gauge\ng{a=\"1\"} +Inf\ng{a=\"2\"} 1\nc NaN\n" +
				"# TYPE h histogram\nh_bucket{le=\"-Inf\"} 0\nh_bucket{le=\"+Inf\"} 2\nh_sum -Inf\nh_count 2\n",
			want: map[string]stores.MetricValue{
				"g": {Value: storetest.Inf},
				"c": {Value: math.NaN()}, // untyped
				"h": {Sum: math.Inf(-1), Count: 2, Buckets: storetest.Buckets(math.Inf(-1), 0, storetest.Inf, 2)},
			},
		},
		{
			// A counter or gauge is read from any of the three; what a
			// summary or histogram has not counted yet is left out.
			name: "kinds and absent values",
			text: "# TYPE c gauge\nc 7\n# TYPE g counter\ng 1\ng{x=\"y\"} 2\n" +
				"# TYPE h histogram\n# TYPE s1 summary\ns1{quantile=\"0.5\"} 1\n",
			want: map[string]stores.MetricValue{"c": {Value: 7}, "g": {Value: 3}},
		},
		{
			name: "families not named are not kept",
			text: "# TYPE other histogram\nother_bucket{le=\"+Inf\"} 1\nother_sum 1\nother_count 1\nc_total 4\ng2 1\n",
			want: map[string]stores.MetricValue{},
		},
		{name: "histogram read from a summary", text: "# TYPE h summary\nh_sum 1\nh_count 1\n", wantErr: "family h is a summary, not a histogram"},
		{name: "counter read from a histogram", text: "# TYPE c histogram\nc_count 1\n", wantErr: "family c is a histogram, not a counter"},
		{name: "summary read from a gauge", text: "# TYPE s2 gauge\ns2 1\n", wantErr: "family s2 is a gauge, not a summary"},
		{name: "bad value", text: "c 1x\n", wantErr: `line 1: expected float as value, got "1x"`},
		{name: "bad bound", text: "# TYPE h histogram\nh_bucket{le=\"x\"} 1\n", wantErr: "line 2: expected float as value for 'le' label"},
		{name: "unterminated label", text: "c{a=\"x} 1\n", wantErr: "line 1: label value \"x} 1\" contains unescaped new-line"},
		{name: "no name", text: "{a=\"x\"} 1\n", wantErr: "line 1: invalid metric name"},
		{name: "bad line of another family", text: "other{ 1x\nc 1\n", wantErr: `line 1: invalid label name for metric "other"`},
		{name: "no value", text: "c\n", wantErr: `line 1: expected float as value, got ""`},
		{name: "type after samples", text: "c 1\n# TYPE c counter\nc 2\n", wantErr: "line 2: second TYPE line"},
		{name: "last line cut", text: "c 1\nc 2", wantErr: "unexpected end of input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.text), testMetrics)
			if storetest.CheckErr(t, err, tt.wantErr) {
				return
			}
			if g, w := fmt.Sprint(got), fmt.Sprint(tt.want); g != w {
				t.Errorf("Parse = %s\nwant    %s", g, w)
			}
		})
	}
}

func TestMergeBuckets(t *testing.T) {
	tests := []struct {
		name   string
		series []map[float64]float64
		want   []stores.Bucket
	}{
		{name: "none", series: nil, want: nil},
		{name: "one series", series: []map[float64]float64{{0.5: 1, 1: 3, storetest.Inf: 3}}, want: storetest.Buckets(0.5, 1, 1, 3, storetest.Inf, 3)},
		{
			name:   "same bounds",
			series: []map[float64]float64{{1: 1, storetest.Inf: 2}, {1: 4, storetest.Inf: 8}},
			want:   storetest.Buckets(1, 5, storetest.Inf, 10),
		},
		{
			// A series counts at a bound it lacks what it has at its
			// largest bound below it, and nothing below its first.
			name:   "different bounds",
			series: []map[float64]float64{{1: 1, 2: 3, storetest.Inf: 4}, {1.5: 10, storetest.Inf: 10}, {3: 2}},
			want:   storetest.Buckets(1, 1, 1.5, 11, 2, 13, 3, 15, storetest.Inf, 16),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if g, w := fmt.Sprint(mergeBuckets(tt.series)), fmt.Sprint(tt.want); g != w {
				t.Errorf("mergeBuckets = %s; want %s", g, w)
			}
		})
	}
}
