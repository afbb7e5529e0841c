package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
)

// The breakdown contenders (-breakdown) peel our stack apart, one layer at
// a time, to show where a ratio below 1 comes from:
//
//	scenario          engine + collector + etcd driver     (runOurs)
//	scenario,require_leader=true  the same, with client { require_leader = true }
//	engine+deadline   engine + collector + clientv3, each put under a deadline
//	engine+leader     engine + collector + clientv3, each put requiring a leader
//	engine+plain      engine + collector + plain clientv3  (runEnginePlain)
//	loop,pinned       plain loop, connection per client    (runLoop): etcd's tool in this process
//	etcd benchmark,our libraries  etcd's tool rebuilt against our gRPC, x/net and protobuf
//
// scenario against engine+plain is what the driver adds; engine+leader
// takes its per-request cost alone (the require-leader metadata, which also
// makes clientv3 copy the request's metadata). engine+deadline is what a
// deadline per put would cost (gRPC sends it as grpc-timeout, with a timer
// on both sides): the engine sent one until it timed its ops out itself
// (workload's watchdog). engine+plain against loop,pinned is what the
// engine and the collector add. etcd benchmark,our libraries against etcd's
// tool is what the newer libraries we link change on their own.

// plainClient sends puts as etcd's benchmark tool does, with no deadline and
// no require-leader metadata unless asked, each workload client on one
// connection as both the tool and the etcd driver pin them.
type plainClient struct {
	conns []*clientv3.Client
	// deadline puts each put under a deadline of the default timeout;
	// requireLeader adds clientv3.WithRequireLeader, as the etcd driver
	// does for writes when a workload asks for it.
	deadline, requireLeader bool
}

func newPlainClient(leader stores.Endpoint, conns int) (*plainClient, error) {
	c := &plainClient{}
	for range conns {
		// The tool's own connection settings: endpoint and nothing else
		// that matters on loopback.
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + leader.ClientAddr}, Logger: zap.NewNop()})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("plain client: %w", err), c.Close())
		}
		c.conns = append(c.conns, cli)
	}
	return c, nil
}

// Do sends with context.Background(), as etcd's tool does, unless the
// client sets a deadline per put or requires a leader.
func (c *plainClient) Do(ctx context.Context, op stores.Op) stores.Result {
	cli := c.conns[uint(op.Client)%uint(len(c.conns))]
	ctx = context.Background()
	if c.deadline {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, workload.DefaultTimeout)
		defer cancel()
	}
	if c.requireLeader {
		ctx = clientv3.WithRequireLeader(ctx)
	}
	if _, err := cli.Put(ctx, op.Key, string(op.Value)); err != nil {
		return stores.Result{Err: fmt.Errorf("plain put: %w", err), Class: plan.ErrOther}
	}
	return stores.Result{}
}

func (c *plainClient) Close() error {
	var errs []error
	for _, cli := range c.conns {
		if err := cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runEnginePlain is the engine and collector without the etcd driver,
// sending through a plainClient with deadline and requireLeader as given.
func runEnginePlain(deadline, requireLeader bool) func(context.Context, stores.Endpoint, putCase, time.Duration) (measurement, error) {
	return func(ctx context.Context, leader stores.Endpoint, c putCase, d time.Duration) (_ measurement, err error) {
		cli, err := newPlainClient(leader, c.conns)
		if err != nil {
			return measurement{}, err
		}
		defer func() { err = errors.Join(err, cli.Close()) }()
		cli.deadline, cli.requireLeader = deadline, requireLeader
		return runEngine(ctx, cli, c, d)
	}
}

// runLoop is etcd's tool's structure in this process, without its progress
// bar: c.clients goroutines sharing a count of c.total puts of one fixed
// value, each latency kept for exact percentiles as the tool's report
// keeps them. Client i sends on connection i%conns, as the tool does.
func runLoop(ctx context.Context, leader stores.Endpoint, c putCase, _ time.Duration) (_ measurement, err error) {
	if c.rate > 0 {
		return measurement{}, fmt.Errorf("loop,pinned runs only at full speed, not held to %d puts a second: drop -rate or -breakdown", c.rate)
	}
	cli, err := newPlainClient(leader, c.conns)
	if err != nil {
		return measurement{}, err
	}
	defer func() { err = errors.Join(err, cli.Close()) }()
	value := string(make([]byte, c.valueSize))
	var issued, failed atomic.Int64
	lats := make([][]time.Duration, c.clients)
	used0 := selfUsage()
	gc0 := selfGC()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range c.clients {
		conn := cli.conns[i%len(cli.conns)]
		wg.Go(func() {
			key := make([]byte, c.keySize)
			for ctx.Err() == nil {
				n := issued.Add(1) - 1
				if n >= int64(c.total) {
					return
				}
				binary.PutVarint(key, n%c.keyspace)
				t0 := time.Now()
				if _, err := conn.Put(context.Background(), string(key), value); err != nil {
					failed.Add(1)
					continue
				}
				lats[i] = append(lats[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	used, gc := selfUsage().since(used0), selfGC()-gc0
	if err := ctx.Err(); err != nil {
		return measurement{}, fmt.Errorf("loop: %w", err)
	}
	all := slices.Concat(lats...)
	if len(all) == 0 {
		return measurement{}, fmt.Errorf("loop: no successful put in %d (%d failed)", c.total, failed.Load())
	}
	slices.Sort(all)
	return measurement{
		requests: int64(len(all)),
		failed:   failed.Load(),
		elapsed:  elapsed,
		rps:      float64(len(all)) / elapsed.Seconds(),
		p50:      all[len(all)*50/100],
		p99:      all[len(all)*99/100],
		usage:    used,
		gc:       gc,
	}, nil
}
