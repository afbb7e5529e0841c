package etcd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// closeWait bounds the lease revoke of a contender's Close: a frozen
// contender cannot reach the cluster, and a lease that is already gone
// needs no revoke, so waiting longer would only stall the runner.
const closeWait = 2 * time.Second

// revokeGrace is how long Close waits, once it has given up and closed the
// client, for the revoke to notice.
const revokeGrace = 500 * time.Millisecond

// locker is etcd's lock recipe as services write it: a concurrency.Session
// (a lease kept alive by the client) per contender and a concurrency.Mutex
// on it, or (recipe "election") a concurrency.Election on it. It holds no
// connection; each contender brings its own.
type locker struct {
	recipe  string // plan.LockMutex or plan.LockElection
	urls    []string
	dial    stores.DialFunc // for a contender given no dial of its own
	client  plan.ClientSpec
	key     string
	ttl     int64 // seconds, as leases count
	timeout time.Duration
}

// NewLocker keeps opts for the contenders; nothing is dialed.
func NewLocker(_ context.Context, opts stores.LockerOptions) (stores.Locker, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("etcd lock: no endpoints")
	}
	if opts.Key == "" {
		return nil, errors.New("etcd lock: no key")
	}
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("etcd lock: TTL %s: want a positive TTL", opts.TTL)
	}
	recipe := opts.Recipe
	switch recipe {
	case "":
		recipe = plan.LockMutex
	case plan.LockMutex, plan.LockElection:
	default:
		return nil, fmt.Errorf("etcd lock: recipe %q: want %q or %q", opts.Recipe, plan.LockMutex, plan.LockElection)
	}
	l := &locker{
		recipe:  recipe,
		urls:    clientURLs(opts.Endpoints),
		dial:    opts.DialFunc(),
		client:  opts.Workload.Client,
		key:     opts.Key,
		ttl:     max(int64(math.Ceil(opts.TTL.Seconds())), 1), // leases have whole seconds
		timeout: opts.Timeout,
	}
	if l.timeout <= 0 {
		l.timeout = DefaultOpTimeout
	}
	return l, nil
}

// Contender opens a client of its own whose every connection goes through
// dial, so that freezing dial's connections silences the contender's
// keepalives while the rest of the run carries on.
func (l *locker) Contender(ctx context.Context, id int, dial stores.DialFunc) (stores.Contender, error) {
	if dial == nil {
		dial = l.dial
	}
	// Rotating by id spreads the contenders' first picks over the members.
	k := (id%len(l.urls) + len(l.urls)) % len(l.urls)
	rotated := append(append([]string(nil), l.urls[k:]...), l.urls[:k]...)
	cli, err := clientv3.New(workloadConfig(rotated, dial, l.client))
	if err != nil {
		return nil, fmt.Errorf("etcd lock: contender %d: %w", id, err)
	}
	c := &contender{l: l, cli: cli}
	s, err := c.newSession(ctx)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd lock: contender %d: %w", id, err)
	}
	c.session, c.mutex = s, concurrency.NewMutex(s, l.key)
	if l.recipe == plan.LockElection {
		return &electionContender{contender: c, value: fmt.Sprintf("contender-%d", id)}, nil
	}
	return c, nil
}

func (l *locker) Close() error { return nil }

// bound applies the locker's timeout to a call whose context has no
// deadline: clientv3 waits for a ready connection, so a call from a
// frozen contender would otherwise never return.
func (l *locker) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return stores.OpContext(ctx, l.timeout)
}

type contender struct {
	l         *locker
	cli       *clientv3.Client
	closeOnce sync.Once

	// A session that ended is replaced at the next Acquire, while Lost
	// may be asked from another goroutine.
	mu      sync.Mutex
	session *concurrency.Session
	mutex   *concurrency.Mutex
}

// newSession grants the lease itself and hands it to the session:
// NewSession would grant on the session's context, which must outlive
// the call because the keepalive runs on it, so the grant could not be
// bounded by ctx.
func (c *contender) newSession(ctx context.Context) (*concurrency.Session, error) {
	gctx, cancel := c.l.bound(ctx)
	defer cancel()
	lease, err := c.cli.Grant(gctx, c.l.ttl)
	if err != nil {
		return nil, fmt.Errorf("grant: %w", err)
	}
	s, err := concurrency.NewSession(c.cli, concurrency.WithTTL(int(c.l.ttl)), concurrency.WithLease(lease.ID))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	return s, nil
}

// current is the mutex of a live session, after replacing the session if
// it ended: its lease is gone, and a mutex on it could never lock again.
func (c *contender) current(ctx context.Context) (*concurrency.Mutex, error) {
	_, m, err := c.live(ctx)
	return m, err
}

// live is the contender's session, and its mutex, after replacing the
// session if it ended.
func (c *contender) live(ctx context.Context) (*concurrency.Session, *concurrency.Mutex, error) {
	c.mu.Lock()
	old, m := c.session, c.mutex
	c.mu.Unlock()
	select {
	case <-old.Done():
	default:
		return old, m, nil
	}
	s, err := c.newSession(ctx)
	if err != nil {
		return nil, nil, err
	}
	old.Orphan() // already ended; this only releases its context
	m = concurrency.NewMutex(s, c.l.key)
	c.mu.Lock()
	c.session, c.mutex = s, m
	c.mu.Unlock()
	return s, m, nil
}

func (c *contender) Acquire(ctx context.Context) error {
	m, err := c.current(ctx)
	if err != nil {
		return fmt.Errorf("etcd lock: %w", err)
	}
	if err := m.Lock(ctx); err != nil {
		return fmt.Errorf("etcd lock: lock: %w", err)
	}
	return nil
}

func (c *contender) Release(ctx context.Context) error {
	c.mu.Lock()
	m := c.mutex
	c.mu.Unlock()
	if m.Key() == "" {
		// Never locked on this session: Unlock would delete the empty key,
		// which etcd refuses.
		return nil
	}
	ctx, cancel := c.l.bound(ctx)
	defer cancel()
	if err := m.Unlock(ctx); err != nil {
		return fmt.Errorf("etcd lock: unlock: %w", err)
	}
	return nil
}

// Lost is closed once the client stops keeping the lease alive: the server
// answered that the lease is gone, or no keepalive answer came for a TTL
// (clientv3 then gives the lease up on its own clock), or Close.
func (c *contender) Lost() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session.Done()
}

// Close revokes the lease so that the next contender need not wait out
// the TTL, but gives up after closeWait; closing the client then ends a
// revoke still waiting, and every session with it.
func (c *contender) Close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		s := c.session
		c.mu.Unlock()
		revoked := make(chan error, 1)
		go func() { revoked <- s.Close() }()
		timer := time.NewTimer(closeWait)
		defer timer.Stop()
		select {
		case err := <-revoked:
			if err == nil {
				_ = c.cli.Close()
				return
			}
			// The revoke gave up on its own (its deadline is the TTL,
			// as long as closeWait): the cluster is out of reach, and
			// closing the client would wait for gRPC's goodbyes as below.
			go c.cli.Close()
		case <-timer.C:
			// The cluster is out of reach (a frozen contender): gRPC would
			// wait 5 s per connection for its goodbye to be written before
			// closing it, so the connections finish closing in the
			// background. The client's context ends at once, and the
			// revoke with it, as a rule; it too may finish in the
			// background.
			go c.cli.Close()
			select {
			case <-revoked:
			case <-time.After(revokeGrace):
			}
		}
	})
}

// electionContender is etcd's leader-election recipe on the contender's
// session: Acquire campaigns on a new concurrency.Election, Release
// resigns. Lost and Close are the mutex contender's: the session is the
// same (its mutex goes unused).
type electionContender struct {
	*contender
	value string // what the contender proclaims: "contender-<id>"

	election *concurrency.Election // of the last Acquire; under mu
}

// Acquire campaigns until the contender leads. Campaign waits for the
// keys created before its own to go, and nothing else: it would go on
// waiting after its own key went with its lease, and then report
// leadership it does not have. So the campaign ends when the session
// does, and a won campaign checks that its key is still there, as
// Mutex.Lock does.
func (e *electionContender) Acquire(ctx context.Context) error {
	s, _, err := e.live(ctx)
	if err != nil {
		return fmt.Errorf("etcd election: %w", err)
	}
	el := concurrency.NewElection(s, e.l.key)
	e.mu.Lock()
	e.election = el
	e.mu.Unlock()

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.Done():
			cancel()
		case <-cctx.Done():
		}
	}()
	if err := el.Campaign(cctx, e.value); err != nil {
		if isClosed(s.Done()) && ctx.Err() == nil {
			return fmt.Errorf("etcd election: campaign: %w (%w)", concurrency.ErrSessionExpired, err)
		}
		return fmt.Errorf("etcd election: campaign: %w", err)
	}
	resp, err := s.Client().Get(cctx, el.Key())
	if err != nil {
		rctx, rcancel := e.l.bound(context.Background())
		defer rcancel()
		_ = el.Resign(rctx)
		return fmt.Errorf("etcd election: campaign: check: %w", err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != el.Rev() {
		return fmt.Errorf("etcd election: campaign: %w", concurrency.ErrSessionExpired)
	}
	return nil
}

// Release resigns; an election never won, or lost with its lease, has
// nothing to resign (Resign's delete is conditional on the key's
// creation revision, so it cannot remove a successor's key).
func (e *electionContender) Release(ctx context.Context) error {
	e.mu.Lock()
	el := e.election
	e.mu.Unlock()
	if el == nil {
		return nil
	}
	ctx, cancel := e.l.bound(ctx)
	defer cancel()
	if err := el.Resign(ctx); err != nil {
		return fmt.Errorf("etcd election: resign: %w", err)
	}
	return nil
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
