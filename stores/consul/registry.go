package consul

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// The service-registry recipe as Consul's users write it (api.Lock,
// consul-template's dedup, Vault's HA lock): an instance creates a session
// with a TTL and the behaviour "delete", acquires its key with it and
// renews the session; consumers run blocking queries on the prefix. When
// the session ends, by destroy or by expiry, Consul deletes the key in the
// same raft entry.

// MinSessionTTL is the shortest session TTL a Consul server takes: its
// session_ttl_min, 10s by default; the clusters scenario launches keep
// the default.
const MinSessionTTL = 10 * time.Second

// lockDelay is every session's lock-delay. Consul's default of 15s keeps a
// key whose session was invalidated from being acquired again for that
// long; a registration's key belongs to one session only, so the delay
// guards nothing here. The api package cannot send 0: it omits a zero
// LockDelay, and the server then applies its 15s default. It sends the
// delay in whole milliseconds, so 1ms is the shortest delay it can ask for.
const lockDelay = time.Millisecond

// watchWait is how long a blocking query may wait for a change, the
// server adding up to 1/16 of it as jitter.
const watchWait = 30 * time.Second

// watchRetry is the pause after a failed blocking query before the watcher
// asks the next server.
const watchRetry = 250 * time.Millisecond

// MinTTL is the shortest instance TTL of the registry recipe, and why.
func MinTTL(plan.ClusterSpec) (time.Duration, string) {
	return MinSessionTTL, "Consul refuses session TTLs under its session_ttl_min, 10s by default (and over 86400s); " +
		"its leader then invalidates a session only after twice the TTL without a renewal, a documented grace, " +
		"so a vanished instance's key may stay up to 2 x TTL after its last heartbeat"
}

// registry is a stores.Registry over HTTP connection pools of its own.
type registry struct {
	prefix  string
	ttl     string
	timeout time.Duration
	eps     []stores.Endpoint
	dial    stores.DialFunc
	pools   []*pool
	// registered counts Register calls: the next instance's index, which
	// picks its pool and server.
	registered atomic.Uint64
}

// pool is one HTTP transport with an API client per server.
type pool struct {
	transport *http.Transport
	clients   []*api.Client
	nodes     []int
}

// newPools opens the n pools a registry's instances are spread over.
func newPools(ctx context.Context, n int, dial stores.DialFunc, eps []stores.Endpoint) ([]*pool, error) {
	var pools []*pool
	for range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := newPool(dial, maxIdleConnsPerHost, eps)
		if err != nil {
			return nil, err
		}
		pools = append(pools, p)
	}
	return pools, nil
}

func newPool(dial stores.DialFunc, idlePerHost int, eps []stores.Endpoint) (*pool, error) {
	p := &pool{transport: newTransport(dial, idlePerHost)}
	for _, ep := range eps {
		cli, err := newAPIClient(ep.ClientAddr, p.transport)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", plan.NodeName(ep.Node), err)
		}
		p.clients = append(p.clients, cli)
		p.nodes = append(p.nodes, ep.Node)
	}
	return p, nil
}

// The registry recipes, as stores.RegistryOptions.Recipe names them.
const (
	// RecipeKV: a key held by a session with a TTL (this file).
	RecipeKV = "kv"
	// RecipeService: a service with a TTL check (service.go).
	RecipeService = "service"
)

// NewRegistry opens the registry recipe opts.Recipe ("" is RecipeKV) on
// opts.Endpoints. Nothing is dialed yet; operations whose context has no
// deadline are bounded by opts.Timeout (DefaultOpTimeout if zero).
func NewRegistry(ctx context.Context, opts stores.RegistryOptions) (stores.Registry, error) {
	switch opts.Recipe {
	case "", RecipeKV:
		return newKVRegistry(ctx, opts)
	case RecipeService:
		return newServiceRegistry(ctx, opts)
	}
	return nil, fmt.Errorf("consul registry: unknown recipe %q: want %q or %q", opts.Recipe, RecipeKV, RecipeService)
}

func newKVRegistry(ctx context.Context, opts stores.RegistryOptions) (stores.Registry, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("consul registry: no endpoints")
	}
	// Without a TTL the session would never expire: an instance that
	// vanished would stay registered for good.
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("consul registry: TTL %s: want a positive TTL", opts.TTL)
	}
	r := &registry{
		prefix:  opts.Prefix,
		ttl:     opts.TTL.String(),
		timeout: opts.Timeout,
		eps:     opts.Endpoints,
		dial:    opts.DialFunc(),
	}
	if r.timeout <= 0 {
		r.timeout = DefaultOpTimeout
	}
	pools, err := newPools(ctx, max(opts.Conns, 1), r.dial, r.eps)
	if err != nil {
		return nil, fmt.Errorf("consul registry: %w", err)
	}
	r.pools = pools
	return r, nil
}

func (r *registry) Semantics() stores.WatchSemantics { return stores.WatchSnapshots }

// Register creates key's session on the instance's server and acquires
// key with it.
func (r *registry) Register(ctx context.Context, key string, value []byte) (stores.Instance, error) {
	if !strings.HasPrefix(key, r.prefix) {
		return nil, fmt.Errorf("consul registry: key %q is not under the prefix %q", key, r.prefix)
	}
	i := r.registered.Add(1) - 1
	p := r.pools[i%uint64(len(r.pools))]
	in := &instance{key: key, pool: p, timeout: r.timeout}
	sv := uint32(i % uint64(len(p.clients)))
	in.server.Store(sv)
	cli := p.clients[sv]

	opCtx, cancel := stores.OpContext(ctx, r.timeout)
	defer cancel()
	// Without checks: by default a session also ends when the serfHealth
	// check of the agent it was created through fails. The runner talks
	// to servers, not to a local agent on the instance's host, so that
	// check would tie the instance to a server's health rather than to
	// its own heartbeats.
	id, _, err := cli.Session().CreateNoChecks(&api.SessionEntry{
		Name:      key,
		TTL:       r.ttl,
		Behavior:  api.SessionBehaviorDelete,
		LockDelay: lockDelay,
	}, writeOpts(opCtx))
	if err != nil {
		return nil, fmt.Errorf("consul registry: create session for %s via %s: %w", key, plan.NodeName(p.nodes[sv]), err)
	}
	in.session = id
	ok, _, err := cli.KV().Acquire(&api.KVPair{Key: consulKey(key), Value: value, Session: id}, writeOpts(opCtx))
	if err == nil && !ok {
		err = errors.New("the key is held by another session")
	}
	if err != nil {
		err = fmt.Errorf("consul registry: acquire %s via %s: %w", key, plan.NodeName(p.nodes[sv]), err)
		// The acquire may have been applied even when it failed (a
		// timeout): destroying the session deletes the key with it. ctx
		// may be over, hence a context of its own.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
		defer dcancel()
		if _, derr := cli.Session().Destroy(id, writeOpts(dctx)); derr != nil {
			err = errors.Join(err, fmt.Errorf("consul registry: destroy its session: %w", derr))
		}
		return nil, err
	}
	return in, nil
}

// Watch runs blocking queries on prefix's keys, from watcher % n on, with
// connections of its own. Blocking queries answer with the latest state,
// not with each change: a listing is reported whenever the index moved.
func (r *registry) Watch(ctx context.Context, watcher int, prefix string, fn func(stores.WatchEvent)) error {
	// One idle connection: a watcher has one request out at a time.
	p, err := newPool(r.dial, 1, r.eps)
	if err != nil {
		return fmt.Errorf("consul registry: watcher %d: %w", watcher, err)
	}
	defer p.transport.CloseIdleConnections()
	sv := watcher % len(p.clients)
	// index is what the next query blocks on; last is the index of the
	// last listing reported, if any.
	var index, last uint64
	reported := false
	for ctx.Err() == nil {
		keys, meta, err := watchKeys(ctx, p.clients[sv], prefix, index)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			fn(stores.WatchEvent{Err: fmt.Errorf("consul registry: watch %s via %s: %w", prefix, plan.NodeName(p.nodes[sv]), err)})
			select {
			case <-ctx.Done():
			case <-time.After(watchRetry):
			}
			// Keep the index: it is the cluster's raft index, the same on
			// every server.
			sv = (sv + 1) % len(p.clients)
			continue
		}
		// A query that timed out answers with the index it waited on:
		// nothing happened, nothing to report.
		if !reported || meta.LastIndex != last {
			fn(stores.WatchEvent{Kind: stores.WatchList, Keys: callerKeys(prefix, keys), Revision: int64(meta.LastIndex)})
			reported, last = true, meta.LastIndex
		}
		index = nextIndex(index, meta.LastIndex)
	}
	return nil
}

// nextIndex is the index to block on after an answer at last, following
// Consul's rules for blocking queries: an index that went backwards (a
// snapshot restore, a lost state) starts over from 0, and an index of 0,
// which would answer at once forever, is taken as 1.
func nextIndex(prev, last uint64) uint64 {
	switch {
	case last < prev:
		return 0
	case last == 0:
		return 1
	}
	return last
}

// watchKeys is one blocking query. Its context ends a little after the
// longest the server may hold it, so that a connection that went silent
// (a partition, a frozen server) fails instead of hanging the watcher.
func watchKeys(ctx context.Context, cli *api.Client, prefix string, index uint64) ([]string, *api.QueryMeta, error) {
	ctx, cancel := context.WithTimeout(ctx, watchWait+watchWait/16+5*time.Second)
	defer cancel()
	q := &api.QueryOptions{WaitIndex: index, WaitTime: watchWait}
	return cli.KV().Keys(consulKey(prefix), "", q.WithContext(ctx))
}

// List reads prefix's keys through the first server that answers, as a
// consistent read: the leader confirms its leadership first.
func (r *registry) List(ctx context.Context, prefix string) ([]string, error) {
	ctx, cancel := stores.OpContext(ctx, r.timeout)
	defer cancel()
	p := r.pools[0]
	var errs []error
	for i, cli := range p.clients {
		q := &api.QueryOptions{RequireConsistent: true}
		keys, _, err := cli.KV().Keys(consulKey(prefix), "", q.WithContext(ctx))
		if err == nil {
			return callerKeys(prefix, keys), nil
		}
		errs = append(errs, fmt.Errorf("via %s: %w", plan.NodeName(p.nodes[i]), err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("consul registry: list %s: %w", prefix, errors.Join(errs...))
}

// Close drops the instances' idle connections; watchers close their own
// when they return.
func (r *registry) Close() error {
	for _, p := range r.pools {
		p.transport.CloseIdleConnections()
	}
	return nil
}

// consulKey is key as Consul's KV paths spell it: without the leading
// slash of workload keys, as in client.Do.
func consulKey(key string) string { return strings.TrimPrefix(key, "/") }

// callerKeys are Consul's keys spelled as the caller spells prefix, sorted.
func callerKeys(prefix string, keys []string) []string {
	out := make([]string, 0, len(keys))
	lead := ""
	if strings.HasPrefix(prefix, "/") {
		lead = "/"
	}
	for _, k := range keys {
		out = append(out, lead+k)
	}
	slices.Sort(out)
	return out
}

var errVanished = errors.New("consul registry: the instance vanished")

// instance is one registration: its session, renewed through one server.
type instance struct {
	key     string
	session string
	pool    *pool
	timeout time.Duration
	// server is the index in pool.clients of the server the instance
	// talks to; it moves to the next one when a connection fails, as an
	// agent would move to another server.
	server   atomic.Uint32
	vanished atomic.Bool
}

// failedOn moves the instance off server sv if err means it cannot be
// reached.
func (in *instance) failedOn(sv uint32, err error) {
	if Classify(err) == plan.ErrConnection {
		in.server.CompareAndSwap(sv, (sv+1)%uint32(len(in.pool.clients)))
	}
}

// KeepAlive renews the session. The server answers 404 for a session it
// no longer has, which api.Session.Renew returns as no entry and no error.
func (in *instance) KeepAlive(ctx context.Context) (bool, error) {
	if in.vanished.Load() {
		return false, errVanished
	}
	ctx, cancel := stores.OpContext(ctx, in.timeout)
	defer cancel()
	sv := in.server.Load()
	entry, _, err := in.pool.clients[sv].Session().Renew(in.session, writeOpts(ctx))
	if err != nil {
		in.failedOn(sv, err)
		return false, fmt.Errorf("consul registry: renew the session of %s via %s: %w", in.key, plan.NodeName(in.pool.nodes[sv]), err)
	}
	return entry == nil, nil
}

// Deregister destroys the session; its behaviour "delete" removes the key
// in the same raft entry.
func (in *instance) Deregister(ctx context.Context) error {
	if in.vanished.Load() {
		return errVanished
	}
	ctx, cancel := stores.OpContext(ctx, in.timeout)
	defer cancel()
	sv := in.server.Load()
	if _, err := in.pool.clients[sv].Session().Destroy(in.session, writeOpts(ctx)); err != nil {
		in.failedOn(sv, err)
		return fmt.Errorf("consul registry: destroy the session of %s via %s: %w", in.key, plan.NodeName(in.pool.nodes[sv]), err)
	}
	return nil
}

// Vanish stops the instance: Consul only learns of it when the session's
// TTL runs out.
func (in *instance) Vanish() { in.vanished.Store(true) }

// Close has nothing to release: the instance's connections belong to the
// registry's pool, which other instances share.
func (in *instance) Close() {}
