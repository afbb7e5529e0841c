package etcd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// Restarting a failed watch waits restartMin, doubling up to restartMax
// while the new watch fails before etcd has created it: a member without
// a leader refuses each new watch at once, and restarting without a pause
// would spin.
const (
	restartMin = 50 * time.Millisecond
	restartMax = time.Second
)

var errRegistryClosed = errors.New("etcd registry: closed")

// registry is the service-registry recipe as services on etcd write it: a
// key attached to a lease per instance, kept alive by the instance, and
// prefix watches resumed from the next revision.
type registry struct {
	conns   []*clientv3.Client // the instances'
	urls    []string
	dial    stores.DialFunc
	client  plan.ClientSpec
	ttl     int64 // seconds, as leases count
	timeout time.Duration
	next    atomic.Uint64 // instances registered, to pick their connection
	// values makes listings and events carry values and each key's mod
	// revision: the key watcher's, which is a registry without instances.
	values bool

	mu       sync.Mutex
	watchers map[int]*clientv3.Client
	closed   bool
}

// NewRegistry opens max(opts.Conns, 1) connections for the instances;
// each watcher gets a connection of its own when it starts watching.
// Dialing does not block, so a registry can be opened while members are
// down.
func NewRegistry(ctx context.Context, opts stores.RegistryOptions) (stores.Registry, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("etcd registry: no endpoints")
	}
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("etcd registry: TTL %s: want a positive TTL", opts.TTL)
	}
	r := &registry{
		urls:     clientURLs(opts.Endpoints),
		dial:     opts.DialFunc(),
		client:   opts.Workload.Client,
		ttl:      int64(math.Ceil(opts.TTL.Seconds())), // leases have whole seconds
		timeout:  opts.Timeout,
		watchers: map[int]*clientv3.Client{},
	}
	if r.timeout <= 0 {
		r.timeout = DefaultOpTimeout
	}
	n := max(opts.Conns, 1)
	for i := range n {
		if err := ctx.Err(); err != nil {
			r.Close()
			return nil, fmt.Errorf("etcd registry: %w", err)
		}
		cli, err := r.dialRotated(i)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("etcd registry: connection %d of %d: %w", i+1, n, err)
		}
		r.conns = append(r.conns, cli)
	}
	return r, nil
}

// dialRotated opens a connection whose endpoint list starts at member
// i mod n, so that connections do not all start on node 1.
func (r *registry) dialRotated(i int) (*clientv3.Client, error) {
	k := i % len(r.urls)
	rotated := append(append([]string(nil), r.urls[k:]...), r.urls[:k]...)
	return clientv3.New(workloadConfig(rotated, r.dial, r.client))
}

// bound applies the registry's timeout to a call whose context has no
// deadline: clientv3 re-sends some refusals until the deadline, and
// without one a call to a cut-off member would never return.
func (r *registry) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return stores.OpContext(ctx, r.timeout)
}

func (r *registry) Register(ctx context.Context, key string, value []byte) (stores.Instance, error) {
	cli := r.conns[(r.next.Add(1)-1)%uint64(len(r.conns))]
	ctx, cancel := r.bound(ctx)
	defer cancel()
	lease, err := cli.Grant(leader(ctx), r.ttl)
	if err != nil {
		return nil, fmt.Errorf("etcd registry: grant: %w", err)
	}
	if _, err := cli.Put(leader(ctx), key, string(value), clientv3.WithLease(lease.ID)); err != nil {
		// The lease expires on its own; revoking it here could fail for
		// the same reason the put did.
		return nil, fmt.Errorf("etcd registry: put %q: %w", key, err)
	}
	return &instance{r: r, cli: cli, id: lease.ID}, nil
}

func (r *registry) List(ctx context.Context, prefix string) ([]string, error) {
	ls, err := r.list(ctx, r.conns[0], prefix)
	return ls.Keys, err
}

// list reads the keys under prefix, linearizably, as a listing at the
// revision they were read at: with values and mod revisions if r.values.
// etcd returns a range in key order.
func (r *registry) list(ctx context.Context, cli *clientv3.Client, prefix string) (stores.WatchEvent, error) {
	ctx, cancel := r.bound(ctx)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if !r.values {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	resp, err := cli.Get(leader(ctx), prefix, opts...)
	if err != nil {
		return stores.WatchEvent{}, fmt.Errorf("etcd registry: list %q: %w", prefix, err)
	}
	ls := stores.WatchEvent{Kind: stores.WatchList, Keys: make([]string, len(resp.Kvs)), Revision: resp.Header.Revision}
	for i, kv := range resp.Kvs {
		ls.Keys[i] = string(kv.Key)
		if r.values {
			ls.Values = append(ls.Values, kv.Value)
			ls.Revisions = append(ls.Revisions, kv.ModRevision)
		}
	}
	return ls, nil
}

func (r *registry) Watch(ctx context.Context, watcher int, prefix string, fn func(stores.WatchEvent)) error {
	cli, err := r.watcherConn(watcher)
	if err != nil {
		return err
	}
	var (
		rev    int64 // the newest revision fn knows all of
		listed bool
		pause  = restartMin
	)
	for {
		if !listed {
			var ls stores.WatchEvent
			ls, err = r.list(ctx, cli, prefix)
			if err == nil {
				listed, rev = true, ls.Revision
				fn(ls)
			}
		}
		if listed {
			var created bool
			rev, created, err = follow(ctx, cli, prefix, rev, r.values, fn)
			if created {
				pause = restartMin
			}
			if errors.Is(err, rpctypes.ErrCompacted) {
				// The changes since rev are gone: only a new listing
				// tells the watcher where it stands.
				listed = false
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if cli.Ctx().Err() != nil {
			return fmt.Errorf("etcd registry: watcher %d: %w", watcher, errRegistryClosed)
		}
		fn(stores.WatchEvent{Err: err})
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, restartMax)
	}
}

// follow watches prefix from rev+1, passing each change to fn (with the
// new value if values), until the watch ends. It returns the newest revision fn was given, whether etcd
// created the watch, and why it ended (never nil unless ctx ended).
func follow(ctx context.Context, cli *clientv3.Client, prefix string, rev int64, values bool, fn func(stores.WatchEvent)) (int64, bool, error) {
	// Its own context, so that ending this watch ends only it. Requiring a
	// leader makes a member cut off from the leader cancel the watch (with
	// "no leader") rather than leave it silent while the others move on.
	wctx, cancel := context.WithCancel(leader(ctx))
	defer cancel()
	created := false
	for resp := range cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithCreatedNotify()) {
		// clientv3 resumes the watch on its own after a broken connection,
		// so the error may come from a later revision than the one asked
		// for: name the last one seen.
		if err := resp.Err(); err != nil {
			return rev, created, fmt.Errorf("etcd registry: watch %q after revision %d: %w", prefix, rev, err)
		}
		created = created || resp.Created
		for _, ev := range resp.Events {
			kind := stores.WatchPut
			if ev.Type == mvccpb.DELETE {
				kind = stores.WatchDelete
			}
			e := stores.WatchEvent{Kind: kind, Key: string(ev.Kv.Key), Revision: ev.Kv.ModRevision}
			if values && kind == stores.WatchPut {
				e.Value = ev.Kv.Value
			}
			fn(e)
			rev = ev.Kv.ModRevision
		}
	}
	if err := ctx.Err(); err != nil {
		return rev, created, err
	}
	return rev, created, fmt.Errorf("etcd registry: watch %q after revision %d: the watch channel closed", prefix, rev)
}

// watcherConn is watcher's own connection, opened on first use with the
// endpoints rotated by watcher so that watchers spread over the members.
// Each has its own connection because clientv3 multiplexes every watch of
// a client with the same context metadata over one gRPC stream.
func (r *registry) watcherConn(watcher int) (*clientv3.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errRegistryClosed
	}
	if cli, ok := r.watchers[watcher]; ok {
		return cli, nil
	}
	cli, err := r.dialRotated(max(watcher, 0))
	if err != nil {
		return nil, fmt.Errorf("etcd registry: watcher %d: %w", watcher, err)
	}
	r.watchers[watcher] = cli
	return cli, nil
}

func (r *registry) Semantics() stores.WatchSemantics { return stores.WatchEvents }

// Close closes every connection, which ends the watches; the instances'
// leases are left to expire. Closing twice is harmless.
func (r *registry) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	for _, cli := range r.conns {
		errs = append(errs, closeConn(cli))
	}
	for _, cli := range r.watchers {
		errs = append(errs, closeConn(cli))
	}
	return errors.Join(errs...)
}

func closeConn(cli *clientv3.Client) error {
	if err := cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// instance is a key held by a lease of the registry's TTL.
type instance struct {
	r        *registry
	cli      *clientv3.Client
	id       clientv3.LeaseID
	vanished atomic.Bool
}

// KeepAlive renews the lease once. It does not require a leader: clientv3's
// KeepAliveOnce re-sends an Unavailable answer at once, without backoff,
// so a member refusing for want of a leader would be asked in a tight loop
// until the deadline. A vanished instance sends nothing and reports
// nothing.
func (in *instance) KeepAlive(ctx context.Context) (bool, error) {
	if in.vanished.Load() {
		return false, nil
	}
	ctx, cancel := in.r.bound(ctx)
	defer cancel()
	resp, err := in.cli.KeepAliveOnce(ctx, in.id)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("etcd registry: keepalive of lease %x: %w", int64(in.id), err)
	case resp.TTL <= 0:
		// KeepAliveOnce turns this into ErrLeaseNotFound; kept in case a
		// version does not.
		return true, nil
	}
	return false, nil
}

// Deregister revokes the lease, which deletes the key with it.
func (in *instance) Deregister(ctx context.Context) error {
	if in.vanished.Load() {
		return nil
	}
	ctx, cancel := in.r.bound(ctx)
	defer cancel()
	if _, err := in.cli.Revoke(leader(ctx), in.id); err != nil {
		return fmt.Errorf("etcd registry: revoke lease %x: %w", int64(in.id), err)
	}
	return nil
}

func (in *instance) Vanish() { in.vanished.Store(true) }

// Close has nothing to release: the lease lives on the server, and expires
// there unless renewed; the connection is the registry's.
func (in *instance) Close() {}

// minTTL is the shortest lease TTL a cluster c keeps: etcd raises a
// shorter one to 3/2 of the election timeout counted in whole heartbeats,
// rounded up to whole seconds (server/etcdserver/server.go: minTTL :=
// (3*ElectionTicks)/2 heartbeats, with ElectionTicks = election-timeout /
// heartbeat-interval in integer milliseconds; lease.LessorConfig takes
// its math.Ceil in seconds).
func minTTL(c plan.ClusterSpec) (time.Duration, string) {
	hb, el := timing(c)
	// The members are given both in whole milliseconds, rounded up (see
	// millis), and etcd counts the election timeout in whole heartbeats.
	hbMs, elMs := ceilMillis(hb), ceilMillis(el)
	raw := time.Duration(3*(elMs/hbMs)/2*hbMs) * time.Millisecond
	ttl := time.Duration(math.Ceil(raw.Seconds())) * time.Second
	return ttl, fmt.Sprintf("etcd raises a lease's TTL to at least 3/2 of the election timeout (%s, counted in heartbeats of %s), in whole seconds", raw, time.Duration(hbMs)*time.Millisecond)
}

func ceilMillis(d time.Duration) int64 {
	ms := d.Milliseconds()
	if d%time.Millisecond != 0 {
		ms++
	}
	return max(ms, 1)
}
