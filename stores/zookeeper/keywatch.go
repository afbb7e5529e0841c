package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/coordlab/scenario/stores"
)

// The key watcher is what a ZooKeeper configuration consumer does:
// list the keys' parent with a child watch and read each key with a data
// watch, then, as the one-shot watches fire, read again and set them
// again. go-zookeeper v1.0.4 has no persistent watches (AddWatch, 3.6),
// so a consumer learns a key's newest value, not every value:
// stores.WatchSnapshots, per key. Every key of every workload is a child
// of kvRoot (see znodeName), so each watcher lists them all and keeps
// those under its prefix.

// keyWatcher is a stores.KeyWatcher on one ZooKeeper ensemble.
type keyWatcher struct {
	addrs   []string
	dial    zk.Dialer
	session time.Duration // every session's timeout: the workload's
	timeout time.Duration // per call
	read    *zk.Conn      // Read's session

	mu       sync.Mutex
	closed   bool
	watchers map[int]*zk.Conn // each watcher's session, opened on first use
}

// NewKeyWatcher opens the session Read uses; each watcher opens its own
// on its first Watch. Connecting does not block (see NewClient).
func NewKeyWatcher(ctx context.Context, opts stores.ClientOptions) (stores.KeyWatcher, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("zookeeper key watcher: no endpoints")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("zookeeper key watcher: %w", err)
	}
	w := &keyWatcher{
		dial:     zkDialer(opts.DialFunc()),
		session:  workloadSessionTimeout(opts.Workload.Client),
		timeout:  opts.Timeout,
		watchers: map[int]*zk.Conn{},
	}
	if w.timeout <= 0 {
		w.timeout = DefaultOpTimeout
	}
	for _, ep := range opts.Endpoints {
		w.addrs = append(w.addrs, ep.ClientAddr)
	}
	conn, _, err := connectRotated(w.addrs, 0, w.session, w.dial, nil)
	if err != nil {
		return nil, fmt.Errorf("zookeeper key watcher: %w", err)
	}
	w.read = conn
	return w, nil
}

// listDepth is how many reads of a listing a watcher has in flight at
// once on its session.
const listDepth = 32

var errKeyWatcherClosed = errors.New("zookeeper key watcher: closed")

// conn is watcher's session, on the servers rotated by watcher so that
// watchers spread over the members. After an expiry go-zookeeper starts
// a new session on the same Conn, so one Conn serves the watcher for
// good.
func (w *keyWatcher) conn(watcher int) (*zk.Conn, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errKeyWatcherClosed
	}
	if c, ok := w.watchers[watcher]; ok {
		return c, nil
	}
	c, _, err := connectRotated(w.addrs, uint64(watcher), w.session, w.dial, nil)
	if err != nil {
		return nil, fmt.Errorf("zookeeper key watcher: watcher %d: %w", watcher, err)
	}
	w.watchers[watcher] = c
	return c, nil
}

func (w *keyWatcher) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// Watch follows the keys under prefix on watcher's session, starting
// over from a fresh listing after each failure, until ctx ends.
func (w *keyWatcher) Watch(ctx context.Context, watcher int, prefix string, fn func(stores.WatchEvent)) error {
	conn, err := w.conn(watcher)
	if err != nil {
		return err
	}
	const minBackoff, maxBackoff = 50 * time.Millisecond, time.Second
	backoff := minBackoff
	for {
		listed, err := w.follow(ctx, conn, prefix, fn)
		if ctx.Err() != nil {
			return nil
		}
		if w.isClosed() {
			return errKeyWatcherClosed
		}
		fn(stores.WatchEvent{Err: fmt.Errorf("zookeeper key watcher: watcher %d: %w", watcher, err)})
		if listed {
			backoff = minBackoff // failures in a row back off, not one after a success
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// firing is a watch that fired: the child watch on kvRoot (key "") or
// key's data watch of generation gen.
type firing struct {
	key string
	gen uint64
	ev  zk.Event
}

// follow lists the keys under prefix, reports the listing, then reports
// each change the watches tell of, until a call or a watch fails (the
// error) or ctx ends (nil). listed says whether the listing was reported.
func (w *keyWatcher) follow(ctx context.Context, conn *zk.Conn, prefix string, fn func(stores.WatchEvent)) (listed bool, err error) {
	round, cancel := context.WithCancel(ctx)
	defer cancel() // ends the forwarders of this round's watches
	fired := make(chan firing)
	forward := func(f firing, ch <-chan zk.Event) {
		// go-zookeeper gives each watch a channel of its own; one
		// goroutine waits on each, so that fn is called from here alone.
		go func() {
			select {
			case f.ev = <-ch:
				select {
				case fired <- f:
				case <-round.Done():
				}
			case <-round.Done():
			}
		}()
	}
	// gens holds the keys reported present, each with the generation of
	// its live data watch: a firing of an older one is stale (the key
	// went and came back since), and ignored.
	gens := map[string]uint64{}
	var gen uint64
	// read reads key setting a data watch; found is false when it is
	// gone. Reads run side by side; keep takes their results in order.
	type got struct {
		value []byte
		stat  *zk.Stat
		ch    <-chan zk.Event
		found bool
	}
	read := func(key string) (got, error) {
		path := kvRoot + "/" + znodeName(key)
		g, err := within(round, w.timeout, func() (got, error) {
			v, s, ch, err := conn.GetW(path)
			return got{v, s, ch, true}, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			return got{}, nil
		}
		if err != nil {
			return got{}, fmt.Errorf("get %s: %w", path, err)
		}
		return g, nil
	}
	// keep follows key's data watch from g on, or forgets key if gone.
	keep := func(key string, g got) {
		if !g.found {
			delete(gens, key)
			return
		}
		gen++
		gens[key] = gen
		forward(firing{key: key, gen: gen}, g.ch)
	}
	// get reads many keys as one session's calls pipelined, as Curator's
	// caches read a listing's children, rather than one round trip after
	// another: 200 keys took 8 s so on a loaded machine. The session's
	// calls are answered in the order they were sent.
	get := func(keys []string) ([]got, error) {
		gots := make([]got, len(keys))
		errs := make([]error, len(keys))
		sem := make(chan struct{}, listDepth)
		var wg sync.WaitGroup
		for i, key := range keys {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				gots[i], errs[i] = read(key)
			})
		}
		wg.Wait()
		for i, key := range keys {
			if errs[i] == nil {
				keep(key, gots[i])
			}
		}
		return gots, errors.Join(errs...)
	}
	// list lists the keys under prefix, sorted, setting the child watch.
	list := func() ([]string, error) {
		for {
			type listing struct {
				names []string
				ch    <-chan zk.Event
			}
			l, err := within(round, w.timeout, func() (listing, error) {
				names, _, ch, err := conn.ChildrenW(kvRoot)
				return listing{names, ch}, err
			})
			if err == nil {
				forward(firing{}, l.ch)
				return keysUnder(l.names, prefix), nil
			}
			if !errors.Is(err, zk.ErrNoNode) {
				return nil, fmt.Errorf("children of %s: %w", kvRoot, err)
			}
			// No key has been written yet (the first write creates
			// the root): no keys, and a watch for the root instead,
			// which fires when it is created.
			l, err = within(round, w.timeout, func() (listing, error) {
				ok, _, ch, err := conn.ExistsW(kvRoot)
				if ok {
					ch = nil // created meanwhile: list again
				}
				return listing{nil, ch}, err
			})
			if err != nil {
				return nil, fmt.Errorf("exists %s: %w", kvRoot, err)
			}
			if l.ch != nil {
				forward(firing{}, l.ch)
				return nil, nil
			}
		}
	}

	keys, err := list()
	if err != nil {
		return false, err
	}
	first := stores.WatchEvent{Kind: stores.WatchList, Keys: []string{}, Values: [][]byte{}, Revisions: []int64{}}
	gots, err := get(keys)
	if err != nil {
		return false, err
	}
	for i, g := range gots {
		if !g.found {
			continue // gone since listed: the child watch has fired
		}
		first.Keys = append(first.Keys, keys[i])
		first.Values = append(first.Values, g.value)
		first.Revisions = append(first.Revisions, g.stat.Mzxid)
		first.Revision = max(first.Revision, g.stat.Mzxid)
	}
	fn(first)

	for {
		var f firing
		select {
		case f = <-fired:
		case <-ctx.Done():
			return true, nil
		}
		if f.ev.Err != nil {
			// The session expired or was closed: go-zookeeper dropped
			// every watch (a mere disconnection keeps them, set again
			// on the next server).
			return true, fmt.Errorf("watch on %s: %w", f.ev.Path, f.ev.Err)
		}
		if f.key == "" {
			// The child watch: report the keys that came and went.
			keys, err := list()
			if err != nil {
				return true, err
			}
			for _, key := range slices.Sorted(maps.Keys(gens)) {
				if !slices.Contains(keys, key) {
					delete(gens, key)
					fn(stores.WatchEvent{Kind: stores.WatchDelete, Key: key})
				}
			}
			var came []string
			for _, key := range keys {
				if _, known := gens[key]; !known {
					came = append(came, key)
				}
			}
			gots, err := get(came)
			if err != nil {
				return true, err
			}
			for i, g := range gots {
				if g.found {
					fn(stores.WatchEvent{Kind: stores.WatchPut, Key: came[i], Value: g.value, Revision: g.stat.Mzxid})
				}
			}
			continue
		}
		if gens[f.key] != f.gen {
			continue
		}
		// A data watch: the key changed or was deleted. It is read
		// again in either case: a deleted key may be back already, its
		// child event handled before this one (each watch is waited on
		// by its own goroutine, so firings can come out of order).
		g, err := read(f.key)
		if err == nil {
			keep(f.key, g)
		}
		switch {
		case err != nil:
			return true, err
		case g.found:
			fn(stores.WatchEvent{Kind: stores.WatchPut, Key: f.key, Value: g.value, Revision: g.stat.Mzxid})
		default:
			fn(stores.WatchEvent{Kind: stores.WatchDelete, Key: f.key})
		}
	}
}

// within runs f, one go-zookeeper call, for at most timeout: a watch's
// ctx is its whole life, not a call's deadline (which boundBy would take
// it for), and a call waits while its session is disconnected.
func within[T any](ctx context.Context, timeout time.Duration, f func() (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return await(ctx, f)
}

// keysUnder turns kvRoot's children into the sorted keys under prefix.
func keysUnder(names []string, prefix string) []string {
	// A key has the prefix exactly when its name has the prefix's
	// escaped form (see countRange).
	escaped := znodeName(prefix)
	keys := make([]string, 0, len(names))
	for _, name := range names {
		if !strings.HasPrefix(name, escaped) {
			continue
		}
		if key, ok := keyOf(name); ok {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	return keys
}

// Read lists the keys under prefix and reads each after a sync, so that
// the server asked has applied every write committed before: as
// linearizable as ZooKeeper reads get.
func (w *keyWatcher) Read(ctx context.Context, prefix string) (map[string][]byte, error) {
	if w.isClosed() {
		return nil, errKeyWatcherClosed
	}
	ctx, cancel := boundBy(ctx, w.timeout)
	defer cancel()
	out := map[string][]byte{}
	if _, err := await(ctx, func() (string, error) { return w.read.Sync(kvRoot) }); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return out, nil // no key written yet
		}
		return nil, fmt.Errorf("zookeeper key watcher: sync %s: %w", kvRoot, err)
	}
	names, err := await(ctx, func() ([]string, error) {
		names, _, err := w.read.Children(kvRoot)
		return names, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zookeeper key watcher: children of %s: %w", kvRoot, err)
	}
	for _, key := range keysUnder(names, prefix) {
		path := kvRoot + "/" + znodeName(key)
		value, err := await(ctx, func() ([]byte, error) {
			value, _, err := w.read.Get(path)
			return value, err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue // deleted since listed
		}
		if err != nil {
			return nil, fmt.Errorf("zookeeper key watcher: get %s: %w", path, err)
		}
		out[key] = value
	}
	return out, nil
}

func (w *keyWatcher) Semantics() stores.WatchSemantics { return stores.WatchSnapshots }

// Close closes every session, all at once (see client.Close); watches
// still running end with an error.
func (w *keyWatcher) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	conns := append(slices.Collect(maps.Values(w.watchers)), w.read)
	w.watchers = nil
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(c.Close)
	}
	wg.Wait()
	return nil
}
