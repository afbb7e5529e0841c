package storetest

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// What the stores' server-metrics tests share: scraping a running cluster,
// the checks every store's scraper must pass, and the helpers of the parse
// tests (also promscrape's).

// NewMetricScraper makes drv's scraper of eps, closed when t ends.
func NewMetricScraper(t *testing.T, drv stores.Driver, eps []stores.Endpoint) stores.MetricScraper {
	t.Helper()
	s, err := drv.NewMetricScraper(eps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ScrapeAll scrapes every node of eps, failing t at the first error.
func ScrapeAll(t *testing.T, ctx context.Context, s stores.MetricScraper, eps []stores.Endpoint) map[int]stores.MetricSnapshot {
	t.Helper()
	out := map[int]stores.MetricSnapshot{}
	for _, ep := range eps {
		snap, err := s.Scrape(ctx, ep.Node)
		if err != nil {
			t.Fatalf("Scrape: %v", err)
		}
		out[ep.Node] = snap
	}
	return out
}

// Growth says why node's metrics now, a, have not grown enough from b, or
// "" when they have.
type Growth func(node int, b, a map[string]stores.MetricValue) string

// CountsGrew is the Growth of a node whose counts of names all grew.
func CountsGrew(names ...string) Growth {
	return func(node int, b, a map[string]stores.MetricValue) string {
		for _, name := range names {
			if a[name].Count <= b[name].Count {
				return fmt.Sprintf("%s %s count %v, before %v", plan.NodeName(node), name, a[name].Count, b[name].Count)
			}
		}
		return ""
	}
}

// WaitForGrowth scrapes every node of eps until grown, given a node's
// values before (from ScrapeAll) and now, returns "" for each (see
// WaitFor), and returns the last scrapes.
func WaitForGrowth(t *testing.T, ctx context.Context, s stores.MetricScraper, eps []stores.Endpoint, before map[int]stores.MetricSnapshot,
	within time.Duration, what string, grown Growth) map[int]stores.MetricSnapshot {
	t.Helper()
	var after map[int]stores.MetricSnapshot
	WaitFor(t, ctx, within, what, func() string {
		after = ScrapeAll(t, ctx, s, eps)
		for _, ep := range eps {
			if reason := grown(ep.Node, before[ep.Node].Values, after[ep.Node].Values); reason != "" {
				return reason
			}
		}
		return ""
	})
	return after
}

// WaitForLeader waits up to 30 s for exactly one node of eps to say it
// leads, and returns it.
func WaitForLeader(t *testing.T, ctx context.Context, drv stores.Driver, eps []stores.Endpoint) int {
	t.Helper()
	poller, err := drv.NewPoller(eps)
	if err != nil {
		t.Fatal(err)
	}
	defer poller.Close()
	leader := 0
	WaitFor(t, ctx, 30*time.Second, "one leader", func() string {
		ls := Leaders(poller.Poll(ctx, 2*time.Second))
		if len(ls) != 1 {
			return fmt.Sprintf("leaders %v", ls)
		}
		leader = ls[0]
		return ""
	})
	return leader
}

// PutKeys puts n keys named by keyFormat and 0..n-1 through one connection
// of drv's client, failing t at the first error.
func PutKeys(t *testing.T, ctx context.Context, drv stores.Driver, eps []stores.Endpoint, keyFormat string, n int) {
	t.Helper()
	cli, err := drv.NewClient(ctx, stores.ClientOptions{Endpoints: eps, Conns: 1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for i := range n {
		if res := cli.Do(ctx, stores.Op{Kind: plan.OpPut, Key: fmt.Sprintf(keyFormat, i), Value: []byte("v")}); res.Err != nil {
			t.Fatalf("put: %v", res.Err)
		}
	}
}

// CheckDeadScrapeFails checks that drv's scraper fails a scrape of an
// address where nothing listens within 3 s.
func CheckDeadScrapeFails(t *testing.T, drv stores.Driver) {
	t.Helper()
	dead := NewMetricScraper(t, drv, []stores.Endpoint{{Node: 1, ClientAddr: FreeAddrs(t, 1)[0]}})
	CheckFailsWithin(t, "scrape of a dead address", 3*time.Second, func() error {
		_, err := dead.Scrape(context.Background(), 1)
		return err
	})
}

// CheckFailsWithin checks that f returns an error, and within max.
func CheckFailsWithin(t *testing.T, what string, max time.Duration, f func() error) {
	t.Helper()
	start := time.Now()
	err := f()
	if took := time.Since(start); err == nil || took > max {
		t.Errorf("%s: %v after %s; want an error within %s", what, err, took, max)
	}
}

// MuteAddr is the address of a listener that accepts connections (the
// kernel does) but never answers, closed when t ends.
func MuteAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// CheckServerMetricsList checks that drv's server metrics are want, in
// order, those of everyMember and no other marked EveryMember, each with
// its source, help and unit.
func CheckServerMetricsList(t *testing.T, drv stores.Driver, want, everyMember []string) {
	t.Helper()
	var names []string
	for _, m := range drv.ServerMetrics {
		names = append(names, m.Name)
		if every := slices.Contains(everyMember, m.Name); m.EveryMember != every {
			t.Errorf("%s: EveryMember %t; want %t", m.Name, m.EveryMember, every)
		}
		if m.Source == "" || m.Help == "" || m.Unit == "" {
			t.Errorf("%s: source, help and unit must be set: %+v", m.Name, m)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("ServerMetrics = %v; want %v", names, want)
	}
}

// Inf is +Inf, the last bucket's bound.
var Inf = math.Inf(1)

// Buckets makes cumulative buckets from bound, count pairs.
func Buckets(pairs ...float64) []stores.Bucket {
	var out []stores.Bucket
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, stores.Bucket{UpperBound: pairs[i], Count: pairs[i+1]})
	}
	return out
}

// CheckValues checks that got has the metrics of want and no other, their
// values, sums and counts equal to a relative tol (0 for exact; sums of
// series may round differently than the constants; NaN equals NaN), and
// the same buckets (none where want has none).
func CheckValues(t *testing.T, got, want map[string]stores.MetricValue, tol float64) {
	t.Helper()
	near := func(a, b float64) bool {
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.IsNaN(a) && math.IsNaN(b)
		}
		return a == b || math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: missing", name)
			continue
		}
		same := near(g.Value, w.Value) && near(g.Sum, w.Sum) && near(g.Count, w.Count) &&
			len(g.Buckets) == len(w.Buckets) && (g.Buckets == nil) == (w.Buckets == nil)
		for i := 0; same && i < len(w.Buckets); i++ {
			same = g.Buckets[i].UpperBound == w.Buckets[i].UpperBound && g.Buckets[i].Count == w.Buckets[i].Count
		}
		if !same {
			t.Errorf("%s = %+v; want %+v", name, g, w)
		}
	}
	for name, g := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s = %+v; want none", name, g)
		}
	}
}

// Testdata is the text of file name in the test's testdata folder.
func Testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ParseCase is a text a store's parser reads, and the values it must give
// or the error.
type ParseCase struct {
	Name    string
	Text    string
	Want    map[string]stores.MetricValue
	WantErr string // the error contains it; none if ""
}

// CheckParse runs each case as a subtest: parse reads its text, and gives
// its values to a relative tol (see CheckValues) or its error.
func CheckParse(t *testing.T, parse func(text string) (map[string]stores.MetricValue, error), tol float64, cases []ParseCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got, err := parse(c.Text)
			if CheckErr(t, err, c.WantErr) {
				return
			}
			CheckValues(t, got, c.Want, tol)
		})
	}
}

// CheckErr checks err against a case's wantErr: with none, it fails t
// at once on any error and returns false; else it fails t at once unless
// err contains wantErr, and returns true, the case done.
func CheckErr(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("error %v; want one containing %q", err, wantErr)
	}
	return true
}
