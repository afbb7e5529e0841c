package metrics

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/coordlab/scenario/plan"
)

// TestConcurrentSinks records from many workers while a merger merges,
// seals and snapshots concurrently; nothing may be lost or counted twice.
// Run it with -race.
func TestConcurrentSinks(t *testing.T) {
	const workers, perWorker = 32, 3000
	c := newTestCollector(span("a", 0, 5*s), span("b", 5*s, 5*s))
	var wg sync.WaitGroup
	for w := range workers {
		sk := c.NewSink()
		wg.Go(func() {
			for i := range perWorker {
				at := time.Duration(i) * 10 * s / perWorker
				x := put(at, at, at+time.Duration(w+1)*ms, "")
				if i%10 == 0 {
					x.Class = plan.ErrTimeout
				}
				sk.Record(x)
			}
		})
	}
	stop := make(chan struct{})
	merged := make(chan struct{})
	go func() {
		defer close(merged)
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			c.mu.Lock()
			c.merge()
			c.seal(k % 4) // seals lag behind the data, as in a real run
			c.mu.Unlock()
			_ = c.Snapshot()
			_, _ = c.LastWriteBefore(time.Duration(k%10) * s)
			if k%5 == 0 {
				w := c.WatchWrites(time.Duration(k%10) * s)
				w.Fix(time.Duration(k%10)*s + ms)
				_, _ = w.First()
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-merged
	r := c.Results()
	total := r.Run.Total
	if total.Count != workers*perWorker {
		t.Fatalf("count %d, want %d", total.Count, workers*perWorker)
	}
	if total.Errors != workers*perWorker/10 || total.ErrorsBy[plan.ErrTimeout] != total.Errors {
		t.Errorf("errors %d (%v), want %d timeouts", total.Errors, total.ErrorsBy, workers*perWorker/10)
	}
	if got := r.Phases[0].Total.Count + r.Phases[1].Total.Count; got != total.Count {
		t.Errorf("phases sum to %d, run says %d", got, total.Count)
	}
	var series int64
	for _, p := range r.Series[0].Points {
		series += p.Ops
	}
	if series != total.Count {
		t.Errorf("series sums to %d, want %d", series, total.Count)
	}
	if total.Latency.MaxMS != workers || total.Latency.MinMS != 1 {
		t.Errorf("latency %+v, want 1..%d ms", total.Latency, workers)
	}
}

func TestRunSealsAndStops(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the collector's one-second tick")
	}
	// The run began 5 s ago: seconds 0..2 are due to be sealed.
	c := NewCollector([]plan.PhaseSpan{span("p", 0, 10*s)}, nil, time.Now().Add(-5*time.Second))
	record(c, put(0, 0, 500*ms, ""), put(2*s, 2*s, 2*s+ms, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	c.mu.Lock()
	sealed, ops := c.sealed, c.ops[opKey{"w", plan.OpPut}]
	c.mu.Unlock()
	if sealed < 3 {
		t.Errorf("sealed %d seconds, want >= 3", sealed)
	}
	if ops == nil || !ops.seconds[2].sealed || ops.seconds[2].p50 == 0 {
		t.Errorf("second 2 not sealed with its percentiles: %+v", ops)
	}
}

func TestIntervalLogs(t *testing.T) {
	c := newTestCollector(span("p", 0, 3*s))
	var samples []Sample
	for i := range 30 {
		at := time.Duration(i) * 100 * ms
		samples = append(samples, put(at, at+ms, at+3*ms, ""), get(at, at, at+ms, ""))
	}
	samples = append(samples, get(0, 0, ms, plan.ErrTimeout)) // errors stay out of the logs
	record(c, samples...)
	c.Flush()
	dir := t.TempDir()
	if err := c.WriteIntervalLogs(dir); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file      string
		wantCount int64
		wantMaxUS int64 // corrected
	}{
		{"w.put.hlog", 30, 3000},
		{"w.get.hlog", 30, 1000},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(filepath.Join(dir, tt.file))
		if err != nil {
			t.Fatal(err)
		}
		rd := hdr.NewHistogramLogReader(bytes.NewReader(b))
		var intervals int
		counts := map[string]int64{}
		maxes := map[string]int64{}
		for {
			h, err := rd.NextIntervalHistogram()
			if err != nil {
				t.Fatalf("%s: %v", tt.file, err)
			}
			if h == nil {
				break
			}
			intervals++
			counts[h.Tag()] += h.TotalCount()
			maxes[h.Tag()] = max(maxes[h.Tag()], h.Max())
		}
		if intervals != 6 { // 3 seconds × 2 tags
			t.Errorf("%s: %d intervals, want 6", tt.file, intervals)
		}
		if counts[tagCorrected] != tt.wantCount || counts[tagRaw] != tt.wantCount {
			t.Errorf("%s: counts %v, want %d per tag", tt.file, counts, tt.wantCount)
		}
		if m := maxes[tagCorrected]; m < tt.wantMaxUS || m > tt.wantMaxUS+tt.wantMaxUS/100 {
			t.Errorf("%s: corrected max %d µs, want ~%d", tt.file, m, tt.wantMaxUS)
		}
	}
}

// BenchmarkSinkRecord measures a worker's cost per sample. The collector's
// side is left out: the buffer is handed back, unprocessed, every 4096
// records, as a merge would.
func BenchmarkSinkRecord(b *testing.B) {
	c := newTestCollector(span("p", 0, time.Hour))
	sk := c.NewSink().(*sink)
	x := put(s, s, s+ms, "")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sk.Record(x)
		if i&4095 == 4095 {
			sk.mu.Lock()
			sk.buf = sk.buf[:0]
			sk.mu.Unlock()
		}
	}
}

// BenchmarkMerge measures the collector's cost per sample: phase, second,
// histograms and write log.
func BenchmarkMerge(b *testing.B) {
	c := newTestCollector(span("p", 0, time.Hour))
	sk := c.NewSink()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		at := time.Duration(i) * 50 * time.Microsecond % time.Hour
		sk.Record(put(at, at, at+time.Duration(i%5000)*time.Microsecond, ""))
		if i&4095 == 4095 {
			c.mu.Lock()
			c.merge()
			c.seal(int(at/time.Second) - 1)
			c.mu.Unlock()
		}
	}
}

// BenchmarkTick measures one collector tick of a 2,000 ops/s run: a second
// of 1,000 puts and 1,000 gets merged, then sealed (percentiles, interval
// log lines, write log). The tick's time is time the dispatcher may wait
// for a core on a 2-core machine.
func BenchmarkTick(b *testing.B) {
	c := newTestCollector(span("p", 0, time.Hour))
	sk := c.NewSink()
	b.ReportAllocs()
	for k := 0; b.Loop(); k++ {
		base := time.Duration(k%3600) * s
		for i := range 1000 {
			at := base + time.Duration(i)*ms
			lat := time.Duration(500+i%5000) * time.Microsecond
			sk.Record(put(at, at, at+lat, ""))
			sk.Record(get(at, at, at+lat, ""))
		}
		c.mu.Lock()
		c.merge()
		c.seal(k%3600 + 1)
		c.mu.Unlock()
	}
}

// BenchmarkProgressHour compares what a progress line cost an hour into
// a run: the whole Snapshot it used to render (the reference), and
// Progress.
func BenchmarkProgressHour(b *testing.B) {
	const seconds = 3600
	c := newTestCollector(span("p", 0, seconds*s))
	sk := c.NewSink()
	for k := range seconds {
		for i := range 10 {
			at := time.Duration(k)*s + time.Duration(i)*100*ms
			sk.Record(put(at, at, at+2*ms, ""))
			sk.Record(get(at, at, at+ms, ""))
		}
		if k%100 == 99 {
			c.mu.Lock()
			c.merge()
			c.seal(k)
			c.mu.Unlock()
		}
	}
	b.Run("snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = c.Snapshot()
		}
	})
	b.Run("progress", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = c.Progress(seconds - 10)
		}
	})
}
