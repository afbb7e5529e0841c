package consul

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// Consistency modes a Consul workload can ask for: Consul's three read
// modes (https://developer.hashicorp.com/consul/api-docs/features/consistency).
// Writes always go through the leader.
const (
	// ConsistencyDefault reads from the leader without checking that it
	// still leads: a deposed leader may answer stale data for up to a
	// leader lease.
	ConsistencyDefault = "default"
	// ConsistencyConsistent (?consistent) makes the leader confirm its
	// leadership with a quorum before answering: linearizable.
	ConsistencyConsistent = "consistent"
	// ConsistencyStale (?stale) lets any server answer from its own
	// state, even without a leader.
	ConsistencyStale = "stale"
)

// DefaultOpTimeout bounds an operation when ClientOptions.Timeout is zero
// and the caller's context has no deadline.
const DefaultOpTimeout = 5 * time.Second

// maxIdleConnsPerHost is how many idle HTTP connections a client keeps per
// server. HTTP/1.1 carries one request at a time, so a connection's
// concurrent workload clients each hold a TCP connection while a request is
// out; keeping them all idle between requests avoids a new TCP handshake
// per request. Idle connections only exist once they were needed at once,
// so a high ceiling costs nothing at low concurrency.
const maxIdleConnsPerHost = 4096

// What can send a request twice, and what cannot (read from
// consul/api@v1.34.5 api.go, kv.go, raw.go, and net/http):
//
//   - The api package sends each call once: doRequest is one
//     http.Client.Do, with no retry loop and no redirects to follow.
//   - net/http re-sends a request on a new connection only when it failed
//     on a reused idle connection that the server had closed, and then
//     only if the request is idempotent (GET, hence reads) or nothing of it
//     was written: a write cannot be applied twice.
//   - The server may hold a request: a server without a known leader
//     waits up to performance.rpc_hold_timeout (7 s by default) for one
//     before it answers "No cluster leader". That is the store's own
//     behaviour under an election and is measured as such; with a shorter
//     op timeout the client gives up first and the op is a timeout.
//   - api.NewClient reads CONSUL_HTTP_TOKEN, CONSUL_HTTP_TOKEN_FILE,
//     CONSUL_NAMESPACE and CONSUL_PARTITION from the environment, like the
//     consul CLI. The scenario clusters run without ACLs, so a token is
//     ignored; the address, scheme and TLS settings are always this
//     package's own.

// client is a stores.Client over a fixed set of HTTP connection pools.
type client struct {
	conns       []*conn
	timeout     time.Duration
	consistency string
}

// conn is one HTTP connection pool with an API client per server. A
// workload client sends its ops to one server, chosen by its id so that
// clients spread over the servers as etcd's balancer spreads them; a
// follower forwards writes and default or consistent reads to the leader
// itself. When a server cannot be reached, the pool skips it for
// serverBackoff and the clients that used it move to the next one, as
// clients given several server addresses do: without that, a killed server
// would fail its clients' ops until it came back, which measures the
// client, not the cluster's failover.
type conn struct {
	servers   []server
	transport *http.Transport
}

type server struct {
	node int
	kv   *api.KV
	raw  *api.Raw
	// downUntil is when, in UnixNano, the server is tried again after a
	// connection failure; 0 or past: it is up.
	downUntil *atomic.Int64
}

// ClientSettings describes the settings a workload's clients run with, for
// results.json and the report. Consul's clients have no declarable
// settings yet.
func ClientSettings(plan.ClientSpec) map[string]string {
	return map[string]string{
		"http":      "consul/api's transport: keepalive connections, no client timeout but the operation's",
		"balancing": "each client on one server by its id, skipping for " + serverBackoff.String() + " a server that refused or dropped a connection",
		"retries":   "none (consul/api has none): each operation is sent once",
	}
}

// serverBackoff is how long a server that refused or dropped a connection
// is skipped. The first op after it is the probe.
const serverBackoff = time.Second

// NewClient makes opts.Conns HTTP connection pools (at least one), each
// able to reach every endpoint. Nothing is dialed yet, so a client can be
// made while servers are down; ctx only cancels the setup. Do runs each
// operation once, bounded by its context's deadline or else opts.Timeout
// (DefaultOpTimeout if zero).
func NewClient(ctx context.Context, opts stores.ClientOptions) (stores.Client, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("consul client: no endpoints")
	}
	consistency := opts.Consistency
	switch consistency {
	case "":
		consistency = ConsistencyDefault
	case ConsistencyDefault, ConsistencyConsistent, ConsistencyStale:
	default:
		return nil, fmt.Errorf("consul client: consistency %q: want %q, %q or %q", opts.Consistency, ConsistencyDefault, ConsistencyConsistent, ConsistencyStale)
	}
	for _, ep := range opts.Endpoints {
		if _, _, err := net.SplitHostPort(ep.ClientAddr); err != nil {
			return nil, fmt.Errorf("consul client: %s HTTP address %q: %w", plan.NodeName(ep.Node), ep.ClientAddr, err)
		}
	}
	n := max(opts.Conns, 1)
	c := &client{timeout: opts.Timeout, consistency: consistency}
	if c.timeout <= 0 {
		c.timeout = DefaultOpTimeout
	}
	for i := range n {
		if err := ctx.Err(); err != nil {
			c.Close()
			return nil, fmt.Errorf("consul client: %w", err)
		}
		cn := &conn{transport: newTransport(opts.DialFunc(), maxIdleConnsPerHost)}
		c.conns = append(c.conns, cn)
		for _, ep := range opts.Endpoints {
			cli, err := newAPIClient(ep.ClientAddr, cn.transport)
			if err != nil {
				c.Close()
				return nil, fmt.Errorf("consul client: connection %d of %d to %s: %w", i+1, n, plan.NodeName(ep.Node), err)
			}
			cn.servers = append(cn.servers, server{node: ep.Node, kv: cli.KV(), raw: cli.Raw(), downUntil: new(atomic.Int64)})
		}
	}
	return c, nil
}

// pick is the server workload client id talks to: server id % n unless
// that one is backing off, else the next one up, else its own.
func (cn *conn) pick(id int) *server {
	n := len(cn.servers)
	first := id % n
	now := time.Now().UnixNano()
	for k := range n {
		s := &cn.servers[(first+k)%n]
		if s.downUntil.Load() <= now {
			return s
		}
	}
	return &cn.servers[first]
}

// newTransport returns an HTTP transport of its own, so that connections
// of different clients and servers never share a pool. dial, if not nil,
// opens every connection (for example inside a network namespace).
func newTransport(dial stores.DialFunc, idlePerHost int) *http.Transport {
	t := &http.Transport{
		// Never a proxy from HTTP_PROXY: the servers are on loopback or
		// in the runner's own namespaces.
		Proxy:               nil,
		MaxIdleConns:        0, // no overall limit; the per-host one applies
		MaxIdleConnsPerHost: idlePerHost,
		IdleConnTimeout:     90 * time.Second,
		// Consul's answers are small; gzip would only cost CPU.
		DisableCompression: true,
	}
	if dial != nil {
		t.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) }
	} else {
		d := &net.Dialer{KeepAlive: 30 * time.Second}
		t.DialContext = d.DialContext
	}
	return t
}

// newAPIClient is a Consul API client for one server over t.
func newAPIClient(addr string, t *http.Transport) (*api.Client, error) {
	return api.NewClient(&api.Config{
		Address:    addr,
		Scheme:     "http",
		HttpClient: &http.Client{Transport: t},
	})
}

// Do runs op once on the connection of op.Client. The per-op timeout applies
// unless the op is bounded already (stores.OpContext): the workload engine
// times out its ops itself, without a deadline the store would see.
func (c *client) Do(ctx context.Context, op stores.Op) stores.Result {
	cn := c.conns[uint(op.Client)%uint(len(c.conns))]
	sv := cn.pick(int(uint(op.Client) % uint(len(cn.servers))))
	ctx, cancel := stores.OpContext(ctx, c.timeout)
	defer cancel()
	// Consul's KV paths have no leading slash: /v1/kv/<key>.
	key := strings.TrimPrefix(op.Key, "/")

	var res stores.Result
	var err error
	switch op.Kind {
	case plan.OpPut:
		_, err = sv.kv.Put(&api.KVPair{Key: key, Value: op.Value}, writeOpts(ctx))
	case plan.OpGet:
		var pair *api.KVPair
		pair, _, err = sv.kv.Get(key, c.queryOpts(ctx))
		if err == nil && pair != nil {
			res.Found = true
			res.Value = pair.Value
		}
	case plan.OpDelete:
		_, err = sv.kv.Delete(key, writeOpts(ctx))
	case plan.OpRange:
		res.Count, err = c.rangeCount(ctx, sv, key, strings.TrimPrefix(op.End, "/"), op.Limit)
	case plan.OpTxn:
		// One set in one transaction: a write in one round trip through
		// the transaction endpoint. Raw().Write rather than Txn().Txn:
		// the latter flattens a refusal into a plain error without its
		// status code, which Classify needs.
		ops := api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVSet, Key: key, Value: op.Value}}}
		_, err = sv.raw.Write("/v1/txn", ops, nil, writeOpts(ctx))
	default:
		err = fmt.Errorf("unsupported operation (consul supports %s)", strings.Join(plan.AllOps, ", "))
	}
	if err == nil {
		res.Node = sv.node
	}
	if err != nil {
		res.Err = fmt.Errorf("consul %s via %s: %w", op.Kind, plan.NodeName(sv.node), err)
		res.Class = Classify(err)
		if res.Class == plan.ErrConnection {
			sv.downUntil.Store(time.Now().Add(serverBackoff).UnixNano())
		}
	}
	return res
}

// rangeCount counts the keys in [start, end), or with the prefix start when
// end is "", at most limit of them if limit > 0.
//
// Consul's KV API has no start key and no server-side limit: it lists a
// prefix. So a range reads every key under the longest common prefix of
// start and end and filters here; its cost grows with the keys under that
// prefix, not with limit. It asks for key names only (?keys): with values,
// a range over a large keyspace would carry keyspace x value size bytes.
func (c *client) rangeCount(ctx context.Context, sv *server, start, end string, limit int) (int, error) {
	prefix := start
	if end != "" {
		prefix = commonPrefix(start, end)
	}
	keys, _, err := sv.kv.Keys(prefix, "", c.queryOpts(ctx))
	if err != nil {
		return 0, err
	}
	return countRange(keys, start, end, limit), nil
}

// countRange counts the keys of a prefix listing that fall in [start, end)
// (every key when end is ""), up to limit if limit > 0.
func countRange(keys []string, start, end string, limit int) int {
	n := 0
	for _, k := range keys {
		if end != "" && (k < start || k >= end) {
			continue
		}
		n++
		if limit > 0 && n == limit {
			break
		}
	}
	return n
}

func commonPrefix(a, b string) string {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return a[:i]
		}
	}
	return a[:n]
}

func (c *client) queryOpts(ctx context.Context) *api.QueryOptions {
	q := &api.QueryOptions{
		RequireConsistent: c.consistency == ConsistencyConsistent,
		AllowStale:        c.consistency == ConsistencyStale,
	}
	return q.WithContext(ctx)
}

func writeOpts(ctx context.Context) *api.WriteOptions {
	return (&api.WriteOptions{}).WithContext(ctx)
}

// Close drops every idle connection. Requests still in flight finish or
// fail on their own; closing twice is harmless.
func (c *client) Close() error {
	for _, cn := range c.conns {
		cn.transport.CloseIdleConnections()
	}
	return nil
}

// Classify puts a failed operation's error into one of plan.ErrorClasses:
//
//   - timeout: the client gave up waiting (its deadline) or abandoned the
//     op, or the server gave up waiting for raft; the outcome is unknown.
//   - unavailable: a server answered that it cannot serve now: no leader,
//     leadership lost, not ready for consistent reads, rate limited, or it
//     could not reach the leader to forward the request to.
//   - connection: no answer came because a connection was refused, reset
//     or closed.
//   - other: anything else (bad request, transaction rolled back, ...).
func Classify(err error) string {
	if err == nil {
		return ""
	}
	// Context errors first: net/http reports a request whose context
	// ended with the context's error inside its *url.Error.
	if stores.Abandoned(err) {
		return plan.ErrTimeout
	}
	// An HTTP answer other than the one expected: api v1.34.5 returns it as
	// api.StatusError with the status code and the body (Consul's error
	// message, plain text).
	var se api.StatusError
	if errors.As(err, &se) {
		return classifyStatus(se.Code, se.Body)
	}
	var pse *api.StatusError
	if errors.As(err, &pse) && pse != nil {
		return classifyStatus(pse.Code, pse.Body)
	}
	if class := stores.NetworkClass(err); class != "" {
		return class
	}
	// Any other failure of the HTTP exchange itself ("server closed idle
	// connection", a malformed response) got no answer from Consul. A
	// request that could not even be built carries Op "parse".
	var ue *url.Error
	if errors.As(err, &ue) && ue.Op != "parse" {
		return plan.ErrConnection
	}
	return plan.ErrOther
}

// unavailableMessages are Consul and raft refusals that mean "not now",
// as they appear in a 5xx answer's body, possibly behind "rpc error making
// call: " when a follower forwarded the request to the leader. Read from
// consul v1.20.2 agent/structs/errors.go, agent/consul/rate/handler.go,
// agent/pool and hashicorp/raft v1.7.0 api.go.
var unavailableMessages = []string{
	"No cluster leader",                   // structs.ErrNoLeader: no leader within rpc_hold_timeout
	"Raft leader not found",               // structs.ErrLeaderNotTracked: raft knows a leader that serf does not
	"Not ready to serve consistent reads", // a new leader before its barrier
	"No known Consul servers",             // structs.ErrNoServers
	"leadership lost",                     // raft.ErrLeadershipLost: deposed while committing
	"leadership transfer in progress",     // raft.ErrLeadershipTransferInProgress: handing over, it takes no write
	"node is not the leader",              // raft.ErrNotLeader
	"raft is already shutdown",            // raft.ErrRaftShutdown: the server is stopping
	"snapshot restored while committing",  // raft.ErrAbortedByRestore
	"rate limit",                          // rate.ErrRetryLater / ErrRetryElsewhere, RPC rate limit
	"Rate limit",                          // structs.ErrRateLimited
	// A follower that could not reach the leader to forward the request:
	// the leader just died or is cut off. The request may have reached it.
	"rpc error getting client",
	"connection refused",
	"connection reset",
	"broken pipe",
	"i/o timeout",
	"use of closed network connection",
	"EOF",
	// yamux, which multiplexes the RPC connection between servers
	// (hashicorp/yamux const.go): the leader's end went away mid-call.
	"session shutdown",
	"stream closed",
	"connection write timeout",
	"keepalive timeout",
	"i/o deadline reached",
	"remote end is not accepting connections",
}

// timeoutMessages are server-side give-ups whose request may still commit.
var timeoutMessages = []string{
	"timed out enqueuing operation", // raft.ErrEnqueueTimeout
}

// classifyStatus classifies an HTTP answer by its status code and, for a
// 500, by Consul's message: Consul answers most refusals, "No cluster
// leader" included, with a plain 500.
func classifyStatus(code int, body string) string {
	switch {
	case code == http.StatusTooManyRequests, code == http.StatusServiceUnavailable:
		return plan.ErrUnavailable
	case code == http.StatusGatewayTimeout:
		return plan.ErrTimeout
	case code >= 500:
		for _, m := range timeoutMessages {
			if strings.Contains(body, m) {
				return plan.ErrTimeout
			}
		}
		for _, m := range unavailableMessages {
			if strings.Contains(body, m) {
				return plan.ErrUnavailable
			}
		}
	}
	return plan.ErrOther
}
