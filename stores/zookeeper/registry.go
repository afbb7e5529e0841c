package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// The service-registry recipe as services on ZooKeeper run it (Curator's
// service discovery): every instance is a session of its own holding one
// ephemeral znode under the service's parent, and consumers list the
// parent's children with a one-shot child watch, set again after each
// firing. go-zookeeper v1.0.4 has no persistent watches (AddWatch, 3.6),
// so a consumer sees a series of listings and may miss changes between
// two of them: stores.WatchSnapshots.

// registry is a stores.Registry on one ZooKeeper ensemble.
type registry struct {
	addrs   []string
	dial    stores.DialFunc
	parent  string // the znode holding one ephemeral child per instance
	prefix  string // parent + "/", which every key starts with
	ttl     time.Duration
	timeout time.Duration
	// consumer is the session timeout of the watchers' sessions and the
	// registry's own: the workload's client setting, as for any client.
	consumer time.Duration
	conn     *zk.Conn // the registry's own session: the parents, List
	next     atomic.Uint64

	mu        sync.Mutex
	closed    bool
	instances map[*instance]struct{} // not yet closed
}

// NewRegistry opens the registry under opts.Prefix, creating the parent
// znode and its ancestors.
//
// Every instance holds a connection of its own to one server, and
// ZooKeeper refuses more than maxClientCnxns (60 by default) connections
// from one client address to one server: a registry of more instances
// than that per server needs the cluster's max_client_cnxns knob raised
// above it. (The knob's 0 leaves ZooKeeper's default in place; it does
// not mean unlimited as maxClientCnxns=0 would.)
func NewRegistry(ctx context.Context, opts stores.RegistryOptions) (stores.Registry, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("zookeeper registry: no endpoints")
	}
	parent := strings.TrimSuffix(opts.Prefix, "/")
	if !strings.HasPrefix(parent, "/") || len(parent) < 2 {
		return nil, fmt.Errorf("zookeeper registry: prefix %q: want a znode path below the root, such as /scenario/reg/svc/", opts.Prefix)
	}
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("zookeeper registry: TTL %s: want a positive session timeout", opts.TTL)
	}
	r := &registry{
		dial:      opts.DialFunc(),
		parent:    parent,
		prefix:    parent + "/",
		ttl:       opts.TTL,
		timeout:   opts.Timeout,
		consumer:  workloadSessionTimeout(opts.Workload.Client),
		instances: map[*instance]struct{}{},
	}
	if r.timeout <= 0 {
		r.timeout = DefaultOpTimeout
	}
	for _, ep := range opts.Endpoints {
		r.addrs = append(r.addrs, ep.ClientAddr)
	}
	conn, _, err := r.connect(0, r.consumer, zkDialer(r.dial), nil)
	if err != nil {
		return nil, fmt.Errorf("zookeeper registry: %w", err)
	}
	r.conn = conn
	if err := r.createParents(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return r, nil
}

// connect opens a session on the servers rotated by rotation, so that
// sessions spread over the servers, with NewClient's options. The event
// channel is closed when the session's goroutines have ended.
func (r *registry) connect(rotation uint64, timeout time.Duration, dial zk.Dialer, events zk.EventCallback) (*zk.Conn, <-chan zk.Event, error) {
	return connectRotated(r.addrs, rotation, timeout, dial, events)
}

// connectRotated is registry.connect on the servers addrs; the lock
// recipe's sessions are opened the same way.
func connectRotated(addrs []string, rotation uint64, timeout time.Duration, dial zk.Dialer, events zk.EventCallback) (*zk.Conn, <-chan zk.Event, error) {
	k := int(rotation % uint64(len(addrs)))
	servers := append(slices.Clone(addrs[k:]), addrs[:k]...)
	return zk.Connect(servers, timeout,
		// See NewClient: keep the rotation, no DNS, no logging.
		zk.WithHostProvider(&orderedHosts{servers: servers}),
		zk.WithDialer(dial),
		// A nil callback is none. Events are taken from the callback,
		// never from the channel: go-zookeeper drops what does not fit
		// its buffer.
		zk.WithEventCallback(events),
		zk.WithLogger(nopLogger{}),
		zk.WithLogInfo(false))
}

// bound applies the per-operation timeout unless ctx has a deadline.
func (r *registry) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return boundBy(ctx, r.timeout)
}

// boundBy applies timeout unless ctx has a deadline.
func boundBy(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}

// await runs f, a go-zookeeper call, and stops waiting when ctx ends:
// go-zookeeper's calls take no context and block while the session is
// disconnected. An abandoned call ends when its answer comes or its
// session is closed.
func await[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type outcome struct {
		v   T
		err error
	}
	done := make(chan outcome, 1) // an abandoned call must not block
	go func() {
		v, err := f()
		done <- outcome{v, err}
	}()
	select {
	case o := <-done:
		return o.v, o.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// createParents creates the parent znode and its ancestors, persistent,
// as Curator's creatingParentsIfNeeded does; other registries may have
// created some already.
func (r *registry) createParents(ctx context.Context) error {
	ctx, cancel := r.bound(ctx)
	defer cancel()
	if err := createPath(ctx, r.conn, r.parent); err != nil {
		return fmt.Errorf("zookeeper registry: %w", err)
	}
	return nil
}

// createPath creates the persistent znode path and its ancestors on conn,
// those that do not exist yet.
func createPath(ctx context.Context, conn *zk.Conn, path string) error {
	acl := zk.WorldACL(zk.PermAll)
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		p := path[:i]
		_, err := await(ctx, func() (string, error) { return conn.Create(p, nil, 0, acl) })
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return nil
}

// Register starts an instance: a session of the registry's TTL on the next
// server in turn, then its ephemeral znode. The handshake is part of the
// registration's cost, as it is for a starting instance.
func (r *registry) Register(ctx context.Context, key string, value []byte) (stores.Instance, error) {
	name, ok := strings.CutPrefix(key, r.prefix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("zookeeper registry: register %q: not a key under %q", key, r.prefix)
	}
	if r.isClosed() {
		return nil, errors.New("zookeeper registry: closed")
	}
	ctx, cancel := r.bound(ctx)
	defer cancel()
	i := &instance{reg: r, path: r.prefix + name, mute: &mute{dial: r.dial, quiet: make(chan struct{})}, session: make(chan struct{})}
	conn, ended, err := r.connect(r.next.Add(1)-1, r.ttl, zkDialer(i.mute.dialContext), i.event)
	if err != nil {
		return nil, fmt.Errorf("zookeeper registry: register %s: %w", key, err)
	}
	i.conn, i.ended = conn, ended
	if err := i.create(ctx, value); err != nil {
		// A goodbye: should the create have been applied after all, the
		// session's end removes its node.
		conn.Close()
		return nil, fmt.Errorf("zookeeper registry: register %s: %w", key, err)
	}
	r.mu.Lock()
	closed := r.closed
	if !closed {
		r.instances[i] = struct{}{}
	}
	r.mu.Unlock()
	if closed {
		// Closed meanwhile: a goodbye, for the registry's Close to
		// leave nothing behind it did not know of.
		conn.Close()
		return nil, errors.New("zookeeper registry: closed")
	}
	return i, nil
}

func (r *registry) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *registry) forget(i *instance) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.instances, i)
}

// under checks that keys under prefix can be the registry's.
func (r *registry) under(prefix string) error {
	if !strings.HasPrefix(prefix, r.prefix) && !strings.HasPrefix(r.prefix, prefix) {
		return fmt.Errorf("zookeeper registry: prefix %q: the registry's keys are under %q", prefix, r.prefix)
	}
	return nil
}

// keys turns the parent's children into the sorted keys under prefix.
func (r *registry) keys(names []string, prefix string) []string {
	keys := make([]string, 0, len(names))
	for _, n := range names {
		if k := r.prefix + n; strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// Watch is a consumer on a session of its own, on the servers rotated by
// watcher: it lists the parent's children setting a child watch, waits
// for the watch to fire, and lists again. Revision is the parent's child
// version, which every create and delete of a child increments; a
// session never reads from a server behind what it has seen (the server
// refuses a client whose last zxid is ahead of its own), so it does not
// go back.
func (r *registry) Watch(ctx context.Context, watcher int, prefix string, fn func(stores.WatchEvent)) error {
	if err := r.under(prefix); err != nil {
		return err
	}
	conn, _, err := r.connect(uint64(watcher), r.consumer, zkDialer(r.dial), nil)
	if err != nil {
		return fmt.Errorf("zookeeper registry: watcher %d: %w", watcher, err)
	}
	defer conn.Close()
	type listing struct {
		names []string
		stat  *zk.Stat
		fired <-chan zk.Event
	}
	const minBackoff, maxBackoff = 100 * time.Millisecond, 500 * time.Millisecond
	backoff := minBackoff
	failed := func(err error) {
		fn(stores.WatchEvent{Err: err})
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, maxBackoff)
	}
	for ctx.Err() == nil {
		l, err := await(ctx, func() (listing, error) {
			names, stat, fired, err := conn.ChildrenW(r.parent)
			return listing{names, stat, fired}, err
		})
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			failed(fmt.Errorf("zookeeper registry: watcher %d: children of %s: %w", watcher, r.parent, err))
			continue
		}
		backoff = minBackoff
		fn(stores.WatchEvent{Kind: stores.WatchList, Keys: r.keys(l.names, prefix), Revision: int64(l.stat.Cversion)})
		// The watch outlives a moved connection (go-zookeeper sets it
		// again on the new server); it fails only with the session, or
		// when the parent goes.
		select {
		case ev := <-l.fired:
			if ev.Err != nil {
				failed(fmt.Errorf("zookeeper registry: watcher %d: watch on %s: %w", watcher, r.parent, ev.Err))
			}
		case <-ctx.Done():
		}
	}
	return nil
}

// List reads the keys under prefix after a sync, so that the server it
// asks has applied every write committed before: as linearizable as
// ZooKeeper reads get.
func (r *registry) List(ctx context.Context, prefix string) ([]string, error) {
	if err := r.under(prefix); err != nil {
		return nil, err
	}
	ctx, cancel := r.bound(ctx)
	defer cancel()
	if _, err := await(ctx, func() (string, error) { return r.conn.Sync(r.parent) }); err != nil {
		return nil, fmt.Errorf("zookeeper registry: sync %s: %w", r.parent, err)
	}
	names, err := await(ctx, func() ([]string, error) {
		names, _, err := r.conn.Children(r.parent)
		return names, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zookeeper registry: children of %s: %w", r.parent, err)
	}
	return r.keys(names, prefix), nil
}

func (r *registry) Semantics() stores.WatchSemantics { return stores.WatchSnapshots }

// Close closes the instances still open, without a word (see
// instance.Close), and the registry's own session.
func (r *registry) Close() error {
	r.mu.Lock()
	r.closed = true
	open := slices.Collect(maps.Keys(r.instances))
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, i := range open {
		wg.Go(i.Close)
	}
	wg.Go(r.conn.Close)
	wg.Wait()
	return nil
}

// minTTL is Driver.MinTTL.
func minTTL(c plan.ClusterSpec) (time.Duration, string) {
	tick := defaultTickTime
	if k := c.ZooKeeper; k != nil && k.TickTime > 0 {
		tick = k.TickTime.D()
	}
	return 2 * tick, fmt.Sprintf("a ZooKeeper server clamps every session timeout to 2-20 ticks (minSessionTimeout, maxSessionTimeout), and tickTime is %s: a shorter TTL would silently become %s", tick, 2*tick)
}

// errVanished refuses what an instance that vanished cannot do.
var errVanished = errors.New("zookeeper registry: the instance vanished")

// instance is one registered instance: its own session and its ephemeral
// znode.
type instance struct {
	reg   *registry
	conn  *zk.Conn
	ended <-chan zk.Event // closed when conn's goroutines have ended
	path  string
	mute  *mute

	session     chan struct{} // closed when the first session is established
	sessionID   int64         // the session that created the node
	sessionOnce sync.Once
	// expired is set when the server said the session had expired.
	// go-zookeeper then starts a new session at once, so requests
	// succeed again, but the ephemeral node went with the old one.
	expired   atomic.Bool
	closeOnce sync.Once
}

// event is the session's event callback, called from go-zookeeper's loop:
// it must not block.
func (i *instance) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		i.sessionOnce.Do(func() { close(i.session) })
	case zk.StateExpired:
		i.expired.Store(true)
	}
}

// create waits for the session, then creates the instance's node.
func (i *instance) create(ctx context.Context, value []byte) error {
	select {
	case <-i.session:
	case <-ctx.Done():
		return fmt.Errorf("no session: %w", ctx.Err())
	}
	acl := zk.WorldACL(zk.PermAll)
	// A node may be left by an earlier incarnation of the instance whose
	// session has not expired yet (one that vanished and came back).
	// Curator's ServiceDiscovery deletes it and creates again, once, so
	// that watchers see the instance leave and return.
	for try := 1; ; try++ {
		// The session the create is sent on: go-zookeeper changes it
		// only after an expiry, which would fail the create.
		i.sessionID = i.conn.SessionID()
		_, err := await(ctx, func() (string, error) { return i.conn.Create(i.path, value, zk.FlagEphemeral, acl) })
		if err == nil {
			return nil
		}
		if !errors.Is(err, zk.ErrNodeExists) || try == 2 {
			return fmt.Errorf("create %s: %w", i.path, err)
		}
		_, err = await(ctx, func() (struct{}, error) { return struct{}{}, i.conn.Delete(i.path, -1) })
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("delete the stale %s: %w", i.path, err)
		}
	}
}

// KeepAlive is an application heartbeat: any request resets the
// session's expiry on the server. go-zookeeper also pings by itself,
// every third of the session timeout whether or not requests flow, so a
// session outlives an application that stops heartbeating as long as the
// process and its connection live; Vanish is what stops those pings too.
func (i *instance) KeepAlive(ctx context.Context) (bool, error) {
	if i.mute.isQuiet() {
		return false, errVanished
	}
	ctx, cancel := i.reg.bound(ctx)
	defer cancel()
	// The node is the instance's while its session owns it: a later
	// incarnation may have replaced it (see create).
	owner, err := await(ctx, func() (int64, error) {
		exists, stat, err := i.conn.Exists(i.path)
		if !exists || err != nil {
			return 0, err
		}
		return stat.EphemeralOwner, nil
	})
	if i.expired.Load() || errors.Is(err, zk.ErrSessionExpired) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("zookeeper registry: heartbeat of %s: %w", i.path, err)
	}
	return owner != i.sessionID, nil
}

// Deregister deletes the node and closes the session, which would remove
// the node anyway should the delete have failed.
func (i *instance) Deregister(ctx context.Context) error {
	if i.mute.isQuiet() {
		return errVanished
	}
	ctx, cancel := i.reg.bound(ctx)
	defer cancel()
	_, err := await(ctx, func() (struct{}, error) { return struct{}{}, i.conn.Delete(i.path, -1) })
	i.conn.Close()
	if err != nil {
		return fmt.Errorf("zookeeper registry: delete %s: %w", i.path, err)
	}
	return nil
}

// Vanish freezes the instance's connections: the server hears nothing
// more, not even a FIN, and expires the session after its timeout. The
// client side notices only by its read timeouts, and cannot reconnect.
func (i *instance) Vanish() { i.mute.silence() }

// Close releases the instance without a word: the server hears no
// closeSession, so a session still open lives until it expires. The
// sockets are closed first (a FIN no longer matters: a ZooKeeper session
// does not end with its connection), so that go-zookeeper's loop, unable
// to reconnect, ends at once rather than at its next read timeout.
//
// Close waits for that end, not for go-zookeeper's Close: it closes the
// loop's quit channel before it queues its closeSession, so a loop that
// quits first leaves the request unsent, and Close waits a second for an
// answer that cannot come. Waited for one by one, as a runner closing its
// instances would, that second each would add up.
func (i *instance) Close() {
	i.closeOnce.Do(func() {
		i.mute.release()
		go i.conn.Close()
		i.reg.forget(i)
		sessionEnded(i.ended, closeTimeout)
	})
}

// sessionEnded waits at most within for ended, a session's event channel,
// to be closed: go-zookeeper closes it when the session's goroutines have
// ended. It reports whether they had.
func sessionEnded(ended <-chan zk.Event, within time.Duration) bool {
	bound := time.NewTimer(within)
	defer bound.Stop()
	for {
		select {
		case _, ok := <-ended:
			if ok {
				continue // events are taken from the callback
			}
			return true
		case <-bound.C:
			return false
		}
	}
}

// closeTimeout bounds how long instance.Close (and a lock contender's
// close, once its sockets are closed) waits for go-zookeeper's
// loop to end: a dial in progress takes up to its connect timeout (1 s).
const closeTimeout = 3 * time.Second

// mute opens an instance's connections and can silence them all: after
// silence, what go-zookeeper writes is dropped, nothing read is delivered,
// and no new connection is opened, while the sockets stay open until
// release.
type mute struct {
	dial  stores.DialFunc // nil dials directly
	quiet chan struct{}   // closed by silence
	once  sync.Once

	mu       sync.Mutex
	released bool
	conns    map[*muteConn]struct{} // open sockets
}

func (m *mute) silence() { m.once.Do(func() { close(m.quiet) }) }

func (m *mute) isQuiet() bool {
	select {
	case <-m.quiet:
		return true
	default:
		return false
	}
}

// dialContext is the instance's stores.DialFunc, which zkDialer wraps.
func (m *mute) dialContext(ctx context.Context, addr string) (net.Conn, error) {
	if m.isQuiet() {
		return nil, errVanished
	}
	var conn net.Conn
	var err error
	if m.dial == nil {
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = m.dial(ctx, addr)
	}
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.released {
		conn.Close()
		return nil, errVanished
	}
	// Silenced while dialing, the connection is born silent.
	c := &muteConn{Conn: conn, m: m, closed: make(chan struct{}), moved: make(chan struct{})}
	if m.conns == nil {
		m.conns = map[*muteConn]struct{}{}
	}
	m.conns[c] = struct{}{}
	return c, nil
}

// release silences the connections and closes their sockets.
func (m *mute) release() {
	m.silence()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.released = true
	for c := range m.conns {
		c.shut()
		c.Conn.Close()
	}
	m.conns = nil
}

// muteConn is one connection of a mute. Once silenced, a Read waits for
// the connection's close or its read deadline without reading the socket,
// as a frozen process would: go-zookeeper sets a read deadline on every
// read, so its receive loop times out and it tries, and fails, to
// reconnect.
type muteConn struct {
	net.Conn
	m         *mute
	closed    chan struct{}
	closeOnce sync.Once

	mu           sync.Mutex
	readDeadline time.Time
	moved        chan struct{} // closed and replaced when readDeadline changes
}

func (c *muteConn) Read(p []byte) (int, error) {
	if !c.m.isQuiet() {
		n, err := c.Conn.Read(p)
		if !c.m.isQuiet() || err != nil {
			return n, err
		}
		// Silenced while this read waited: what it got is never
		// delivered.
	}
	return c.hang()
}

func (c *muteConn) hang() (int, error) {
	for {
		c.mu.Lock()
		deadline, moved := c.readDeadline, c.moved
		c.mu.Unlock()
		var timeout <-chan time.Time
		var t *time.Timer
		if !deadline.IsZero() {
			t = time.NewTimer(time.Until(deadline))
			timeout = t.C
		}
		var err error
		select {
		case <-c.closed:
			err = net.ErrClosed
		case <-timeout:
			err = os.ErrDeadlineExceeded
		case <-moved:
		}
		if t != nil {
			t.Stop()
		}
		if err != nil {
			return 0, err
		}
	}
}

func (c *muteConn) Write(p []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	case <-c.m.quiet:
		return len(p), nil
	default:
		return c.Conn.Write(p)
	}
}

func (c *muteConn) setReadDeadline(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDeadline = t
	close(c.moved)
	c.moved = make(chan struct{})
}

func (c *muteConn) SetReadDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *muteConn) SetDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *muteConn) shut() { c.closeOnce.Do(func() { close(c.closed) }) }

// Close ends go-zookeeper's use of the connection. A silenced one keeps
// its socket open, for no FIN to reach the server, until the mute's
// release.
func (c *muteConn) Close() error {
	c.shut()
	if c.m.isQuiet() {
		return nil
	}
	c.m.mu.Lock()
	delete(c.m.conns, c)
	c.m.mu.Unlock()
	return c.Conn.Close()
}
