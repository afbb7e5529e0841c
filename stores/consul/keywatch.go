package consul

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// The configuration consumer's recipe on Consul, as consul-template and a
// watch plan of type keyprefix run it: blocking queries on the prefix
// with the keys' values, each answer the whole listing at the latest
// index. Changes between two answers are not told, hence WatchSnapshots.

// Backoff after a failed blocking query: short at first, so that a
// watcher is back soon after a failover, doubling up to watchBackoffMax so
// that a server that is down is not hammered.
const (
	watchBackoffMin = 50 * time.Millisecond
	watchBackoffMax = time.Second
)

var errKeyWatcherClosed = errors.New("consul key watcher: closed")

// keyWatcher is a stores.KeyWatcher over HTTP connection pools of its
// own: one for Read, and one per watcher index, opened on first use.
type keyWatcher struct {
	eps     []stores.Endpoint
	dial    stores.DialFunc
	timeout time.Duration
	read    *pool
	// closing ends when Close is called, and with it the watches under
	// way: their blocking queries hold connections that closing the idle
	// ones would not drop.
	closing    context.Context
	endWatches context.CancelFunc

	// mu guards watchers, and orders Close with the opening of a pool so
	// that none is opened after Close.
	mu       sync.Mutex
	watchers map[int]*pool
}

// NewKeyWatcher opens the pool Read uses. Nothing is dialed yet; ctx only
// cancels the setup. Reads whose context has no deadline are bounded by
// opts.Timeout (DefaultOpTimeout if zero). opts.Consistency is not used:
// watches run in Consul's default mode, as consumers run them, and Read is
// always consistent.
func NewKeyWatcher(ctx context.Context, opts stores.ClientOptions) (stores.KeyWatcher, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("consul key watcher: no endpoints")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("consul key watcher: %w", err)
	}
	kw := &keyWatcher{
		eps:      opts.Endpoints,
		dial:     opts.DialFunc(),
		timeout:  opts.Timeout,
		watchers: map[int]*pool{},
	}
	if kw.timeout <= 0 {
		kw.timeout = DefaultOpTimeout
	}
	read, err := newPool(kw.dial, maxIdleConnsPerHost, kw.eps)
	if err != nil {
		return nil, fmt.Errorf("consul key watcher: %w", err)
	}
	kw.read = read
	kw.closing, kw.endWatches = context.WithCancel(context.Background())
	return kw, nil
}

func (kw *keyWatcher) Semantics() stores.WatchSemantics { return stores.WatchSnapshots }

// pool is watcher's own pool, opened on its first Watch.
func (kw *keyWatcher) pool(watcher int) (*pool, error) {
	kw.mu.Lock()
	defer kw.mu.Unlock()
	if kw.closing.Err() != nil {
		return nil, errKeyWatcherClosed
	}
	if p, ok := kw.watchers[watcher]; ok {
		return p, nil
	}
	// One idle connection per server: a watcher has one query out at a
	// time.
	p, err := newPool(kw.dial, 1, kw.eps)
	if err != nil {
		return nil, fmt.Errorf("consul key watcher: watcher %d: %w", watcher, err)
	}
	kw.watchers[watcher] = p
	return p, nil
}

// Watch runs blocking queries on prefix's keys and values from server
// watcher % n on, reporting a listing whenever the index moved. It returns
// nil when ctx ends, and an error if the watcher was closed first.
func (kw *keyWatcher) Watch(ctx context.Context, watcher int, prefix string, fn func(stores.WatchEvent)) error {
	p, err := kw.pool(watcher)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(kw.closing, cancel)()
	kw.watch(wctx, p, watcher, prefix, fn)
	if ctx.Err() == nil {
		return errKeyWatcherClosed
	}
	return nil
}

func (kw *keyWatcher) watch(ctx context.Context, p *pool, watcher int, prefix string, fn func(stores.WatchEvent)) {
	sv := watcher % len(p.clients)
	// index is what the next query blocks on; last is the index of the
	// last listing reported, if any.
	var index, last uint64
	reported := false
	backoff := watchBackoffMin
	for ctx.Err() == nil {
		pairs, meta, err := watchPairs(ctx, p.clients[sv], prefix, index)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fn(stores.WatchEvent{Err: fmt.Errorf("consul key watcher: watch %s via %s: %w", prefix, plan.NodeName(p.nodes[sv]), err)})
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, watchBackoffMax)
			// Start again from a fresh listing (index 0 answers at once),
			// on the next server, as an agent moves to another server
			// when one fails.
			index, reported = 0, false
			sv = (sv + 1) % len(p.clients)
			continue
		}
		backoff = watchBackoffMin
		// A query that timed out answers with the index it waited on:
		// nothing happened, nothing to report.
		if !reported || meta.LastIndex != last {
			fn(pairsListing(prefix, pairs, meta.LastIndex))
			reported, last = true, meta.LastIndex
		}
		index = nextIndex(index, meta.LastIndex)
	}
}

// watchPairs is one blocking query in the default consistency mode. Its
// context ends a little after the longest the server may hold it, so that
// a connection that went silent (a partition, a frozen server) fails
// instead of hanging the watcher.
func watchPairs(ctx context.Context, cli *api.Client, prefix string, index uint64) (api.KVPairs, *api.QueryMeta, error) {
	ctx, cancel := context.WithTimeout(ctx, watchWait+watchWait/16+5*time.Second)
	defer cancel()
	q := &api.QueryOptions{WaitIndex: index, WaitTime: watchWait}
	return cli.KV().List(consulKey(prefix), q.WithContext(ctx))
}

// pairsListing is a WatchList event of pairs, keys spelled as the caller
// spells prefix and sorted. Every key starts with prefix: Consul lists the
// keys under consulKey(prefix), and prefix's leading slash, if any, is put
// back.
func pairsListing(prefix string, pairs api.KVPairs, index uint64) stores.WatchEvent {
	lead := ""
	if strings.HasPrefix(prefix, "/") {
		lead = "/"
	}
	pairs = slices.Clone(pairs)
	slices.SortFunc(pairs, func(a, b *api.KVPair) int { return strings.Compare(a.Key, b.Key) })
	ev := stores.WatchEvent{
		Kind:      stores.WatchList,
		Keys:      make([]string, len(pairs)),
		Values:    make([][]byte, len(pairs)),
		Revisions: make([]int64, len(pairs)),
		Revision:  int64(index),
	}
	for i, kv := range pairs {
		ev.Keys[i] = lead + kv.Key
		ev.Values[i] = kv.Value
		ev.Revisions[i] = int64(kv.ModifyIndex)
	}
	return ev
}

// Read reads prefix's keys and values through the first server that
// answers, as a consistent read: the leader confirms its leadership first.
func (kw *keyWatcher) Read(ctx context.Context, prefix string) (map[string][]byte, error) {
	if kw.closing.Err() != nil {
		return nil, errKeyWatcherClosed
	}
	ctx, cancel := stores.OpContext(ctx, kw.timeout)
	defer cancel()
	var errs []error
	for i, cli := range kw.read.clients {
		q := &api.QueryOptions{RequireConsistent: true}
		pairs, _, err := cli.KV().List(consulKey(prefix), q.WithContext(ctx))
		if err == nil {
			ev := pairsListing(prefix, pairs, 0)
			out := make(map[string][]byte, len(ev.Keys))
			for j, k := range ev.Keys {
				out[k] = ev.Values[j]
			}
			return out, nil
		}
		errs = append(errs, fmt.Errorf("via %s: %w", plan.NodeName(kw.read.nodes[i]), err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("consul key watcher: read %s: %w", prefix, errors.Join(errs...))
}

// Close ends the watches under way and drops every pool's idle
// connections; closing twice is harmless.
func (kw *keyWatcher) Close() error {
	kw.mu.Lock()
	defer kw.mu.Unlock()
	kw.endWatches()
	kw.read.transport.CloseIdleConnections()
	for _, p := range kw.watchers {
		p.transport.CloseIdleConnections()
	}
	return nil
}
