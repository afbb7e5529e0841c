package metrics

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

const (
	ms = time.Millisecond
	s  = time.Second
)

func span(name string, start, dur time.Duration) plan.PhaseSpan {
	return plan.PhaseSpan{Name: name, Start: plan.Duration(start), Duration: plan.Duration(dur)}
}

// newTestCollector returns a collector whose base lies far in the past, so
// that snapshots see every phase as over.
func newTestCollector(phases ...plan.PhaseSpan) *Collector {
	wl := []plan.WorkloadSpec{{Name: "w", Mix: []plan.OpWeight{{Op: plan.OpPut, Weight: 0.5}, {Op: plan.OpGet, Weight: 0.5}}}}
	return NewCollector(phases, wl, time.Now().Add(-time.Hour))
}

func put(intended, start, end time.Duration, class string) Sample {
	return Sample{Workload: "w", Op: plan.OpPut, Intended: intended, Start: start, End: end, Class: class, Write: true}
}

func get(intended, start, end time.Duration, class string) Sample {
	return Sample{Workload: "w", Op: plan.OpGet, Intended: intended, Start: start, End: end, Class: class}
}

func record(c *Collector, samples ...Sample) {
	sk := c.NewSink()
	for _, x := range samples {
		sk.Record(x)
	}
}

func opStats(t *testing.T, p results.Phase, op string) results.OpStats {
	t.Helper()
	for _, o := range p.Ops {
		if o.Op == op {
			return o
		}
	}
	t.Fatalf("phase %s has no op %s (ops %+v)", p.Name, op, p.Ops)
	return results.OpStats{}
}

// TestCoordinatedOmission plays an open-loop schedule of 100 ops/s through
// one connection that stalls for 2 s: the ops due during the stall are sent
// late, so their corrected latency carries the stall while raw latency
// stays at the service time.
func TestCoordinatedOmission(t *testing.T) {
	c := newTestCollector(span("steady", 0, 10*s))
	var samples []Sample
	var free time.Duration
	for i := range 1000 {
		intended := time.Duration(i) * 10 * ms
		start := max(intended, free)
		service := ms
		if intended == 4*s {
			service = 2 * s // the stall
		}
		end := start + service
		free = end
		samples = append(samples, put(intended, start, end, ""))
	}
	record(c, samples...)
	r := c.Results()
	st := opStats(t, r.Phases[0], plan.OpPut)
	if st.Count != 1000 || st.OK != 1000 {
		t.Fatalf("count %d ok %d, want 1000", st.Count, st.OK)
	}
	if st.Latency.P99MS < 1900 || st.Latency.P99MS > 2100 {
		t.Errorf("corrected p99 = %v ms, want ~2000 (the stall)", st.Latency.P99MS)
	}
	if st.Latency.MaxMS < 2000 {
		t.Errorf("corrected max = %v ms, want >= 2000", st.Latency.MaxMS)
	}
	if st.RawLatency.P99MS > 2 {
		t.Errorf("raw p99 = %v ms, want ~1 (service time)", st.RawLatency.P99MS)
	}
	if st.RawLatency.MaxMS < 2000 {
		t.Errorf("raw max = %v ms, want the stalled op's 2000", st.RawLatency.MaxMS)
	}
	// The ops due during the stall, and the backlog after it, were sent
	// late by more than 1 ms.
	var late int64
	for _, x := range samples {
		if x.Start-x.Intended > ms {
			late++
		}
	}
	if late < 200 || st.LateStarts != late {
		t.Errorf("late starts = %d, want %d (>= 200)", st.LateStarts, late)
	}
	if r.Phases[0].Total.LateStarts != st.LateStarts {
		t.Errorf("phase late starts %d != op late starts %d", r.Phases[0].Total.LateStarts, st.LateStarts)
	}
}

func TestAvailabilityAndErrors(t *testing.T) {
	tests := []struct {
		name      string
		samples   []Sample
		wantAvail *float64
		wantBy    map[string]int64
		wantRPS   float64
	}{
		{
			name:      "all ok",
			samples:   []Sample{put(1*s, 1*s, 1*s+ms, ""), get(2*s, 2*s, 2*s+ms, "")},
			wantAvail: results.Ptr(1.0),
			wantBy:    map[string]int64{plan.ErrTimeout: 0, plan.ErrUnavailable: 0, plan.ErrConnection: 0, plan.ErrOther: 0},
			wantRPS:   0.2,
		},
		{
			name: "one of each class",
			samples: []Sample{
				put(1*s, 1*s, 1*s+ms, ""),
				put(1*s, 1*s, 2*s, plan.ErrTimeout),
				get(1*s, 1*s, 1*s+ms, plan.ErrUnavailable),
				get(1*s, 1*s, 1*s+ms, plan.ErrConnection),
				get(1*s, 1*s, 1*s+ms, "weird"), // unknown classes count as other
			},
			wantAvail: results.Ptr(0.2),
			wantBy:    map[string]int64{plan.ErrTimeout: 1, plan.ErrUnavailable: 1, plan.ErrConnection: 1, plan.ErrOther: 1},
			wantRPS:   0.1,
		},
		{
			name:      "nothing attempted",
			samples:   nil,
			wantAvail: nil,
			wantBy:    map[string]int64{plan.ErrTimeout: 0, plan.ErrUnavailable: 0, plan.ErrConnection: 0, plan.ErrOther: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCollector(span("p", 0, 10*s))
			record(c, tt.samples...)
			r := c.Results()
			p := r.Phases[0]
			switch {
			case tt.wantAvail == nil && p.Availability != nil:
				t.Errorf("availability = %v, want null", *p.Availability)
			case tt.wantAvail != nil && (p.Availability == nil || *p.Availability != *tt.wantAvail):
				t.Errorf("availability = %v, want %v", p.Availability, *tt.wantAvail)
			}
			for class, n := range tt.wantBy {
				if p.Total.ErrorsBy[class] != n {
					t.Errorf("errors_by[%s] = %d, want %d", class, p.Total.ErrorsBy[class], n)
				}
			}
			if math.Abs(p.Total.Throughput-tt.wantRPS) > 1e-9 {
				t.Errorf("throughput = %v, want %v", p.Total.Throughput, tt.wantRPS)
			}
			// Errors never enter the latency histograms.
			if tt.wantAvail != nil {
				if l := p.Total.Latency; l == nil || l.MaxMS > 1 {
					t.Errorf("latency %+v includes errors", l)
				}
			}
		})
	}
}

// TestPhaseByIntendedTime checks that an op stalled across a phase boundary
// belongs to the phase that sent it.
func TestPhaseByIntendedTime(t *testing.T) {
	c := newTestCollector(span("a", 0, 10*s), span("b", 10*s, 10*s))
	record(c, put(9*s, 9*s, 12*s, ""), put(-1*s, -1*s, 0, ""), put(25*s, 25*s, 25*s+ms, ""))
	r := c.Results()
	if got := r.Phases[0].Total.OK; got != 1 {
		t.Errorf("phase a ok = %d, want 1", got)
	}
	if got := r.Phases[1].Total.Count; got != 0 {
		t.Errorf("phase b count = %d, want 0", got)
	}
	if r.Notes["samples_outside_phases"] == "" {
		t.Errorf("no note about the 2 samples outside phases: %v", r.Notes)
	}
}

func TestMaxGap(t *testing.T) {
	every := func(from, to, step time.Duration) []Sample {
		var out []Sample
		for at := from; at <= to; at += step {
			out = append(out, put(at-ms, at-ms, at, ""))
		}
		return out
	}
	tests := []struct {
		name      string
		samples   []Sample
		wantPhase []*float64 // ms per phase, nil = null
		wantRun   *float64
	}{
		{
			name:      "gap spans the boundary",
			samples:   append(every(1*s, 8*s, s), every(13*s, 19*s, s)...),
			wantPhase: []*float64{results.Ptr(2000.0), results.Ptr(3000.0)},
			wantRun:   results.Ptr(5000.0),
		},
		{
			name: "failed writes do not close a gap",
			samples: append(every(1*s, 19*s, s),
				put(9*s, 9*s, 9*s+500*ms, plan.ErrTimeout)),
			wantPhase: []*float64{results.Ptr(1000.0), results.Ptr(1000.0)},
			wantRun:   results.Ptr(1000.0),
		},
		{
			name:      "writes attempted, none succeeded in b",
			samples:   append(every(1*s, 9*s+900*ms, 100*ms), put(15*s, 15*s, 16*s, plan.ErrUnavailable)),
			wantPhase: []*float64{results.Ptr(1000.0), results.Ptr(10000.0)},
			wantRun:   results.Ptr(10100.0), // from the last write at 9.9 s
		},
		{
			name:      "reads only",
			samples:   []Sample{get(1*s, 1*s, 1*s+ms, "")},
			wantPhase: []*float64{nil, nil},
			wantRun:   nil,
		},
	}
	eq := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || math.Abs(*a-*b) < 1e-6) }
	show := func(v *float64) any {
		if v == nil {
			return "null"
		}
		return *v
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCollector(span("a", 0, 10*s), span("b", 10*s, 10*s))
			record(c, tt.samples...)
			r := c.Results()
			for i, want := range tt.wantPhase {
				if got := r.Phases[i].MaxGapMS; !eq(got, want) {
					t.Errorf("phase %s max gap = %v, want %v", r.Phases[i].Name, show(got), show(want))
				}
			}
			if got := r.Run.MaxGapMS; !eq(got, tt.wantRun) {
				t.Errorf("run max gap = %v, want %v", show(got), show(tt.wantRun))
			}
		})
	}
}

// TestGapCacheExact checks that gaps computed through the sealed-prefix
// cache, with late arrivals into sealed seconds, equal a plain scan.
func TestGapCacheExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	phases := []plan.PhaseSpan{span("a", 0, 7*s), span("b", 7*s, 3*s+500*ms), span("c", 10*s+500*ms, 9*s)}
	for round := range 20 {
		c := newTestCollector(phases...)
		var ends []time.Duration
		sk := c.NewSink()
		for i := range 200 {
			// Bursts with holes, so the longest gap moves around.
			end := time.Duration(rng.Int64N(int64(20 * s)))
			if rng.IntN(4) == 0 {
				end = time.Duration(rng.Int64N(int64(3*s))) + 12*s
			}
			sk.Record(put(end, end, end, ""))
			ends = append(ends, end)
			if i%37 == 0 {
				c.mu.Lock()
				c.merge()
				c.seal(rng.IntN(20))
				c.mu.Unlock()
			}
		}
		r := c.Results()
		scan := newGapScan(phases)
		for _, e := range sortedCopy(ends) {
			scan.feed(e)
		}
		res := scan.result(c.runEnd())
		want, wantRun := res.gap, res.runGap
		for i := range phases {
			if got := r.Phases[i].MaxGapMS; got == nil || *got != results.MS(want[i]) {
				t.Fatalf("round %d phase %d: gap %v, want %v", round, i, got, results.MS(want[i]))
			}
		}
		if got := *r.Run.MaxGapMS; got != results.MS(wantRun) {
			t.Fatalf("round %d: run gap %v, want %v", round, got, results.MS(wantRun))
		}
		for range 20 {
			at := time.Duration(rng.Int64N(int64(21 * s)))
			got, ok := c.LastWriteBefore(at)
			var want time.Duration
			found := false
			for _, e := range sortedCopy(ends) {
				if e < at {
					want, found = e, true
				}
			}
			if ok != found || got != want {
				t.Fatalf("LastWriteBefore(%v) = %v, %v; want %v, %v", at, got, ok, want, found)
			}
			got, ok = c.FirstWriteFrom(at)
			want, found = 0, false
			for _, e := range sortedCopy(ends) {
				if e >= at {
					want, found = e, true
					break
				}
			}
			if ok != found || got != want {
				t.Fatalf("FirstWriteFrom(%v) = %v, %v; want %v, %v", at, got, ok, want, found)
			}
		}
	}
}

func sortedCopy(d []time.Duration) []time.Duration {
	out := append([]time.Duration(nil), d...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func TestFailoverWrites(t *testing.T) {
	c := newTestCollector(span("p", 0, 20*s))
	record(c,
		put(1*s, 1*s, 1*s+10*ms, ""),
		put(2*s, 2*s, 2*s+20*ms, ""),
	)
	// A fault at 3 s; the watch starts a little before it took effect.
	w := c.WatchWrites(2*s + 900*ms)
	record(c,
		put(2*s+950*ms, 2*s+950*ms, 3*s+5*ms, ""), // sent before the fault took effect
		put(2*s+990*ms, 2*s+990*ms, 3*s+2*ms, ""), // in flight at the fault
		put(3*s+100*ms, 3*s+100*ms, 3*s+200*ms, plan.ErrUnavailable),
		put(3*s+500*ms, 3*s+500*ms, 5*s, ""),       // the first sent after it
		put(4*s, 4*s, 4*s+800*ms, plan.ErrTimeout), // failures never count
		put(5*s, 5*s, 5*s+10*ms, ""),
	)
	w.Fix(3 * s)
	first, ok := w.First()
	if !ok || first != 5*s {
		t.Errorf("first write sent after the fault completed at %v, %v; want 5s", first, ok)
	}
	last, ok := c.LastWriteBefore(3 * s)
	if !ok || last != 2*s+20*ms {
		t.Errorf("LastWriteBefore(3s) = %v, %v; want 2.02s", last, ok)
	}
	if _, ok := c.LastWriteBefore(time.Second); ok {
		t.Error("LastWriteBefore(1s) found a write")
	}
	if at, ok := c.FirstWriteFrom(3*s + 2*ms); !ok || at != 3*s+2*ms {
		t.Errorf("FirstWriteFrom(3.002s) = %v, %v; want 3.002s", at, ok)
	}
	if _, ok := c.FirstWriteFrom(5*s + 11*ms); ok {
		t.Error("FirstWriteFrom(5.011s) found a write")
	}
	start, end := c.LongestWriteGap(last, first)
	if start != 3*s+5*ms || end != 5*s {
		t.Errorf("LongestWriteGap = [%v, %v], want [3.005s, 5s]: the stragglers after the fault are not recovery", start, end)
	}
	late := c.WatchWrites(6 * s)
	late.Fix(6 * s)
	if _, ok := late.First(); ok {
		t.Error("a watch after the last write found one")
	}

	// A stopped watch sees nothing more; the others go on.
	stopped := c.WatchWrites(7 * s)
	stopped.Stop()
	record(c, put(8*s, 8*s, 8*s+10*ms, ""))
	stopped.Fix(7 * s)
	if _, ok := stopped.First(); ok {
		t.Error("a stopped watch saw a write")
	}
	if first, ok := late.First(); !ok || first != 8*s+10*ms {
		t.Errorf("the watch from 6s: first write at %v, %v; want 8.01s", first, ok)
	}
}

// After a fault is undone, each target's first answer is the first
// successful op it answered that was sent at or after the recovery: ops
// of other nodes, failures, unknown answerers and ops sent before the
// recovery do not count.
func TestWatchServed(t *testing.T) {
	c := newTestCollector(span("p", 0, 20*s))
	by := func(node int, x Sample) Sample { x.Node = node; return x }
	record(c,
		by(4, get(1*s, 1*s, 1*s+5*ms, "")),
		by(1, put(2*s, 2*s, 2*s+5*ms, "")),
	)
	if !c.ServedBefore(4, 2*s) || c.ServedBefore(5, 2*s) || c.ServedBefore(1, 2*s) {
		t.Errorf("ServedBefore(2s): n4 %v, n5 %v, n1 %v; want true, false, false (n1's answer completed after 2s)",
			c.ServedBefore(4, 2*s), c.ServedBefore(5, 2*s), c.ServedBefore(1, 2*s))
	}
	// The heal completes at 10 s; the watch starts just before it.
	w := c.WatchServed(9*s+900*ms, []int{4, 5})
	record(c,
		by(4, get(9*s+950*ms, 9*s+950*ms, 10*s+10*ms, "")),          // sent before the heal
		by(5, put(10*s+100*ms, 10*s+100*ms, 12*s, plan.ErrTimeout)), // failed
		by(1, put(10*s+100*ms, 10*s+100*ms, 10*s+110*ms, "")),       // not a target
		by(0, put(10*s+200*ms, 10*s+200*ms, 10*s+210*ms, "")),       // answerer unknown
		by(4, get(11*s, 11*s, 11*s+300*ms, "")),
		by(4, get(11*s+100*ms, 11*s+100*ms, 11*s+200*ms, "")), // sent later, answered first
		by(5, put(13*s, 13*s, 13*s+20*ms, "")),
	)
	w.Fix(10 * s)
	for _, tc := range []struct {
		node int
		want time.Duration
		ok   bool
	}{{4, 11*s + 200*ms, true}, {5, 13*s + 20*ms, true}, {1, 0, false}, {0, 0, false}} {
		got, ok := w.FirstServed(tc.node)
		if got != tc.want || ok != tc.ok {
			t.Errorf("FirstServed(%d) = %v, %v; want %v, %v", tc.node, got, ok, tc.want, tc.ok)
		}
	}
	if first, ok := w.First(); ok {
		t.Errorf("a served watch reports a first write at %v", first)
	}
}

func TestSeries(t *testing.T) {
	c := newTestCollector(span("p", 0, 3*s))
	var samples []Sample
	for i := range 100 { // second 0: 100 ok, 1..100 ms
		d := time.Duration(i+1) * ms
		samples = append(samples, get(0, 0, d, ""))
	}
	samples = append(samples,
		get(1*s, 1*s, 1*s+5*ms, plan.ErrTimeout),
		get(1*s, 1*s, 1*s+5*ms, plan.ErrTimeout),
		get(1*s, 1*s, 1*s+5*ms, plan.ErrConnection),
		get(1*s, 1*s, 2*s+7*ms, ""), // completes in second 2
	)
	record(c, samples...)
	r := c.Results()
	if len(r.Series) != 1 {
		t.Fatalf("series = %d, want 1", len(r.Series))
	}
	pts := r.Series[0].Points
	if len(pts) != 3 {
		t.Fatalf("points = %d, want 3 (one per second of the run)", len(pts))
	}
	tests := []struct {
		second   int
		ops      int64
		errs     int64
		by       map[string]int64
		p50, p99 float64 // -1 = null
	}{
		{0, 100, 0, nil, 50, 99},
		{1, 3, 3, map[string]int64{plan.ErrTimeout: 2, plan.ErrConnection: 1}, -1, -1},
		{2, 1, 0, nil, 1007, 1007},
	}
	for _, tt := range tests {
		p := pts[tt.second]
		if p.AtMS != float64(tt.second)*1000 || p.Ops != tt.ops || p.Errors != tt.errs {
			t.Errorf("second %d: %+v, want ops %d errors %d", tt.second, p, tt.ops, tt.errs)
		}
		if len(p.ErrorsBy) != len(tt.by) {
			t.Errorf("second %d: errors_by %v, want %v", tt.second, p.ErrorsBy, tt.by)
		}
		for k, v := range tt.by {
			if p.ErrorsBy[k] != v {
				t.Errorf("second %d: errors_by %v, want %v", tt.second, p.ErrorsBy, tt.by)
			}
		}
		checkPct := func(name string, got *float64, want float64) {
			switch {
			case want < 0 && got != nil:
				t.Errorf("second %d %s = %v, want null", tt.second, name, *got)
			case want >= 0 && (got == nil || math.Abs(*got-want) > want*0.002):
				t.Errorf("second %d %s = %v, want ~%v", tt.second, name, got, want)
			}
		}
		checkPct("p50", p.P50MS, tt.p50)
		checkPct("p99", p.P99MS, tt.p99)
	}
}

// TestLateArrival checks that a sample landing in a sealed second is still
// counted and leaves the gaps exact.
func TestLateArrival(t *testing.T) {
	c := newTestCollector(span("p", 0, 10*s))
	record(c, put(1*s, 1*s, 1*s, ""), put(9*s, 9*s, 9*s, ""))
	c.mu.Lock()
	c.merge()
	c.seal(8)
	c.mu.Unlock()
	record(c, put(5*s, 5*s, 5*s, "")) // second 5 is sealed
	r := c.Results()
	if got := *r.Phases[0].MaxGapMS; got != 4000 {
		t.Errorf("max gap = %v ms, want 4000", got)
	}
	if r.Series[0].Points[5].Ops != 1 {
		t.Errorf("late sample missing from its second: %+v", r.Series[0].Points[5])
	}
	if r.Notes["late_samples"] == "" {
		t.Errorf("no note about the late sample: %v", r.Notes)
	}
}

func TestWorkloadBreakdown(t *testing.T) {
	c := NewCollector([]plan.PhaseSpan{span("p", 0, 10*s)},
		[]plan.WorkloadSpec{{Name: "z-writers"}, {Name: "a-readers"}}, time.Now().Add(-time.Hour))
	record(c,
		Sample{Workload: "a-readers", Op: plan.OpGet, End: 2 * ms},
		Sample{Workload: "z-writers", Op: plan.OpPut, End: 4 * ms, Write: true},
		Sample{Workload: "z-writers", Op: plan.OpGet, End: 6 * ms},
	)
	p := c.Results().Phases[0]
	if len(p.Workloads) != 2 || p.Workloads[0].Name != "z-writers" || p.Workloads[1].Name != "a-readers" {
		t.Fatalf("workloads %+v, want plan order", p.Workloads)
	}
	if ops := p.Workloads[0].Ops; len(ops) != 2 || ops[0].Op != plan.OpPut || ops[1].Op != plan.OpGet {
		t.Errorf("ops %+v, want put then get", ops)
	}
	get := opStats(t, p, plan.OpGet)
	if get.Count != 2 || get.Latency.MinMS != 2 || get.Latency.MaxMS != 6 || get.Latency.MeanMS != 4 {
		t.Errorf("get over workloads = %+v %+v", get, get.Latency)
	}
	if p.Total.Count != 3 {
		t.Errorf("total count %d, want 3", p.Total.Count)
	}
}

// TestWorkloadGaps checks that each workload's write gap is its own: one
// workload's writes must not hide another's outage.
func TestWorkloadGaps(t *testing.T) {
	c := NewCollector([]plan.PhaseSpan{span("p", 0, 10*s)},
		[]plan.WorkloadSpec{{Name: "a"}, {Name: "b"}}, time.Now().Add(-time.Hour))
	var samples []Sample
	for at := 500 * ms; at < 10*s; at += 500 * ms {
		samples = append(samples, Sample{Workload: "a", Op: plan.OpPut, Intended: at, Start: at, End: at, Write: true})
		if at < 2*s || at > 8*s { // b is cut off from 2 s to 8 s
			samples = append(samples, Sample{Workload: "b", Op: plan.OpPut, Intended: at, Start: at, End: at, Write: true})
		} else {
			samples = append(samples, Sample{Workload: "b", Op: plan.OpPut, Intended: at, Start: at, End: at + ms, Write: true, Class: plan.ErrUnavailable})
		}
		samples = append(samples, Sample{Workload: "r", Op: plan.OpGet, Intended: at, Start: at, End: at})
	}
	record(c, samples...)
	r := c.Results()
	want := map[string]*float64{"a": results.Ptr(500.0), "b": results.Ptr(7000.0), "r": nil}
	for _, scope := range []results.Phase{r.Phases[0], r.Run} {
		if *scope.MaxGapMS != 500 {
			t.Errorf("%s: max gap %v, want 500 (a keeps writing)", scope.Name, *scope.MaxGapMS)
		}
		for _, w := range scope.Workloads {
			got, wantGap := w.MaxGapMS, want[w.Name]
			if (got == nil) != (wantGap == nil) || (got != nil && *got != *wantGap) {
				t.Errorf("%s: workload %s max gap %v, want %v", scope.Name, w.Name, got, wantGap)
			}
			if w.Name == "b" && (w.Availability == nil || *w.Availability != 6.0/19) {
				t.Errorf("%s: workload b availability %v, want 6/19", scope.Name, w.Availability)
			}
		}
	}
}

// TestPhaseResources: the runner's own process is sampled beside the
// nodes, and each phase condenses the samples stamped within it.
func TestPhaseResources(t *testing.T) {
	c := newTestCollector(span("a", 0, 2*s), span("b", 2*s, 2*s))
	for at := range 5 { // 0 is the baseline; 1..4 s carry CPU
		burn := time.Now().Add(50 * ms) // several of the kernel's ticks even on a busy machine
		for time.Now().Before(burn) {
		}
		c.self.SampleAt(time.Duration(at) * s)
		c.machine.SampleAt(time.Duration(at) * s)
	}
	c.resources.nodes["n1"] = &nodeSampler{points: []results.ResourcePoint{
		{AtMS: 1000, CPUPercent: 10, RSSBytes: 100, WrittenBytes: new(int64(5))},
		{AtMS: 2000, CPUPercent: 30, RSSBytes: 300, WrittenBytes: new(int64(7))},
		{AtMS: 3000, CPUPercent: 50, RSSBytes: 200, WrittenBytes: new(int64(17))},
	}}
	c.resources.order = []string{"n1"}
	r := c.Snapshot()
	if r.Runner == nil || r.Runner.Node != results.RunnerNode || r.Runner.Summary.Samples != 4 || r.Runner.Summary.RSSMaxBytes == 0 {
		t.Fatalf("runner: %+v, want 4 samples with an RSS", r.Runner)
	}
	a, b := r.Phases[0].Resources, r.Phases[1].Resources
	if got := a["n1"]; got.Samples != 2 || got.CPUMeanPercent != 20 || got.CPUMaxPercent != 30 || got.RSSMaxBytes != 300 || got.WrittenBytes == nil || *got.WrittenBytes != 2 {
		t.Errorf("phase a, n1: %+v (written %v), want 2 samples, mean 20%%, max 30%%, 300 B, 2 B written", got, got.WrittenBytes)
	}
	if got := b["n1"]; got.Samples != 1 || got.CPUMeanPercent != 50 || got.WrittenBytes == nil || *got.WrittenBytes != 10 {
		t.Errorf("phase b, n1: %+v, want the 3 s sample and 10 B written since 2 s", got)
	}
	if a[results.RunnerNode].Samples != 2 || b[results.RunnerNode].Samples != 2 || b[results.RunnerNode].CPUMeanPercent <= 0 {
		t.Errorf("runner by phase: a %+v, b %+v; want 2 samples each, some CPU", a[results.RunnerNode], b[results.RunnerNode])
	}
	// The machine (this one's /proc) is condensed the same way.
	if r.Machine == nil || len(r.Machine.Points) != 4 {
		t.Fatalf("machine: %+v, want 4 points", r.Machine)
	}
	for _, p := range append(r.Phases, r.Run) {
		want := 2
		if p.Name == "run" {
			want = 4
		}
		if p.Machine == nil || p.Machine.Samples != want || p.Machine.BusyMeanShare <= 0 {
			t.Errorf("%s: machine %+v, want %d samples, some busy time", p.Name, p.Machine, want)
		}
	}
	if _, ok := r.Metrics()["phase.b.steal_share"]; !ok {
		t.Error("no phase.b.steal_share metric")
	}
	// The runner's own wait for a CPU, from this kernel's schedstat.
	if _, err := os.Stat("/proc/self/schedstat"); err == nil {
		if w := b[results.RunnerNode].WaitShare(); w == nil || *w < 0 || *w > 1 {
			t.Errorf("runner in phase b: wait share %v, want a share in [0, 1]", w)
		}
		if _, ok := r.Metrics()["run.runner_wait_share"]; !ok {
			t.Error("no run.runner_wait_share metric")
		}
	}
}

// TestProgress checks that the progress read of a second agrees with the
// rendered per-second series, for requests only, sealed or not.
func TestProgress(t *testing.T) {
	c := newTestCollector(span("p", 0, 10*s))
	var samples []Sample
	for i := range 300 {
		at := time.Duration(i) * 10 * ms
		lat := time.Duration(1+i%40) * ms
		samples = append(samples, put(at, at, at+lat, ""), get(at, at, at+2*lat, ""))
		if i%7 == 0 {
			samples = append(samples, get(at, at, at+lat, plan.ErrTimeout))
		}
		// A notification is no request: in neither figure.
		samples = append(samples, Sample{Workload: "w", Op: plan.OpNotify, Intended: at, Start: at, End: at + 900*ms, Class: map[bool]string{true: plan.ErrTimeout}[i%3 == 0]})
	}
	record(c, samples...)
	for _, sealed := range []int{0, 2} {
		c.mu.Lock()
		c.merge()
		c.seal(sealed)
		c.mu.Unlock()
		snap := c.Snapshot()
		for k := -1; k <= 4; k++ {
			var want Progress
			for _, sr := range snap.Series {
				if plan.Observed(sr.Op) {
					continue
				}
				for _, pt := range sr.Points {
					want.Errors += pt.Errors
					if int(pt.AtMS/1000) == k {
						want.Ops += pt.Ops
						if pt.P99MS != nil {
							want.P99MS = max(want.P99MS, *pt.P99MS)
						}
					}
				}
			}
			if got := c.Progress(k); got != want {
				t.Errorf("sealed up to %d, second %d: Progress %+v, series say %+v", sealed, k, got, want)
			}
			if k >= 0 && k < 3 && want.Ops == 0 {
				t.Errorf("second %d: no requests; the test's samples cover it", k)
			}
		}
	}
}
