package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/etcd"
)

// oursSpec is the workload equivalent to `benchmark put --sequential-keys`:
// puts only, each client walking the keyspace in order from its own
// starting point. Keys differ in spelling (ours are zero-padded decimal,
// etcd's tool writes a varint into a zeroed buffer) but not in size, and both
// tools write the same number of distinct keys.
func oursSpec(c putCase) plan.WorkloadSpec {
	return oursSpecWith(c, plan.ClientSpec{})
}

// oursSpecWith is oursSpec with the given client settings.
func oursSpecWith(c putCase, client plan.ClientSpec) plan.WorkloadSpec {
	return plan.WorkloadSpec{
		Name:         "put",
		Mix:          []plan.OpWeight{{Op: plan.OpPut, Weight: 1}},
		Consistency:  etcd.ConsistencyLinearizable,
		KeySize:      c.keySize,
		ValueSize:    c.valueSize,
		Keyspace:     c.keyspace,
		Distribution: plan.DistSequential,
		Seed:         1,
		Clients:      c.clients,
		Conns:        c.conns,
		Timeout:      plan.Duration(workload.DefaultTimeout),
		Client:       client,
	}
}

// runOurs is what a scenario run with these client settings does: the
// workload engine sending through the etcd driver's client. Connections are
// opened before the clock starts, as etcd's tool does before its report
// starts; both dial lazily, so the first requests of either pay for the
// handshakes.
func runOurs(client plan.ClientSpec) func(context.Context, stores.Endpoint, putCase, time.Duration) (measurement, error) {
	return func(ctx context.Context, leader stores.Endpoint, c putCase, d time.Duration) (_ measurement, err error) {
		spec := oursSpecWith(c, client)
		cli, err := etcd.NewClient(ctx, stores.ClientOptions{
			Endpoints:   []stores.Endpoint{leader},
			Conns:       spec.Conns,
			Consistency: spec.Consistency,
			Timeout:     spec.Timeout.D(),
			Workload:    spec,
		})
		if err != nil {
			return measurement{}, fmt.Errorf("ours: %w", err)
		}
		defer func() {
			if cerr := cli.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("ours: close client: %w", cerr))
			}
		}()
		return runEngine(ctx, cli, c, d)
	}
}

// runEngine drives the closed-loop load of c through the workload engine
// for d, recording into a metrics collector that merges in the background
// as it does in a real run (leader polling and the progress line of a real
// run are left out). The engine is duration-based, so the caller passes the
// time etcd's tool took for its request count, and the rates are what
// compares.
func runEngine(ctx context.Context, cli stores.Client, c putCase, d time.Duration) (measurement, error) {
	spec := oursSpec(c)
	used0 := selfUsage()
	gc0 := selfGC()
	base := time.Now()
	coll := metrics.NewCollector([]plan.PhaseSpan{{Name: "put", Duration: plan.Duration(d)}}, []plan.WorkloadSpec{spec}, base)
	eng, err := workload.New(spec, cli, coll.NewSink, base)
	if err != nil {
		return measurement{}, fmt.Errorf("engine: %w", err)
	}
	bgCtx, stopBackground := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Go(func() { coll.Run(bgCtx) })
	load := plan.LoadSpec{Workload: spec.Name, Mode: plan.LoadClosed, ClientsFrom: c.clients, ClientsTo: c.clients, Duration: plan.Duration(d)}
	if c.rate > 0 {
		// The open loop's clients are its workers (spec.Clients), as
		// etcd's tool's are the goroutines waiting on its rate limiter.
		load = plan.LoadSpec{Workload: spec.Name, Mode: plan.LoadOpen, RateFrom: float64(c.rate), RateTo: float64(c.rate), Duration: plan.Duration(d)}
	}
	st, err := eng.Run(ctx, load, 0)
	// Run returns once the last op sent before the end has come back: the
	// same span etcd's tool reports, first send to last answer.
	elapsed := time.Since(base)
	stopBackground()
	bg.Wait()
	used, gc := selfUsage().since(used0), selfGC()-gc0
	if err != nil {
		return measurement{}, fmt.Errorf("engine: %w", err)
	}

	res := coll.Results()
	if len(res.Phases) != 1 {
		return measurement{}, fmt.Errorf("engine: results have %d phases, want 1", len(res.Phases))
	}
	var lat *results.Latency
	var ok int64
	for _, o := range res.Phases[0].Ops {
		if o.Op == plan.OpPut {
			lat, ok = o.Latency, o.OK
		}
	}
	if lat == nil {
		return measurement{}, fmt.Errorf("engine: no successful put in %d sent (%d failed)", st.Sent, st.Failed)
	}
	return measurement{
		requests: ok,
		failed:   st.Failed,
		elapsed:  elapsed,
		rps:      float64(ok) / elapsed.Seconds(),
		p50:      msDuration(lat.P50MS),
		p99:      msDuration(lat.P99MS),
		usage:    used,
		gc:       gc,
	}, nil
}

func msDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}
