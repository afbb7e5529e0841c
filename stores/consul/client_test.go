package consul

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	status := func(code int, body string) error {
		return fmt.Errorf("consul put via n1: %w", api.StatusError{Code: code, Body: body})
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},

		{"context deadline", context.DeadlineExceeded, plan.ErrTimeout},
		{"deadline inside url.Error", &url.Error{Op: "Put", URL: "http://127.0.0.1:8500/v1/kv/k", Err: context.DeadlineExceeded}, plan.ErrTimeout},
		{"canceled", fmt.Errorf("consul get: %w", context.Canceled), plan.ErrTimeout},
		{"net timeout", &url.Error{Op: "Get", Err: &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}}, plan.ErrTimeout},
		{"server gave up enqueuing", status(500, "timed out enqueuing operation"), plan.ErrTimeout},
		{"gateway timeout", status(504, ""), plan.ErrTimeout},

		{"no leader", status(500, "No cluster leader"), plan.ErrUnavailable},
		{"no leader, forwarded", status(500, "rpc error making call: No cluster leader"), plan.ErrUnavailable},
		{"leadership lost", status(500, "rpc error making call: leadership lost while committing log"), plan.ErrUnavailable},
		{"leadership transfer", status(500, "leadership transfer in progress"), plan.ErrUnavailable},
		{"not the leader", status(500, "node is not the leader"), plan.ErrUnavailable},
		{"raft shutdown", status(500, "raft is already shutdown"), plan.ErrUnavailable},
		{"leader not tracked", status(500, "Raft leader not found in server lookup mapping"), plan.ErrUnavailable},
		{"not ready for consistent reads", status(500, "Not ready to serve consistent reads"), plan.ErrUnavailable},
		{"forward to a dead leader", status(500, "rpc error making call: EOF"), plan.ErrUnavailable},
		{"leader unreachable", status(500, "rpc error getting client: failed to get conn: dial tcp 127.0.0.1:8300: connect: connection refused"), plan.ErrUnavailable},
		{"yamux broke", status(500, "rpc error making call: session shutdown"), plan.ErrUnavailable},
		{"yamux stream closed", status(500, "rpc error making call: stream closed"), plan.ErrUnavailable},
		{"leader connection lost", status(500, "rpc error getting client: failed to get conn: rpc error: lead thread didn't get connection"), plan.ErrUnavailable},
		{"broken pipe to the leader", status(500, "rpc error making call: write tcp 127.0.0.1:1->127.0.0.1:2: write: broken pipe"), plan.ErrUnavailable},
		{"rate limited", status(429, "rate limit exceeded, try again later or against a different server"), plan.ErrUnavailable},
		{"rate limited elsewhere", status(503, "rate limit exceeded for operation that can only be performed by the leader, try again later"), plan.ErrUnavailable},
		{"503 without a body", status(503, ""), plan.ErrUnavailable},
		{"pointer status error", &api.StatusError{Code: 500, Body: "No cluster leader"}, plan.ErrUnavailable},

		{"dial refused", &url.Error{Op: "Put", Err: refused}, plan.ErrConnection},
		{"reset", &url.Error{Op: "Get", Err: fmt.Errorf("read: %w", syscall.ECONNRESET)}, plan.ErrConnection},
		{"eof", &url.Error{Op: "Put", Err: io.EOF}, plan.ErrConnection},
		{"body cut short", fmt.Errorf("decode: %w", io.ErrUnexpectedEOF), plan.ErrConnection},
		{"closed", net.ErrClosed, plan.ErrConnection},
		{"unreachable", &url.Error{Op: "Get", Err: syscall.EHOSTUNREACH}, plan.ErrConnection},
		{"server closed idle connection", &url.Error{Op: "Put", Err: errors.New("http: server closed idle connection")}, plan.ErrConnection},

		{"missing key", status(400, "Missing key name"), plan.ErrOther},
		{"too large", status(413, "Request body too large"), plan.ErrOther},
		{"txn rolled back", status(409, `{"Results":null,"Errors":[{"OpIndex":0,"What":"failed"}]}`), plan.ErrOther},
		{"permission denied", status(403, "Permission denied"), plan.ErrOther},
		{"unknown 500", status(500, "invalid session"), plan.ErrOther},
		{"no leader words in a 400", status(400, "No cluster leader"), plan.ErrOther},
		{"bad url", &url.Error{Op: "parse", Err: errors.New("invalid port")}, plan.ErrOther},
		{"plain error", errors.New("No cluster leader"), plan.ErrOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestCountRange(t *testing.T) {
	keys := []string{"scenario/kv-x", "scenario/kv/000001", "scenario/kv/000002", "scenario/kv/000010", "scenario/kv/000100", "scenario/kv0"}
	tests := []struct {
		start, end string
		limit      int
		prefix     string
		want       int
	}{
		{"scenario/kv/", "", 0, "scenario/kv/", 6}, // a prefix listing counts all it got
		{"scenario/kv/000002", "scenario/kv0", 0, "scenario/kv", 3},
		{"scenario/kv/000002", "scenario/kv0", 2, "scenario/kv", 2},
		{"scenario/kv/000001", "scenario/kv/000010", 0, "scenario/kv/0000", 2},
		{"scenario/kv/", "scenario/kv0", 0, "scenario/kv", 4},
		{"a", "b", 0, "", 0},
		{"scenario/kv/000200", "scenario/kv0", 0, "scenario/kv", 0},
	}
	for _, tt := range tests {
		if p := commonPrefix(tt.start, tt.end); tt.end != "" && p != tt.prefix {
			t.Errorf("commonPrefix(%q, %q) = %q, want %q", tt.start, tt.end, p, tt.prefix)
		}
		if got := countRange(keys, tt.start, tt.end, tt.limit); got != tt.want {
			t.Errorf("countRange(%q, %q, %d) = %d, want %d", tt.start, tt.end, tt.limit, got, tt.want)
		}
	}
}

// fakeConsul answers the KV and txn endpoints like a Consul server and
// records what it was asked.
type fakeConsul struct {
	*httptest.Server
	mu       sync.Mutex
	kv       map[string][]byte
	requests []string // "METHOD path?query"
	bodies   []string
	fail     string // answer every request with a 500 and this body
	hang     chan struct{}
}

func newFakeConsul(t *testing.T) *fakeConsul {
	f := &fakeConsul{kv: map[string][]byte{}, hang: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.hang)
		f.Close()
	})
	return f
}

func (f *fakeConsul) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	f.bodies = append(f.bodies, string(body))
	switch {
	case f.fail == "hang":
		f.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-f.hang:
		}
		f.mu.Lock()
		return
	case f.fail != "":
		http.Error(w, f.fail, http.StatusInternalServerError)
		return
	}
	key, isKV := strings.CutPrefix(r.URL.Path, "/v1/kv/")
	switch {
	case isKV && r.Method == http.MethodPut:
		f.kv[key] = body
		fmt.Fprint(w, "true")
	case isKV && r.Method == http.MethodDelete:
		delete(f.kv, key)
		fmt.Fprint(w, "true")
	case isKV && r.URL.Query().Has("keys"):
		var keys []string
		for k := range f.kv {
			if strings.HasPrefix(k, key) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(keys)
	case isKV && r.Method == http.MethodGet:
		v, ok := f.kv[key]
		if !ok {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode([]api.KVPair{{Key: key, Value: v, ModifyIndex: 7}})
	case r.URL.Path == "/v1/txn" && r.Method == http.MethodPut:
		var ops api.TxnOps
		if err := json.Unmarshal(body, &ops); err != nil || len(ops) != 1 || ops[0].KV == nil || ops[0].KV.Verb != api.KVSet {
			http.Error(w, "bad txn", http.StatusBadRequest)
			return
		}
		f.kv[ops[0].KV.Key] = ops[0].KV.Value
		json.NewEncoder(w).Encode(api.TxnResponse{Results: api.TxnResults{{KV: &api.KVPair{Key: ops[0].KV.Key}}}})
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusMethodNotAllowed)
	}
}

func (f *fakeConsul) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.requests
	f.requests = nil
	return r
}

func (f *fakeConsul) addr() string { return strings.TrimPrefix(f.URL, "http://") }

func TestClientOps(t *testing.T) {
	f := newFakeConsul(t)
	for _, tt := range []struct {
		consistency string
		query       string // on reads
	}{
		{"", ""},
		{ConsistencyDefault, ""},
		{ConsistencyConsistent, "consistent="},
		{ConsistencyStale, "stale="},
	} {
		t.Run("consistency "+tt.consistency, func(t *testing.T) {
			cli, err := NewClient(context.Background(), stores.ClientOptions{
				Endpoints: []stores.Endpoint{{Node: 1, ClientAddr: f.addr()}}, Consistency: tt.consistency, Timeout: time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			do := func(op stores.Op) stores.Result {
				t.Helper()
				res := cli.Do(context.Background(), op)
				if res.Err != nil {
					t.Fatalf("%s %q: %v", op.Kind, op.Key, res.Err)
				}
				return res
			}
			f.take()
			do(stores.Op{Kind: plan.OpPut, Key: "/scenario/kv/000001", Value: []byte("one")})
			do(stores.Op{Kind: plan.OpTxn, Key: "/scenario/kv/000002", Value: []byte("two")})
			do(stores.Op{Kind: plan.OpPut, Key: "/scenario/kv/000003", Value: []byte("three")})
			if res := do(stores.Op{Kind: plan.OpGet, Key: "/scenario/kv/000002"}); !res.Found || string(res.Value) != "two" {
				t.Errorf("get after txn: %+v", res)
			}
			if res := do(stores.Op{Kind: plan.OpRange, Key: "/scenario/kv/000002", End: "/scenario/kv0", Limit: 5}); res.Count != 2 {
				t.Errorf("range from 000002: %d keys, want 2", res.Count)
			}
			if res := do(stores.Op{Kind: plan.OpRange, Key: "/scenario/kv/", Limit: 1}); res.Count != 1 {
				t.Errorf("prefix range with limit 1: %d keys", res.Count)
			}
			do(stores.Op{Kind: plan.OpDelete, Key: "/scenario/kv/000002"})
			if res := do(stores.Op{Kind: plan.OpGet, Key: "/scenario/kv/000002"}); res.Found {
				t.Errorf("get after delete: %+v", res)
			}
			if res := do(stores.Op{Kind: plan.OpRange, Key: "/nothing/"}); res.Count != 0 {
				t.Errorf("empty range: %+v", res)
			}
			want := []string{
				"PUT /v1/kv/scenario/kv/000001?",
				"PUT /v1/txn?",
				"PUT /v1/kv/scenario/kv/000003?",
				"GET /v1/kv/scenario/kv/000002?" + tt.query,
				"GET /v1/kv/scenario/kv?" + joinQuery("keys=", tt.query),
				"GET /v1/kv/scenario/kv/?" + joinQuery("keys=", tt.query),
				"DELETE /v1/kv/scenario/kv/000002?",
				"GET /v1/kv/scenario/kv/000002?" + tt.query,
				"GET /v1/kv/nothing/?" + joinQuery("keys=", tt.query),
			}
			if got := f.take(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("requests:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
	if _, err := NewClient(context.Background(), stores.ClientOptions{Endpoints: []stores.Endpoint{{Node: 1, ClientAddr: f.addr()}}, Consistency: "linearizable"}); err == nil {
		t.Error("NewClient accepted etcd's consistency mode")
	}
}

// joinQuery joins query parameters the way url.Values.Encode sorts them.
func joinQuery(a, b string) string {
	if b == "" {
		return a
	}
	if b < a {
		a, b = b, a
	}
	return a + "&" + b
}

// Workload client i always uses connection i % Conns and server
// i % len(eps), through the client's own dialer.
func TestClientPinsConnections(t *testing.T) {
	a, b := newFakeConsul(t), newFakeConsul(t)
	var dials atomic.Int32
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	cli, err := NewClient(context.Background(), stores.ClientOptions{
		Endpoints: []stores.Endpoint{{Node: 1, ClientAddr: a.addr()}, {Node: 2, ClientAddr: b.addr()}},
		Conns:     3, Dial: dial, Timeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for client, want := range map[int]*fakeConsul{0: a, 1: b, 2: a, 3: b, 4: a, 5: b} {
		a.take()
		b.take()
		if res := cli.Do(context.Background(), stores.Op{Kind: plan.OpPut, Key: "k", Value: []byte("v"), Client: client}); res.Err != nil {
			t.Fatal(res.Err)
		}
		if got := want.take(); len(got) != 1 {
			t.Errorf("client %d: requests %q on the expected server", client, got)
		}
	}
	if dials.Load() == 0 {
		t.Error("the client's dialer was not used")
	}
	// Keep-alive: the same workload client reuses its connection.
	before := dials.Load()
	for range 5 {
		cli.Do(context.Background(), stores.Op{Kind: plan.OpGet, Key: "k", Client: 1})
	}
	if d := dials.Load() - before; d != 0 {
		t.Errorf("5 sequential gets dialed %d new connections", d)
	}
}

func TestClientErrors(t *testing.T) {
	f := newFakeConsul(t)
	cli, err := NewClient(context.Background(), stores.ClientOptions{Endpoints: []stores.Endpoint{{Node: 1, ClientAddr: f.addr()}}, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for _, tt := range []struct {
		fail string
		want string
	}{
		{"No cluster leader", plan.ErrUnavailable},
		{"rpc error making call: leadership lost while committing log", plan.ErrUnavailable},
		{"hang", plan.ErrTimeout},
	} {
		f.mu.Lock()
		f.fail = tt.fail
		f.mu.Unlock()
		for _, kind := range plan.AllOps {
			start := time.Now()
			res := cli.Do(context.Background(), stores.Op{Kind: kind, Key: "/k", End: "/l", Value: []byte("v")})
			if res.Err == nil || res.Class != tt.want {
				t.Errorf("%s against %q: %v (class %q), want %s", kind, tt.fail, res.Err, res.Class, tt.want)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("%s against %q took %s with a 300ms timeout", kind, tt.fail, took)
			}
		}
	}
	// The caller's deadline wins over the client's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if res := cli.Do(ctx, stores.Op{Kind: plan.OpGet, Key: "k"}); res.Class != plan.ErrTimeout || time.Since(start) > 250*time.Millisecond {
		t.Errorf("get with a 50ms deadline: %v (class %q) after %s", res.Err, res.Class, time.Since(start))
	}
	res := cli.Do(context.Background(), stores.Op{Kind: "scan", Key: "k"})
	if res.Err == nil || res.Class != plan.ErrOther {
		t.Errorf("unknown op: %v (class %q), want class other", res.Err, res.Class)
	}
}

// A client whose server is down moves to the next one after one failed op
// (never re-sending that op), and comes back once the backoff has passed.
func TestClientMovesOffADownServer(t *testing.T) {
	up := newFakeConsul(t)
	eps := []stores.Endpoint{{Node: 1, ClientAddr: freeAddr(t)}, {Node: 2, ClientAddr: up.addr()}}
	cli, err := NewClient(context.Background(), stores.ClientOptions{Endpoints: eps, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	put := stores.Op{Kind: plan.OpPut, Key: "k", Value: []byte("v"), Client: 0}
	if res := cli.Do(context.Background(), put); res.Class != plan.ErrConnection || !strings.Contains(res.Err.Error(), "via n1") {
		t.Fatalf("first put: %v (class %q), want a connection error via n1", res.Err, res.Class)
	}
	up.take()
	if res := cli.Do(context.Background(), put); res.Err != nil {
		t.Fatalf("second put: %v, want it served by n2", res.Err)
	}
	if got := up.take(); len(got) != 1 {
		t.Errorf("n2 got %q, want the one put", got)
	}
	time.Sleep(serverBackoff + 50*time.Millisecond)
	if res := cli.Do(context.Background(), put); res.Class != plan.ErrConnection || !strings.Contains(res.Err.Error(), "via n1") {
		t.Errorf("put after the backoff: %v (class %q), want n1 tried again", res.Err, res.Class)
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// With every server down a client can still be made, and an op fails at
// once as a connection error.
func TestClientWithNoServerUp(t *testing.T) {
	eps := []stores.Endpoint{{Node: 1, ClientAddr: freeAddr(t)}, {Node: 2, ClientAddr: freeAddr(t)}}
	cli, err := NewClient(context.Background(), stores.ClientOptions{Endpoints: eps, Conns: 2, Timeout: time.Second})
	if err != nil {
		t.Fatalf("NewClient with no server up: %v", err)
	}
	defer cli.Close()
	for i, kind := range plan.AllOps {
		// Client 1 starts on n2, then moves to n1, then, with both
		// backing off, keeps to its own.
		via := map[int]string{0: "via n2", 1: "via n1"}[i]
		if via == "" {
			via = "via n2"
		}
		res := cli.Do(context.Background(), stores.Op{Kind: kind, Key: "k", Value: []byte("v"), Client: 1})
		if res.Err == nil || res.Class != plan.ErrConnection || !strings.Contains(res.Err.Error(), via) {
			t.Errorf("%s: %v (class %q), want a connection error %s", kind, res.Err, res.Class, via)
		}
	}
	if _, err := NewClient(context.Background(), stores.ClientOptions{}); err == nil {
		t.Error("NewClient without endpoints")
	}
}
