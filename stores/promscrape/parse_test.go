package promscrape

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

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
		// Lines of families not named are not parsed, and the lines of an
		// error are the answer's, not the kept ones'.
		{name: "bad line of another family", text: "other{ 1x\nc 1\n", want: map[string]stores.MetricValue{"c": {Value: 1}}},
		{name: "error after skipped lines", text: "# a comment\nother 1\n\n# TYPE g gauge\ng{a=\"x} 1\n", wantErr: "line 5: label value \"x} 1\" contains unescaped new-line"},
		{name: "quoted names go to the parser", text: "{\"c\"} 4\n", want: map[string]stores.MetricValue{"c": {Value: 4}}},
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

// etcdMetrics is a whole answer of a single etcd 3.5.17's /metrics after
// 50 puts, and a metric for every third of its families, of the family's
// own kind.
func etcdMetrics(t testing.TB) ([]byte, []Metric) {
	f, err := os.Open("testdata/etcd-3.5.17-metrics.txt.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	all, err := parseWhole(text)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[dto.MetricType]string{
		dto.MetricType_COUNTER: stores.MetricCounter, dto.MetricType_GAUGE: stores.MetricGauge,
		dto.MetricType_UNTYPED: stores.MetricGauge, dto.MetricType_SUMMARY: stores.MetricSummary,
		dto.MetricType_HISTOGRAM: stores.MetricHistogram,
	}
	var ms []Metric
	for i, name := range slices.Sorted(maps.Keys(all)) {
		if i%3 == 0 {
			ms = append(ms, Metric{stores.ServerMetric{Name: name, Kind: kinds[all[name].GetType()]}, []string{name}})
		}
	}
	return text, ms
}

// TestParseSkipsOnlyOtherFamilies checks that reading only the named
// families' lines gives what parsing the whole answer gave, on a real one.
func TestParseSkipsOnlyOtherFamilies(t *testing.T) {
	text, ms := etcdMetrics(t)
	all, err := parseWhole(text)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]stores.MetricValue{}
	for _, m := range ms {
		if v, ok, err := value(m, all); err != nil {
			t.Fatal(err)
		} else if ok {
			want[m.Name] = v
		}
	}
	got, err := Parse(bytes.NewReader(text), ms)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 20 {
		t.Fatalf("only %d metrics read from the whole answer", len(want))
	}
	if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
		t.Errorf("Parse = %s\nwant    %s", g, w)
	}
}

// TestParseLongLines checks lines longer than the reader's buffer, kept
// and skipped.
func TestParseLongLines(t *testing.T) {
	long := strings.Repeat("x", 20_000)
	text := "other{a=\"" + long + "\"} 1\n# HELP c " + long + "\nc{a=\"" + long + "\"} 2\nc{a=\"y\"} 3"
	got, err := Parse(strings.NewReader(text+"\n"), testMetrics)
	if err != nil {
		t.Fatal(err)
	}
	if v := got["c"].Value; v != 5 {
		t.Errorf("c = %v, want 5", v)
	}
	// The last line, cut, is still the answer's fourth.
	if _, err := Parse(strings.NewReader(text+" 4"), testMetrics); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("cut line: error %v, want one in line 4", err)
	}
}

func BenchmarkParseEtcd(b *testing.B) {
	text, ms := etcdMetrics(b)
	ms = ms[:min(len(ms), 12)]
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(text), ms); err != nil {
			b.Fatal(err)
		}
	}
}

// parseWhole parses every family of an answer, as Parse once did.
func parseWhole(text []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(text))
}

// BenchmarkParseEtcdWhole is the reference for BenchmarkParseEtcd: every
// family parsed, as Parse did before it skipped the others.
func BenchmarkParseEtcdWhole(b *testing.B) {
	text, ms := etcdMetrics(b)
	ms = ms[:min(len(ms), 12)]
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		all, err := parseWhole(text)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range ms {
			if _, _, err := value(m, all); err != nil {
				b.Fatal(err)
			}
		}
	}
}
