package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/coordlab/scenario/stores"
)

// The lock recipe of ZooKeeper's documentation, as go-zookeeper's zk.Lock
// runs it: each contender, on a session of its own, creates an ephemeral
// sequential child of the lock's znode and holds the lock when its child
// is the lowest; otherwise it watches the child just before its own and
// looks again when that one goes. Nothing but the session keeps a holder's
// child alive, so a holder whose session expires loses the lock on the
// server at once, and learns it only when it next reaches a server.
//
// Where zk.Lock (v1.0.4) falls short, and what is done about it:
//
//   - Lock takes no context, and a contender waiting for its predecessor
//     waits on a watch that go-zookeeper cannot remove. The only way to
//     stop it is to close the session, which fails the watch: an Acquire
//     whose ctx ends closes its contender.
//   - A Lock or Unlock that fails may leave the contender's child behind,
//     and zk.Lock does not say which child (its path is unexported). Such
//     a child would stand before every later contender's, this one's own
//     next child included, for as long as the session lives. So a failed
//     Acquire, and a Release of unknown outcome, close the contender too:
//     closing the session deletes the child for sure, as Curator's
//     guaranteed delete would by retrying.
//   - Lock creates its child, then lists the children on whatever session
//     the connection has by then. Should the first session expire in
//     between, go-zookeeper carries on with a new one, and Lock may find
//     no lower child and report success for a child that is gone. The
//     expiry is seen first (Lost), and such an Acquire fails.

// politeClose bounds the wait for the server's answer to a contender's
// closeSession, which deletes its child at once: go-zookeeper's Close
// waits as long, and a frozen contender's answer never comes.
const politeClose = time.Second

// locker is a stores.Locker on one ZooKeeper ensemble. It holds no
// session: each contender has its own.
type locker struct {
	addrs   []string
	path    string // the lock's znode, the parent of the contenders' children
	ttl     time.Duration
	timeout time.Duration

	mu     sync.Mutex
	closed bool
	open   map[*contender]struct{} // not yet closed
}

var _ stores.Locker = (*locker)(nil)

// NewLocker keeps opts for the contenders and creates the lock's znode,
// opts.Key, and its ancestors, persistent, on a session of its own that it
// closes again. (zk.Lock would create them itself, but with each
// contender's first Acquire, timed as part of it.)
func NewLocker(ctx context.Context, opts stores.LockerOptions) (stores.Locker, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("zookeeper lock: no endpoints")
	}
	path := strings.TrimSuffix(opts.Key, "/")
	if !strings.HasPrefix(path, "/") || len(path) < 2 {
		return nil, fmt.Errorf("zookeeper lock: key %q: want a znode path below the root, such as /scenario/lock/name", opts.Key)
	}
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("zookeeper lock: TTL %s: want a positive session timeout", opts.TTL)
	}
	l := &locker{path: path, ttl: opts.TTL, timeout: opts.Timeout, open: map[*contender]struct{}{}}
	if l.timeout <= 0 {
		l.timeout = DefaultOpTimeout
	}
	for _, ep := range opts.Endpoints {
		l.addrs = append(l.addrs, ep.ClientAddr)
	}
	conn, _, err := connectRotated(l.addrs, 0, workloadSessionTimeout(opts.Workload.Client), zkDialer(opts.DialFunc()), nil)
	if err != nil {
		return nil, fmt.Errorf("zookeeper lock: %w", err)
	}
	// Bounded by go-zookeeper: a second for the closeSession's answer.
	defer conn.Close()
	cctx, cancel := boundBy(ctx, l.timeout)
	defer cancel()
	if err := createPath(cctx, conn, path); err != nil {
		return nil, fmt.Errorf("zookeeper lock: %w", err)
	}
	return l, nil
}

// Contender opens contender id's session, of the locker's TTL, on the
// servers rotated by id, every connection opened through dial: freezing
// dial's connections silences the session's pings too, so that the
// server expires it while the contender still believes it holds the lock.
// It returns once the session is established.
func (l *locker) Contender(ctx context.Context, id int, dial stores.DialFunc) (stores.Contender, error) {
	if l.isClosed() {
		return nil, errors.New("zookeeper lock: closed")
	}
	c := &contender{
		l:       l,
		id:      id,
		data:    []byte(strconv.Itoa(id)), // in its child, for whoever looks at the children
		socks:   &mute{dial: dial, quiet: make(chan struct{})},
		session: make(chan struct{}),
		lost:    make(chan struct{}),
	}
	conn, ended, err := connectRotated(l.addrs, uint64(id), l.ttl, zkDialer(c.socks.dialContext), c.event)
	if err != nil {
		return nil, fmt.Errorf("zookeeper lock: contender %d: %w", id, err)
	}
	c.conn, c.ended = conn, ended
	ctx, cancel := boundBy(ctx, l.timeout)
	defer cancel()
	select {
	case <-c.session:
	case <-ctx.Done():
		c.end()
		return nil, fmt.Errorf("zookeeper lock: contender %d: no session: %w", id, ctx.Err())
	}
	l.mu.Lock()
	closed := l.closed
	if !closed {
		l.open[c] = struct{}{}
	}
	l.mu.Unlock()
	if closed {
		// Closed meanwhile: the locker's Close did not know of it.
		c.end()
		return nil, errors.New("zookeeper lock: closed")
	}
	return c, nil
}

// Close closes the contenders still open.
func (l *locker) Close() error {
	l.mu.Lock()
	l.closed = true
	open := slices.Collect(maps.Keys(l.open))
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range open {
		wg.Go(c.Close)
	}
	wg.Wait()
	return nil
}

func (l *locker) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

func (l *locker) forget(c *contender) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.open, c)
}

// errContenderClosed refuses what a closed contender cannot do.
var errContenderClosed = errors.New("the contender is closed")

// contender is one process competing for the lock: its own session and,
// while it holds the lock, the zk.Lock whose child is the lowest.
type contender struct {
	l     *locker
	id    int
	data  []byte
	conn  *zk.Conn
	ended <-chan zk.Event // closed when conn's goroutines have ended
	// socks tracks the session's sockets, so that Close can close them
	// under go-zookeeper: a frozen connection blocks its reads and writes
	// until it is thawed or closed.
	socks *mute

	session     chan struct{} // closed when the first session is established
	sessionOnce sync.Once

	// The event callback closes lost from go-zookeeper's loop while the
	// contender's own goroutine replaces it and reads held.
	mu      sync.Mutex
	lost    chan struct{} // closed by an expiry; replaced by each Acquire
	held    *zk.Lock      // from a successful Acquire until its Release
	closing bool

	endOnce sync.Once
}

// event is the session's event callback, called from go-zookeeper's loop:
// it must not block.
func (c *contender) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		c.sessionOnce.Do(func() { close(c.session) })
	case zk.StateExpired:
		// A disconnection is not a loss: the session, and the child, live
		// on the server until it expires them. Only a server saying so
		// on reconnection tells the client it has.
		c.mu.Lock()
		if !isClosed(c.lost) {
			close(c.lost)
		}
		c.mu.Unlock()
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Acquire runs zk.Lock. When ctx ends first, or the lock fails, the
// contender is closed (see the top of the file); the contender's Close
// waits for that.
func (c *contender) Acquire(ctx context.Context) error {
	c.mu.Lock()
	switch {
	case c.closing:
		c.mu.Unlock()
		return fmt.Errorf("zookeeper lock: contender %d: acquire %s: %w", c.id, c.l.path, errContenderClosed)
	case c.held != nil:
		c.mu.Unlock()
		return fmt.Errorf("zookeeper lock: contender %d: acquire %s: %w", c.id, c.l.path, zk.ErrDeadlock)
	}
	// Before the child is created: an expiry from here on may have taken
	// the child with it.
	lost := make(chan struct{})
	c.lost = lost
	c.mu.Unlock()

	lk := zk.NewLock(c.conn, c.l.path, zk.WorldACL(zk.PermAll))
	done := make(chan error, 1) // an abandoned Lock must not block
	go func() { done <- lk.LockWithData(c.data) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil && isClosed(lost) {
		err = fmt.Errorf("the session expired while the lock was being taken: %w", zk.ErrSessionExpired)
	}
	if err != nil {
		// Returns at once: the caller's ctx may have ended, and closing
		// a frozen contender takes a while.
		go c.end()
		return fmt.Errorf("zookeeper lock: contender %d: acquire %s: %w", c.id, c.l.path, err)
	}
	c.mu.Lock()
	c.held = lk
	c.mu.Unlock()
	return nil
}

// Release deletes the contender's child. A contender whose session
// expired has nothing to delete: it lost the lock, and Release says so.
// When the delete's outcome is unknown the contender is closed, which
// deletes the child if it is still there.
func (c *contender) Release(ctx context.Context) error {
	c.mu.Lock()
	lk, lost := c.held, c.lost
	c.held = nil
	c.mu.Unlock()
	if lk == nil {
		return fmt.Errorf("zookeeper lock: contender %d: release %s: %w", c.id, c.l.path, zk.ErrNotLocked)
	}
	expired := func() error {
		return fmt.Errorf("zookeeper lock: contender %d: release %s: the session that held the lock expired: %w", c.id, c.l.path, zk.ErrSessionExpired)
	}
	if isClosed(lost) {
		return expired()
	}
	ctx, cancel := boundBy(ctx, c.l.timeout)
	defer cancel()
	_, err := await(ctx, func() (struct{}, error) { return struct{}{}, lk.Unlock() })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired):
		// The delete was sent on the new session after an expiry that
		// was only learned of on the way.
		if isClosed(lost) {
			return expired()
		}
	default:
		go c.end()
	}
	return fmt.Errorf("zookeeper lock: contender %d: release %s: %w", c.id, c.l.path, err)
}

func (c *contender) Lost() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// Close ends the session: politely when the connection works, so that
// the server deletes the contender's child at once, else by closing the
// sockets, after which the server expires the session on its own clock.
// Safe to call more than once, and concurrently.
func (c *contender) Close() {
	c.end()
	c.l.forget(c)
}

// end closes the session, bounded by politeClose and closeTimeout.
func (c *contender) end() {
	c.endOnce.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		go c.conn.Close()
		if sessionEnded(c.ended, politeClose) {
			return
		}
		// Frozen, or no server reachable: go-zookeeper's loop waits in a
		// read or write that only closing the socket ends, or keeps
		// dialing, which release refuses from now on.
		c.socks.release()
		sessionEnded(c.ended, closeTimeout)
	})
}
