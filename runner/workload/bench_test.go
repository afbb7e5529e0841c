package workload

import (
	"context"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/stores"
)

func BenchmarkArrivalsNext(b *testing.B) {
	for _, bc := range []struct {
		name string
		load plan.LoadSpec
	}{
		{"constant", openLoad(1e6, 1e6, time.Hour)},
		{"ramp", openLoad(0, 1e6, time.Hour)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := Arrivals(bc.load)
			for b.Loop() {
				if _, ok := s.Next(); !ok {
					b.Fatal("schedule exhausted")
				}
			}
		})
	}
}

// BenchmarkDispatcher measures the open-loop bookkeeping per arrival, without
// clock or store: next due time, release into the backlog, take by a worker,
// due time recomputed from the index.
func BenchmarkDispatcher(b *testing.B) {
	s := Arrivals(openLoad(1e6, 1e6, time.Hour))
	q := newBacklog(1)
	for b.Loop() {
		s.Next()
		q.release(1, 0)
		k, _, _, _ := q.take()
		s.At(k)
	}
}

type discardSink struct{}

func (discardSink) Record(metrics.Sample) {}

type instantStore struct{}

func (instantStore) Do(context.Context, stores.Op) stores.Result { return stores.Result{} }
func (instantStore) Close() error                                { return nil }

// BenchmarkOpenLoopEngine runs the whole open-loop path with a store that
// answers at once, at a rate no machine keeps up with, so every arrival is
// due immediately: ns/op is the engine's cost per request (dispatch, op
// generation, timeout context, sample).
func BenchmarkOpenLoopEngine(b *testing.B) {
	spec := testSpec()
	const rate = 1e9 // one arrival per nanosecond of schedule
	e, err := New(spec, instantStore{}, func() metrics.Sink { return discardSink{} }, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	st, err := e.Run(context.Background(), openLoad(rate, rate, time.Duration(b.N)), e.now())
	if err != nil {
		b.Fatal(err)
	}
	if st.Sent+st.Expired != int64(b.N) {
		b.Fatalf("%d sent, %d expired, want %d", st.Sent, st.Expired, b.N)
	}
}

func BenchmarkGeneratorNextOp(b *testing.B) {
	for _, dist := range []string{plan.DistSequential, plan.DistUniform, plan.DistZipfian} {
		b.Run(dist, func(b *testing.B) {
			spec := testSpec()
			spec.Distribution, spec.Keyspace, spec.ValueSize = dist, 100000, 256
			spec.Mix = []plan.OpWeight{{Op: plan.OpPut, Weight: 0.5}, {Op: plan.OpGet, Weight: 0.5}}
			g := mustGen(b, spec, 0)
			b.ReportAllocs()
			for b.Loop() {
				g.NextOp()
			}
		})
	}
}

func BenchmarkKeyspaceKey(b *testing.B) {
	spec := testSpec()
	spec.Keyspace = 100000
	ks, _ := NewKeyspace(spec)
	b.Run("Key", func(b *testing.B) {
		b.ReportAllocs()
		i := int64(0)
		for b.Loop() {
			ks.Key(i % ks.Len())
			i++
		}
	})
	b.Run("AppendKey", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, spec.KeySize)
		i := int64(0)
		for b.Loop() {
			buf = ks.AppendKey(buf[:0], i%ks.Len())
			i++
		}
	})
}

// BenchmarkClosedLoopCollector runs the closed loop of 1000 clients (the put
// benchmark's) against a store that answers at once, recording into a real
// collector that merges in the background: ns/op and allocs/op are what the
// engine and the collector cost per request, beside the store client's own.
func BenchmarkClosedLoopCollector(b *testing.B) {
	spec := testSpec()
	spec.Clients, spec.ValueSize, spec.Keyspace, spec.Distribution = 1000, 256, 100000, plan.DistSequential
	base := time.Now()
	// A phase far longer than any run, so every sample lands in it.
	coll := metrics.NewCollector([]plan.PhaseSpan{{Name: "p", Duration: plan.Duration(time.Hour)}}, []plan.WorkloadSpec{spec}, base)
	e, err := New(spec, instantStore{}, coll.NewSink, base)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { coll.Run(ctx); close(done) }()
	d := 2 * time.Second
	b.ReportAllocs()
	b.ResetTimer()
	st, err := e.Run(context.Background(), closedLoad(spec.Clients, spec.Clients, d), e.now())
	b.StopTimer()
	cancel()
	<-done
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(d.Nanoseconds())/float64(st.Sent), "ns/req")
	b.ReportMetric(float64(st.Sent), "reqs")
}
