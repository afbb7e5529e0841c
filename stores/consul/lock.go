package consul

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// Consul's lock recipe as its api package runs it (api.Lock, the recipe
// behind `consul lock`, Vault's HA lock and consul-template's dedup): a
// session with a TTL, renewed in the background by Session.RenewPeriodic;
// the lock is the key acquired with that session, waited for by blocking
// queries on the key; a monitor, a blocking consistent read of the key,
// closes the holder's leader channel once the key is no longer held by its
// session.
//
// Every setting is api.Lock's or the server's default but one, the
// session's health checks:
//
//   - api.Lock creates its session with Session.Create, which leaves out an
//     empty NodeChecks (and Checks), and the server then ties the session to
//     the serfHealth check of the node it was created on. The runner talks
//     to servers, not to a local agent on the contender's host, so that
//     check would tie the lock to the health of a server (a killed server
//     would invalidate its contenders' sessions) instead of to the
//     contender's own renewals. As the registry does, the session is made
//     with Session.CreateNoChecks instead and handed to api.Lock
//     (LockOptions.Session). api.Lock then neither renews nor destroys it,
//     so the contender does what api.Lock would have done with a session of
//     its own: RenewPeriodic from its creation, destroy on Unlock or on a
//     failed Lock.
//   - The session's lock-delay is Consul's default, 15s: once a holder's
//     session is invalidated, the key cannot be acquired for that long,
//     which exists precisely to give a holder that was paused (and so
//     missed its renewals) time to notice before anyone else acts as
//     holder. A frozen holder is therefore taken over after 2 x TTL (the
//     server's grace before it invalidates a session not renewed) plus the
//     lock-delay, plus up to api.DefaultLockRetryTime (5s), the pace at
//     which api.Lock asks again while a lock-delay refuses it. An explicit
//     Release sets no lock-delay: a handover is immediate.
//   - The session's behaviour is the default "release": the key stays,
//     without a holder, when the session ends.
//   - LockWaitTime (how long one blocking query on the key waits) is
//     api.DefaultLockWaitTime, 15s. MonitorRetries is 0: the first failed
//     read of the monitor, a server's 500 during an election included, ends
//     the hold as lost. The api's own doc calls this preferring liveness
//     over safety.
//   - lock.Destroy, which deletes the key once no one holds it, is never
//     called: deleting it wakes the contenders blocked on it, and under a
//     lock-delay their refused attempts set api.Lock's retry pace anew,
//     which can move a takeover by up to DefaultLockRetryTime.
//
// api.Lock formats the errors of its requests with %v, so an Acquire or
// Release that failed in the network no longer carries the error Classify
// looks for: it counts as "other". Session errors keep theirs.

// closeWait bounds what a contender's Close sends to the cluster (the
// release and the session's destroy): a frozen contender's requests get no
// answer, and a session left behind holding the key only costs the others
// what a crashed holder would, 2 x TTL and the lock-delay.
const closeWait = 2 * time.Second

// lockConns is how many idle connections a contender keeps to its server:
// at most a lock query or monitor, a renewal, a release and a destroy are
// out at once.
const lockConns = 4

// locker is a stores.Locker. It holds no connection: each contender has
// its own.
type locker struct {
	eps     []stores.Endpoint
	dial    stores.DialFunc // for a contender given no dial of its own
	key     string
	ttl     time.Duration
	timeout time.Duration
}

var _ stores.Locker = (*locker)(nil)

// NewLocker keeps opts for the contenders; nothing is dialed. opts.Key is
// the lock's KV key.
func NewLocker(_ context.Context, opts stores.LockerOptions) (stores.Locker, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("consul lock: no endpoints")
	}
	key := consulKey(opts.Key)
	if key == "" {
		return nil, fmt.Errorf("consul lock: key %q: want a KV key", opts.Key)
	}
	// Checked here rather than left to the server, which would refuse every
	// contender's every session.
	if opts.TTL < MinSessionTTL || opts.TTL > 24*time.Hour {
		return nil, fmt.Errorf("consul lock: TTL %s: Consul takes session TTLs from its session_ttl_min, %s, to 86400s", opts.TTL, MinSessionTTL)
	}
	l := &locker{
		eps:     opts.Endpoints,
		dial:    opts.DialFunc(),
		key:     key,
		ttl:     opts.TTL,
		timeout: opts.Timeout,
	}
	if l.timeout <= 0 {
		l.timeout = DefaultOpTimeout
	}
	return l, nil
}

// Contender makes contender id's API client for server id % n, over a
// transport of its own whose every connection dial opens: freezing dial's
// connections silences the contender's renewals, so that Consul
// invalidates its session while it still believes it holds the lock.
// Nothing is dialed yet. The contender's session is made by each Acquire,
// as api.Lock makes one per Lock.
func (l *locker) Contender(ctx context.Context, id int, dial stores.DialFunc) (stores.Contender, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("consul lock: contender %d: %w", id, err)
	}
	if dial == nil {
		dial = l.dial
	}
	n := len(l.eps)
	ep := l.eps[(id%n+n)%n]
	t := newTransport(dial, lockConns)
	cli, err := newAPIClient(ep.ClientAddr, t)
	if err != nil {
		return nil, fmt.Errorf("consul lock: contender %d via %s: %w", id, plan.NodeName(ep.Node), err)
	}
	c := &contender{
		l:         l,
		id:        id,
		node:      ep.Node,
		addr:      ep.ClientAddr,
		transport: t,
		cli:       cli,
		never:     make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.lost = c.never
	return c, nil
}

// Close has nothing to release: the contenders close their own.
func (l *locker) Close() error { return nil }

var errContenderClosed = errors.New("the contender is closed")

// contender is one process competing for the lock, on one server.
type contender struct {
	l         *locker
	id        int
	node      int
	addr      string
	transport *http.Transport
	cli       *api.Client // the session's calls, each with a context of its own
	// ctx ends with Close, and with it every request still out.
	ctx       context.Context
	cancel    context.CancelFunc
	never     chan struct{} // Lost while nothing was acquired; never closed
	closeOnce sync.Once

	mu     sync.Mutex
	closed bool
	held   *hold           // the last Acquire's, until Release or Close
	lost   <-chan struct{} // its leader channel, or never
}

// hold is one acquisition: its session and the api.Lock on it.
type hold struct {
	session string
	lock    *api.Lock
	// cancel ends the lock's requests, the monitor's included, which
	// closes the leader channel.
	cancel context.CancelFunc
	// stopRenew makes RenewPeriodic destroy the session and return, as
	// api.Lock's Unlock does with a session of its own; renewing is
	// closed once it returned.
	stopRenew chan struct{}
	renewing  chan struct{}
	endOnce   sync.Once
}

// end stops the lock's requests and has the session destroyed.
func (h *hold) end() {
	h.endOnce.Do(func() {
		h.cancel()
		close(h.stopRenew)
	})
}

// scoped sends every request with ctx. api.Lock's calls take no context
// (its requests carry none), so without it an Acquire could only give up
// between two blocking queries of up to LockWaitTime, and a frozen
// contender's could never.
type scoped struct {
	ctx context.Context
	rt  http.RoundTripper
}

func (s scoped) RoundTrip(r *http.Request) (*http.Response, error) {
	return s.rt.RoundTrip(r.WithContext(s.ctx))
}

// open makes a session as api.Lock would, but without health checks (see
// above), starts its renewals and makes the lock on it, whose requests end
// with the hold.
func (c *contender) open(ctx context.Context) (*hold, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	// LockDelay is left out, so the server applies its default of 15s;
	// Behavior too, so it is "release", as api.Lock's sessions.
	session, _, err := c.cli.Session().CreateNoChecks(&api.SessionEntry{
		Name: fmt.Sprintf("%s (scenario contender %d)", api.DefaultLockSessionName, c.id),
		TTL:  c.l.ttl.String(),
	}, writeOpts(ctx))
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	lctx, lcancel := context.WithCancel(c.ctx)
	h := &hold{session: session, cancel: lcancel, stopRenew: make(chan struct{}), renewing: make(chan struct{})}
	go func() {
		defer close(h.renewing)
		_ = c.cli.Session().RenewPeriodic(c.l.ttl.String(), session, writeOpts(c.ctx), h.stopRenew)
	}()
	cli, err := api.NewClient(&api.Config{
		Address:    c.addr,
		Scheme:     "http",
		HttpClient: &http.Client{Transport: scoped{ctx: lctx, rt: c.transport}},
	})
	if err == nil {
		h.lock, err = cli.LockOpts(&api.LockOptions{
			Key:     c.l.key,
			Value:   c.value(),
			Session: session,
		})
	}
	if err != nil {
		h.end()
		return nil, err
	}
	return h, nil
}

// value is what the contender writes in the key, for whoever reads it.
func (c *contender) value() []byte { return []byte(strconv.Itoa(c.id)) }

// Acquire makes a session and waits until api.Lock acquires the key with
// it, or ctx ends. The session is destroyed if the lock is not had.
func (c *contender) Acquire(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("consul lock: contender %d: %w", c.id, errContenderClosed)
	}
	prev := c.held
	if prev != nil && !isDone(c.lost) {
		c.mu.Unlock()
		return fmt.Errorf("consul lock: contender %d: %w", c.id, api.ErrLockHeld)
	}
	c.held, c.lost = nil, c.never
	c.mu.Unlock()
	if prev != nil {
		// Lost, maybe only because the monitor could not read the key:
		// released before its session goes, as Release would.
		_ = c.release(ctx, prev)
	}

	h, err := c.open(ctx)
	if err != nil {
		return fmt.Errorf("consul lock: contender %d via %s: %w", c.id, plan.NodeName(c.node), err)
	}
	stopCh := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		close(stopCh)
		h.cancel()
	})
	leaderCh, err := h.lock.Lock(stopCh)
	if !stop() {
		if leaderCh != nil {
			// Acquired as ctx ended, when the lock's own requests were
			// ended already: the key is released by hand, sparing the
			// others the lock-delay that destroying its session would set.
			rctx, cancel := c.bound(context.WithoutCancel(ctx))
			// The value and flags api.Lock writes: a release also writes
			// them, and other contenders refuse a key without its flag.
			pair := &api.KVPair{Key: c.l.key, Value: c.value(), Session: h.session, Flags: api.LockFlagValue}
			_, _, _ = c.cli.KV().Release(pair, writeOpts(rctx))
			cancel()
		}
		h.end()
		return fmt.Errorf("consul lock: contender %d: %w", c.id, ctx.Err())
	}
	if err == nil && leaderCh == nil {
		err = errors.New("stopped") // only stopCh stops Lock: not expected
	}
	if err != nil {
		h.end()
		return fmt.Errorf("consul lock: contender %d via %s: %w", c.id, plan.NodeName(c.node), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		h.end()
		return fmt.Errorf("consul lock: contender %d: %w", c.id, errContenderClosed)
	}
	c.held, c.lost = h, leaderCh
	return nil
}

// Release releases the key (which sets no lock-delay) and then has the
// session destroyed, as api.Lock's Unlock does. After a loss it is no
// error: the server answers that the session no longer holds the key.
func (c *contender) Release(ctx context.Context) error {
	c.mu.Lock()
	h := c.held
	c.held = nil
	c.mu.Unlock()
	if h == nil {
		return nil
	}
	return c.release(ctx, h)
}

func (c *contender) release(ctx context.Context, h *hold) error {
	defer h.end()
	ctx, cancel := c.bound(ctx)
	defer cancel()
	unlocked := make(chan error, 1)
	go func() { unlocked <- h.lock.Unlock() }()
	select {
	case err := <-unlocked:
		if err != nil {
			return fmt.Errorf("consul lock: contender %d via %s: %w", c.id, plan.NodeName(c.node), err)
		}
		return nil
	case <-ctx.Done():
		h.cancel() // ends the release's request
		<-unlocked
		return fmt.Errorf("consul lock: contender %d via %s: release: %w", c.id, plan.NodeName(c.node), ctx.Err())
	}
}

// bound is ctx bounded by the locker's timeout unless it has a deadline,
// and ended by Close.
func (c *contender) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancelOp := stores.OpContext(ctx, c.l.timeout)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
		cancelOp()
	}
}

// Lost is api.Lock's leader channel of the last acquisition: closed once
// its monitor reads that the key is no longer held by the session (or
// cannot read it, or the contender let go).
func (c *contender) Lost() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// Close releases a lock still held and destroys its session, as Release,
// but gives up after closeWait: then every request still out is ended.
// Releasing first matters: a session destroyed while it holds the key
// would hold everyone else back for the lock-delay.
func (c *contender) Close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		h := c.held
		c.held = nil
		c.mu.Unlock()
		if h != nil {
			ctx, cancel := context.WithTimeout(context.Background(), closeWait)
			_ = c.release(ctx, h)
			select {
			case <-h.renewing: // the session's destroy was answered
			case <-ctx.Done():
			}
			cancel()
		}
		c.cancel()
		c.transport.CloseIdleConnections()
	})
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
