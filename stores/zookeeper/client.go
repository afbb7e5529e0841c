package zookeeper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// Consistency modes a ZooKeeper workload can ask for.
const (
	// ConsistencyLocal is the default: the server a session is connected
	// to answers reads from its own state, which may lag the leader.
	ConsistencyLocal = "local"
	// ConsistencySync sends a sync before each read (get, range), so the
	// read sees every write committed before the sync: one more round
	// trip, through the leader.
	ConsistencySync = "sync"
)

// DefaultOpTimeout bounds an operation when ClientOptions.Timeout is zero
// and the caller's context has no deadline.
const DefaultOpTimeout = 5 * time.Second

// sessionTimeout is what each session asks for; the servers clamp it to
// 2..20 ticks (4..40 s with the default tick). go-zookeeper derives its
// read timeout (2/3 of it) and ping interval (1/3) from the negotiated
// value, so a server that stops answering (paused, cut off) is given up
// after about 7 s and the session moves to another server; a session
// that stays disconnected longer than this expires.
const sessionTimeout = 10 * time.Second

// workloadSessionTimeout is the session timeout a workload declared, else
// sessionTimeout (go-zookeeper has no default: every caller chooses one).
func workloadSessionTimeout(c plan.ClientSpec) time.Duration {
	if c.SessionTimeout > 0 {
		return c.SessionTimeout.D()
	}
	return sessionTimeout
}

// ClientSettings describes the settings a workload's sessions run with,
// for results.json and the report.
func ClientSettings(c plan.ClientSpec) map[string]string {
	return map[string]string{
		"session_timeout": workloadSessionTimeout(c).String() + " asked (the servers clamp it to 2-20 ticks; reads time out at 2/3 of it, pings every 1/3)",
		"reconnect":       "go-zookeeper: the next server of the list, 1 s after a failure",
		"retries":         "none (go-zookeeper has none): each operation is sent once",
		"balancing":       "one server per session, the list rotated per connection",
	}
}

// kvRoot is the parent of every key's znode. Keys are arbitrary strings
// ("/scenario/kv/000123"), so each becomes one flat child, named by
// znodeName, instead of a path of znodes whose parents would all need
// creating first.
const kvRoot = "/scenario-kv"

// What go-zookeeper v1.0.4 does with a request (read from conn.go, and
// measured against a 3-node ZooKeeper 3.8.0 on loopback), and so what a
// workload sees:
//
//   - Connect returns at once; one goroutine dials the servers in order
//     and (re)establishes the session. Requests are queued on a channel
//     of 16 and written only while connected. While disconnected a
//     request waits in that queue, and once the queue is full the caller
//     blocks: calls do block while disconnected. Each time the loop has
//     tried every server without success it fails the queued requests
//     with ErrNoServer and sleeps a second before the next round.
//   - When a connection breaks, every request written on it fails with
//     ErrConnectionClosed. None is re-sent; its outcome is unknown. The
//     session moves to the next server, keeping its session if that
//     happens within the session timeout, else failing once with
//     ErrSessionExpired and starting a new one.
//   - A server without a quorum drops its clients and every new one after
//     the handshake. So when the leader is killed, the followers drop
//     their sessions at once: requests in flight fail with
//     ErrConnectionClosed, queued ones with ErrNoServer within about 50
//     ms, and the next ones wait for the second-long sleep. Measured: a
//     new leader about 0.8-1.1 s after the kill, writes succeeding again
//     after 1.05-1.25 s.
//   - A paused server answers nothing: its sessions notice only when no
//     reply or ping answer has come for 2/3 of the session timeout (see
//     sessionTimeout), and a handshake with it, or with a follower of a
//     paused leader, would hang but for handshakeTimeout.
//   - No call takes a context and there is no per-request timeout. Do
//     runs each call in a goroutine and stops waiting when ctx ends; the
//     request may still be sent and applied later, exactly like a
//     request whose reply was lost, and its goroutine ends when the reply
//     comes, the connection breaks or the client is closed.
//   - Nothing is retried by the library. This client sends follow-up
//     requests only where a definite answer calls for them (a put on a
//     missing znode creates it), never after a failure of unknown outcome.
//   - A request larger than the server's jute.maxbuffer (1 MiB less one
//     byte, header included) makes the server close the connection:
//     values of about 1 MB and more fail with a connection error.

// client is a stores.Client over a fixed set of ZooKeeper sessions.
type client struct {
	conns   []*zk.Conn
	timeout time.Duration
	sync    bool
	acl     []zk.ACL
	nodes   map[string]int // client address -> 1-based node index
}

// NewClient opens opts.Conns sessions (at least one) to the ensemble at
// opts.Endpoints, each trying the servers in a different rotation so that
// sessions spread over the servers. Connecting does not block: a client
// can be made while servers are down, and its first operations wait for
// a session. ctx only cancels the setup.
func NewClient(ctx context.Context, opts stores.ClientOptions) (stores.Client, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("zookeeper client: no endpoints")
	}
	switch opts.Consistency {
	case "", ConsistencyLocal, ConsistencySync:
	default:
		return nil, fmt.Errorf("zookeeper client: consistency %q: want %q or %q", opts.Consistency, ConsistencyLocal, ConsistencySync)
	}
	n := max(opts.Conns, 1)
	c := &client{
		timeout: opts.Timeout,
		sync:    opts.Consistency == ConsistencySync,
		acl:     zk.WorldACL(zk.PermAll),
		nodes:   make(map[string]int, len(opts.Endpoints)),
	}
	if c.timeout <= 0 {
		c.timeout = DefaultOpTimeout
	}
	addrs := make([]string, len(opts.Endpoints))
	for i, ep := range opts.Endpoints {
		addrs[i] = ep.ClientAddr
		c.nodes[ep.ClientAddr] = ep.Node
	}
	dial := opts.DialFunc()
	for i := range n {
		if err := ctx.Err(); err != nil {
			c.Close()
			return nil, fmt.Errorf("zookeeper client: %w", err)
		}
		rotated := append(append([]string(nil), addrs[i%len(addrs):]...), addrs[:i%len(addrs)]...)
		conn, _, err := zk.Connect(rotated, workloadSessionTimeout(opts.Workload.Client),
			// zk.Connect shuffles the servers and its default provider
			// shuffles them again after resolving them; this one keeps
			// the rotation and does no DNS lookups.
			zk.WithHostProvider(&orderedHosts{servers: rotated}),
			zk.WithDialer(zkDialer(dial)),
			// zk logs every connection attempt and failure through the
			// standard logger; the results carry the errors.
			zk.WithLogger(nopLogger{}),
			zk.WithLogInfo(false))
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("zookeeper client: session %d of %d: %w", i+1, n, err)
		}
		c.conns = append(c.conns, conn)
	}
	return c, nil
}

// handshakeTimeout bounds a session's handshake with one server. The
// handshake waits for the server to create or revalidate the session,
// which needs its leader; go-zookeeper waits ten read timeouts for it
// (about 67 s with sessionTimeout), and a server that is paused, or a
// follower whose leader is, never answers. Measured here: after a leader
// was paused, every session sat in such a handshake until the old leader
// resumed, long after a new leader was elected. The Java client gives a
// server sessionTimeout/servers; a few seconds covers a handshake on any
// link a scenario declares.
const handshakeTimeout = 3 * time.Second

// zkDialer adapts dial, or a direct dial when it is nil, to zk's dialer,
// which takes a timeout instead of a context, and bounds the handshake on
// every connection it opens.
func zkDialer(dial stores.DialFunc) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		var conn net.Conn
		var err error
		if dial == nil {
			conn, err = net.DialTimeout(network, addr, timeout)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			conn, err = dial(ctx, addr)
		}
		if err != nil {
			return nil, err
		}
		return &handshakeConn{Conn: conn, deadline: time.Now().Add(handshakeTimeout)}, nil
	}
}

// handshakeConn holds every deadline go-zookeeper sets to at most
// deadline until the server's connect response has been read: the first
// length-prefixed packet on the connection. After that it changes
// nothing. go-zookeeper reads the response before it starts its send and
// receive loops, so the fields need no lock; done is atomic only because
// those loops set deadlines concurrently afterwards.
type handshakeConn struct {
	net.Conn
	deadline time.Time
	header   []byte // the response's length prefix, as read so far
	left     int    // bytes of the response still to read once header is complete
	done     atomic.Bool
}

func (c *handshakeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.done.Load() {
		c.consume(p[:n])
	}
	return n, err
}

// consume follows the connect response through the bytes read.
func (c *handshakeConn) consume(b []byte) {
	for len(b) > 0 && !c.done.Load() {
		if len(c.header) < 4 {
			k := min(4-len(c.header), len(b))
			c.header, b = append(c.header, b[:k]...), b[k:]
			if len(c.header) == 4 {
				c.left = int(binary.BigEndian.Uint32(c.header))
				c.done.Store(c.left == 0)
			}
			continue
		}
		k := min(c.left, len(b))
		c.left, b = c.left-k, b[k:]
		c.done.Store(c.left == 0)
	}
}

func (c *handshakeConn) clamp(t time.Time) time.Time {
	if !c.done.Load() && (t.IsZero() || t.After(c.deadline)) {
		return c.deadline
	}
	return t
}

func (c *handshakeConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.clamp(t)) }
func (c *handshakeConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.clamp(t))
}
func (c *handshakeConn) SetWriteDeadline(t time.Time) error {
	return c.Conn.SetWriteDeadline(c.clamp(t))
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// orderedHosts is a zk.HostProvider that cycles through servers in their
// given order. Next reports retryStart once every server has been tried
// since the last successful connection, as zk's own provider does.
type orderedHosts struct {
	mu         sync.Mutex
	servers    []string
	curr, last int
}

// Init ignores the list zk.Connect passes: it is the same servers,
// shuffled.
func (h *orderedHosts) Init([]string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.servers) == 0 {
		return errors.New("no servers")
	}
	h.curr, h.last = -1, -1
	return nil
}

func (h *orderedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *orderedHosts) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart = h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *orderedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}

// Do runs op once on the session of op.Client. The per-op timeout applies
// unless the op is bounded already (stores.OpContext): the workload engine
// times out its ops itself, without a deadline the store would see.
func (c *client) Do(ctx context.Context, op stores.Op) stores.Result {
	switch op.Kind {
	case plan.OpPut, plan.OpGet, plan.OpDelete, plan.OpRange, plan.OpTxn:
	default:
		err := fmt.Errorf("zookeeper %s: unsupported operation (zookeeper supports %s)", op.Kind, strings.Join(plan.AllOps, ", "))
		return stores.Result{Err: err, Class: plan.ErrOther}
	}
	conn := c.conns[uint(op.Client)%uint(len(c.conns))]
	ctx, cancel := stores.OpContext(ctx, c.timeout)
	defer cancel()
	var res stores.Result
	err := ctx.Err()
	if err == nil {
		type outcome struct {
			res stores.Result
			err error
		}
		// Buffered: an abandoned call still finishes (see above) and
		// must not block on a reader that has gone.
		done := make(chan outcome, 1)
		go func() {
			r, err := c.do(conn, op)
			if err == nil {
				// The server the session is on now: the one that
				// answered, unless it moved in the instant since.
				r.Node = c.nodes[conn.Server()]
			}
			done <- outcome{r, err}
		}()
		select {
		case o := <-done:
			res, err = o.res, o.err
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		return stores.Result{Err: fmt.Errorf("zookeeper %s: %w", op.Kind, err), Class: Classify(err)}
	}
	return res
}

// do sends op's requests on conn and waits for their answers.
func (c *client) do(conn *zk.Conn, op stores.Op) (stores.Result, error) {
	var res stores.Result
	path := kvRoot + "/" + znodeName(op.Key)
	switch op.Kind {
	case plan.OpPut:
		return res, c.put(conn, path, op.Value)
	case plan.OpGet:
		if c.sync {
			if _, err := conn.Sync(path); err != nil {
				return res, fmt.Errorf("sync: %w", err)
			}
		}
		v, _, err := conn.Get(path)
		switch {
		case err == nil:
			res.Found, res.Value = true, v
		case errors.Is(err, zk.ErrNoNode):
		default:
			return res, err
		}
	case plan.OpDelete:
		if err := conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return res, err
		}
	case plan.OpRange:
		if c.sync {
			if _, err := conn.Sync(kvRoot); err != nil {
				return res, fmt.Errorf("sync: %w", err)
			}
		}
		// ZooKeeper has no range read: this lists every key's name
		// (no values) and filters here, so a range costs in proportion
		// to the keyspace, whatever its limit, and is not comparable
		// to an etcd range.
		names, _, err := conn.Children(kvRoot)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return res, err
		}
		res.Count = countRange(names, op.Key, op.End, op.Limit)
	case plan.OpTxn:
		found, err := c.txn(conn, path, op.Value)
		res.Found = found
		return res, err
	}
	return res, nil
}

// put writes value at path whether or not it exists: a set, and a create
// when there is nothing to set.
func (c *client) put(conn *zk.Conn, path string, value []byte) error {
	_, err := conn.Set(path, value, -1)
	if !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	err = c.create(conn, path, value)
	if errors.Is(err, zk.ErrNodeExists) {
		// Another client created it in between: set it after all.
		_, err = conn.Set(path, value, -1)
	}
	return err
}

// create creates the znode at path, and the root first if the create
// found it missing (the first write to a fresh ensemble).
func (c *client) create(conn *zk.Conn, path string, value []byte) error {
	_, err := conn.Create(path, value, 0, c.acl)
	if !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	if err := c.createRoot(conn); err != nil {
		return err
	}
	_, err = conn.Create(path, value, 0, c.acl)
	return err
}

func (c *client) createRoot(conn *zk.Conn) error {
	if _, err := conn.Create(kvRoot, nil, 0, c.acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", kvRoot, err)
	}
	return nil
}

// txn writes value at path in a multi-op transaction, ZooKeeper's
// transactional API: a set if the znode exists, else a create (a second
// round trip only for a key's first write). found says whether the key
// existed.
func (c *client) txn(conn *zk.Conn, path string, value []byte) (found bool, err error) {
	// go-zookeeper returns the first failed op's error from Multi.
	_, err = conn.Multi(&zk.SetDataRequest{Path: path, Data: value, Version: -1})
	if !errors.Is(err, zk.ErrNoNode) {
		return err == nil, err
	}
	create := &zk.CreateRequest{Path: path, Data: value, Acl: c.acl}
	_, err = conn.Multi(create)
	if errors.Is(err, zk.ErrNoNode) {
		if err := c.createRoot(conn); err != nil {
			return false, err
		}
		_, err = conn.Multi(create)
	}
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = conn.Multi(&zk.SetDataRequest{Path: path, Data: value, Version: -1})
		return err == nil, err
	}
	return false, err
}

// countRange counts the keys among znode names in [key, end), or with
// prefix key when end is "", at most limit if limit > 0. Which keys a
// limited range returns does not change how many, so nothing is sorted.
func countRange(names []string, key, end string, limit int) int {
	n := 0
	if end == "" {
		// Escaping maps each byte on its own, so a key has a prefix
		// exactly when its name has the prefix's escaped form.
		prefix := znodeName(key)
		for _, name := range names {
			if strings.HasPrefix(name, prefix) && validName(name) {
				n++
			}
		}
	} else {
		// Escaped names do not sort like keys ('%' sorts low), so the
		// bounds are compared on keys.
		for _, name := range names {
			if k, ok := keyOf(name); ok && k >= key && k < end {
				n++
			}
		}
	}
	if limit > 0 {
		n = min(n, limit)
	}
	return n
}

// znodeName maps a key to the name of its znode under kvRoot: a 'k'
// (so that no name is empty, "." or "..") followed by the key with '%',
// '/' and every byte outside printable ASCII written as %XX. ZooKeeper
// refuses '/' in a name and control and some non-ASCII characters in a
// path, and it decodes paths as UTF-8, so other bytes could not come back
// unchanged.
func znodeName(key string) string {
	var b strings.Builder
	b.Grow(1 + len(key) + len(key)/4)
	b.WriteByte('k')
	for i := 0; i < len(key); i++ {
		ch := key[i]
		if mustEscape(ch) {
			const hex = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hex[ch>>4])
			b.WriteByte(hex[ch&0xf])
			continue
		}
		b.WriteByte(ch)
	}
	return b.String()
}

func mustEscape(ch byte) bool {
	return ch == '%' || ch == '/' || ch < 0x20 || ch > 0x7e
}

// validName reports whether znodeName can have made name.
func validName(name string) bool {
	if !strings.HasPrefix(name, "k") {
		return false
	}
	for i := 1; i < len(name); i++ {
		switch {
		case name[i] == '%':
			// Only bytes that must be escaped are: one name per key.
			if i+2 >= len(name) || !isHex(name[i+1]) || !isHex(name[i+2]) ||
				!mustEscape(unhex(name[i+1])<<4|unhex(name[i+2])) {
				return false
			}
			i += 2
		case mustEscape(name[i]):
			return false
		}
	}
	return true
}

// keyOf inverts znodeName; ok is false for a name it cannot have made.
func keyOf(name string) (key string, ok bool) {
	if !validName(name) {
		return "", false
	}
	b := make([]byte, 0, len(name)-1)
	for i := 1; i < len(name); i++ {
		if name[i] == '%' {
			b = append(b, unhex(name[i+1])<<4|unhex(name[i+2]))
			i += 2
			continue
		}
		b = append(b, name[i])
	}
	return string(b), true
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }

// unhex reads one of the upper-case hex digits znodeName writes.
func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'A' + 10
}

// Close closes every session, all at once: closing a disconnected session
// waits up to about three seconds for its close request. Operations sent
// afterwards fail with a connection error; closing twice is harmless.
func (c *client) Close() error {
	var wg sync.WaitGroup
	for _, conn := range c.conns {
		wg.Go(conn.Close)
	}
	wg.Wait()
	return nil
}

// Classify puts a failed operation's error into one of plan.ErrorClasses:
//
//   - timeout: the client stopped waiting (its deadline, a cancelled
//     context, an I/O deadline) or the server gave up waiting itself
//     (operation or request timeout); the outcome is unknown.
//   - connection: the request got no answer because no server could be
//     reached or the connection broke (ErrConnectionClosed, ErrNoServer,
//     ErrClosing, refused, reset, EOF). During an election this is what
//     clients see, since servers without a quorum drop their clients.
//   - unavailable: a server answered that it will not serve the request
//     now: the session expired, moved or is unknown, it is read-only, it
//     throttled the request, or a reconfiguration is in the way.
//   - other: anything else (bad version, no auth, marshalling, ...).
func Classify(err error) string {
	if err == nil {
		return ""
	}
	switch {
	case stores.Abandoned(err):
		return plan.ErrTimeout
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer),
		errors.Is(err, zk.ErrClosing):
		return plan.ErrConnection
	case errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrSessionMoved):
		return plan.ErrUnavailable
	}
	// Server error codes that go-zookeeper has no error value for come
	// back as fmt.Errorf("unknown error: %v", code), so the code is only
	// in the text. This is the only place that reads a message.
	if code, ok := unknownCode(err); ok {
		// Codes from KeeperException.Code of ZooKeeper 3.8.
		switch code {
		case -7, -122: // OPERATIONTIMEOUT, REQUESTTIMEOUT
			return plan.ErrTimeout
		case -4: // CONNECTIONLOSS
			return plan.ErrConnection
		case -12, -13, -14, -119, -127: // UNKNOWNSESSION, NEWCONFIGNOQUORUM, RECONFIGINPROGRESS, NOTREADONLY, THROTTLEDOP
			return plan.ErrUnavailable
		}
		return plan.ErrOther
	}
	if class := stores.NetworkClass(err); class != "" {
		return class
	}
	// Any other failure of a dial, read or write got no answer.
	var oe *net.OpError
	if errors.As(err, &oe) {
		return plan.ErrConnection
	}
	return plan.ErrOther
}

// unknownCode finds the server error code in go-zookeeper's "unknown
// error: N" anywhere in err's chain.
func unknownCode(err error) (int, bool) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		s := e.Error()
		if !strings.HasPrefix(s, "unknown error: ") {
			continue
		}
		code, convErr := strconv.Atoi(strings.TrimPrefix(s, "unknown error: "))
		return code, convErr == nil
	}
	return 0, false
}
