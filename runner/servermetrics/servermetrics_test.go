package servermetrics

import (
	"context"
	"errors"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/stores"
)

var testMetrics = []stores.ServerMetric{
	{Name: "fsync", Kind: stores.MetricHistogram, Unit: stores.UnitSeconds},
	{Name: "commit", Kind: stores.MetricSummary, Unit: stores.UnitMillis},
	{Name: "failed", Kind: stores.MetricCounter, Unit: stores.UnitCount},
	{Name: "watchers", Kind: stores.MetricGauge, Unit: stores.UnitCount},
}

// hist is a histogram of n observations at 1 ms, m at 5 ms and k at 50 ms,
// in seconds, with buckets at 2 ms, 10 ms, 100 ms and +Inf.
func hist(n, m, k float64) stores.MetricValue {
	return stores.MetricValue{Sum: n*0.001 + m*0.005 + k*0.05, Count: n + m + k, Buckets: []stores.Bucket{
		{UpperBound: 0.002, Count: n}, {UpperBound: 0.01, Count: n + m}, {UpperBound: 0.1, Count: n + m + k}, {UpperBound: math.Inf(1), Count: n + m + k},
	}}
}

// snapshot is one scrape of one node, for the tests to feed a Recorder.
type snapshot struct {
	at     time.Duration
	values map[string]stores.MetricValue
}

func snapOf(at time.Duration, h stores.MetricValue, commitSum, commitCount, failed, watchers float64) snapshot {
	return snapshot{at: at, values: map[string]stores.MetricValue{
		"fsync": h, "commit": {Sum: commitSum, Count: commitCount},
		"failed": {Value: failed}, "watchers": {Value: watchers},
	}}
}

// feed gives r every node's snapshots, in time order.
func feed(r *Recorder, nodes ...[]snapshot) {
	for n, snaps := range nodes {
		for _, s := range snaps {
			r.add(n, s.at, s.values)
		}
	}
}

func TestWindow(t *testing.T) {
	s := time.Second
	node1 := []snapshot{
		snapOf(0, hist(0, 0, 0), 0, 0, 0, 10),
		snapOf(1*s, hist(100, 0, 0), 100, 100, 1, 20),
		snapOf(2*s, hist(190, 0, 10), 300, 200, 3, 30), // phase 2 starts after 1 s
		// the node restarted: its counts start again
		snapOf(3*s, hist(5, 5, 0), 20, 10, 1, 5),
	}
	node2 := []snapshot{
		snapOf(0, hist(0, 0, 0), 0, 0, 0, 1),
		snapOf(2*s, hist(0, 100, 0), 50, 10, 0, 2),
	}
	for _, tc := range []struct {
		name string
		cuts []time.Duration
	}{
		{"every step kept", nil},
		{"steps merged between the windows' ends", []time.Duration{0, s, 3 * s}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(nil, testMetrics, 2, time.Time{}, tc.cuts, nil)
			feed(r, node1, node2)
			checkWindows(t, r)
		})
	}
}

func checkWindows(t *testing.T, r *Recorder) {
	s := time.Second
	first := r.Window(0, s)
	if got := first["fsync"].Values; got["count"] != 100 || got["p99"] > 2 || got["mean"] != 1 {
		t.Errorf("first second's fsync %v; want 100 observations at 1 ms", got)
	}
	if got := first["failed"].Values["delta"]; got != 1 {
		t.Errorf("first second's failures %v, want 1", got)
	}
	second := r.Window(s, 3*s)
	f := second["fsync"]
	if f.Unit != stores.UnitMillis || f.Values["count"] != 90+10+10+100 {
		t.Fatalf("fsync over seconds 1-3 %+v; want 210 observations in ms", f)
	}
	// 95 at 1 ms, 105 at 5 ms, 10 at 50 ms: the median is in the 2-10 ms
	// bucket, the p99 in the 10-100 ms one.
	if p50, p99 := f.Values["p50"], f.Values["p99"]; p50 < 2 || p50 > 10 || p99 < 10 || p99 > 100 {
		t.Errorf("p50 %.2f ms, p99 %.2f ms", p50, p99)
	}
	if c := second["commit"].Values; c["count"] != 100+10+10 || math.Abs(c["mean"]-(200+20+50)/120.0) > 1e-9 {
		t.Errorf("commit %v", c)
	}
	if d := second["failed"].Values; d["delta"] != 2+1 || d["per_s"] != 1.5 {
		t.Errorf("failed %v; want 3 over 2 s, the restart's count included", d)
	}
	if g := second["watchers"].Values; g["max"] != 30 || g["total"] != 5+2 {
		t.Errorf("watchers %v; want max 30 and the nodes' last values summed, 7", g)
	}
	if _, ok := r.Window(10*s, 20*s)["fsync"]; ok {
		t.Error("a window with no scrape has figures")
	}
}

func TestQuantile(t *testing.T) {
	b := map[float64]float64{1: 50, 2: 100, math.Inf(1): 100}
	for _, tc := range []struct{ q, want float64 }{{0.25, 0.5}, {0.5, 1}, {0.75, 1.5}, {1, 2}} {
		if got, ok := quantile(tc.q, b); !ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, %v; want %v", tc.q, got, ok, tc.want)
		}
	}
	if got, _ := quantile(0.99, map[float64]float64{1: 0, math.Inf(1): 10}); got != 1 {
		t.Errorf("a quantile in the +Inf bucket = %v, want the highest finite bound", got)
	}
}

// fakeScraper answers node 1 with a count that grows, and fails node 2.
type fakeScraper struct {
	mu sync.Mutex
	n  float64
}

func (f *fakeScraper) Scrape(_ context.Context, node int) (stores.MetricSnapshot, error) {
	if node == 2 {
		return stores.MetricSnapshot{}, errors.New("down")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return stores.MetricSnapshot{At: time.Now(), Values: map[string]stores.MetricValue{"failed": {Value: f.n}}}, nil
}
func (f *fakeScraper) Close() error { return nil }

func TestRun(t *testing.T) {
	base := time.Now()
	r := New(&fakeScraper{}, testMetrics, 2, base, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	r.Run(ctx, 20*time.Millisecond)
	if r.Errors() == 0 {
		t.Error("node 2's failures were not counted")
	}
	got := r.Window(0, time.Since(base))["failed"].Values["delta"]
	if got < 4 {
		t.Errorf("delta %v over about 6 scrapes; want the growth between them", got)
	}
}

func TestWindowEveryMember(t *testing.T) {
	s := time.Second
	seenBy := []stores.ServerMetric{{Name: "leader_changes", Kind: stores.MetricCounter, Unit: stores.UnitCount, EveryMember: true}}
	r := New(nil, seenBy, 3, time.Time{}, nil, nil)
	for n, counts := range [][]float64{{1, 2}, {1, 2}, {0, 1}} {
		for i, c := range counts {
			r.add(n, time.Duration(i)*s, map[string]stores.MetricValue{"leader_changes": {Value: c}})
		}
	}
	// One election, seen by all three members: one change, not three.
	if got := r.Window(0, 2*s)["leader_changes"].Values["delta"]; got != 1 {
		t.Errorf("leader changes %v, want 1", got)
	}
}

func TestStepsMergeBetweenCuts(t *testing.T) {
	s := time.Second
	r := New(nil, testMetrics, 1, time.Time{}, []time.Duration{0, 10 * s, 20 * s}, nil)
	for i := range 2000 { // a scrape every 10 ms for 20 s
		at := time.Duration(i) * 10 * time.Millisecond
		r.add(0, at, snapOf(at, hist(float64(i), 0, 0), float64(i), float64(i), float64(i), float64(i%7)).values)
	}
	if n := len(r.steps[0]); n > 3 {
		t.Errorf("%d steps kept for 3 intervals between cuts; want them merged", n)
	}
	if got := r.Window(0, 10*s)["failed"].Values["delta"]; got != 1000 {
		t.Errorf("failures in the first 10 s: %v, want 1000", got)
	}
	if got := r.Window(10*s, 20*s)["fsync"].Values["count"]; got != 999 {
		t.Errorf("fsyncs in the second 10 s: %v, want 999 (the last scrape is at 19.99 s)", got)
	}
	if g := r.Window(0, 20*s)["watchers"].Values; g["max"] != 6 || g["total"] != float64(1999%7) {
		t.Errorf("watchers %v; want max 6 and the last level %d", g, 1999%7)
	}
}

// timedScraper records when each node was scraped.
type timedScraper struct {
	mu sync.Mutex
	at map[int][]time.Time
}

func (s *timedScraper) Scrape(_ context.Context, node int) (stores.MetricSnapshot, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[node] = append(s.at[node], now)
	return stores.MetricSnapshot{At: now, Values: map[string]stores.MetricValue{"failed": {Value: 1}}}, nil
}
func (s *timedScraper) Close() error { return nil }

func TestStagger(t *testing.T) {
	every := time.Second
	for _, tc := range []struct {
		nodes int
		want  []time.Duration
	}{
		{1, []time.Duration{500 * time.Millisecond}},
		{2, []time.Duration{250 * time.Millisecond, 750 * time.Millisecond}},
		{3, []time.Duration{every / 6, every / 2, every * 5 / 6}},
	} {
		for n, want := range tc.want {
			if got := stagger(n, tc.nodes, every); got != want {
				t.Errorf("stagger(%d, %d) = %v, want %v", n, tc.nodes, got, want)
			}
		}
	}
}

// TestRunStaggers checks that after the first round, taken at once, no two
// nodes are scraped at the same moment: each keeps its own offset in the
// interval, half an interval from the other's. The nodes are those of one
// recorder, or of two recorders (two clusters) spread over the run's nodes.
func TestRunStaggers(t *testing.T) {
	const every = 600 * time.Millisecond
	for _, tc := range []struct {
		name   string
		nodes  []int // per recorder
		spread bool
	}{
		{"one cluster", []int{2}, false},
		{"two clusters", []int{1, 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*every+every/2)
			defer cancel()
			var (
				scrapers []*timedScraper
				wg       sync.WaitGroup
				first    int
			)
			for _, n := range tc.nodes {
				s := &timedScraper{at: map[int][]time.Time{}}
				r := New(s, testMetrics, n, time.Now(), nil, nil)
				if tc.spread {
					r.Spread(first, 2)
					first += n
				}
				scrapers = append(scrapers, s)
				wg.Go(func() { r.Run(ctx, every) })
			}
			wg.Wait()
			// The staggered scrapes of each node: after its first, taken
			// with every node's at Run's start, and before the deadline,
			// after which every node is scraped once more, at once.
			deadline, _ := ctx.Deadline()
			var times [][]time.Time // per node of the run
			for _, s := range scrapers {
				for node := 1; node <= len(s.at); node++ {
					at := s.at[node][1:]
					times = append(times, at[:sort.Search(len(at), func(i int) bool { return !at[i].Before(deadline) })])
				}
			}
			a, b := times[0], times[1]
			if len(a) < 2 || len(b) < 2 {
				t.Fatalf("staggered scrapes: %d and %d; want at least 2 each", len(a), len(b))
			}
			for _, tb := range b {
				for _, ta := range a {
					if d := tb.Sub(ta).Abs(); d < every/4 {
						t.Errorf("the two nodes were scraped %v apart; want about %v (staggered)", d, every/2)
					}
				}
			}
		})
	}
}

func TestSpreadIgnoresSlotsThatDoNotFit(t *testing.T) {
	r := New(nil, testMetrics, 3, time.Time{}, nil, nil)
	r.Spread(2, 4) // slots 2..4 of 4: does not fit
	if r.first != 0 || r.total != 3 {
		t.Errorf("after Spread(2, 4) of 3 nodes: first %d, total %d; want 0 and 3", r.first, r.total)
	}
	r.Spread(1, 4)
	if r.first != 1 || r.total != 4 {
		t.Errorf("after Spread(1, 4): first %d, total %d; want 1 and 4", r.first, r.total)
	}
}
