package zookeeper

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},

		{"context deadline", context.DeadlineExceeded, plan.ErrTimeout},
		{"wrapped context deadline", fmt.Errorf("zookeeper put: %w", context.DeadlineExceeded), plan.ErrTimeout},
		{"canceled", context.Canceled, plan.ErrTimeout},
		{"i/o deadline", &net.OpError{Op: "write", Err: os.ErrDeadlineExceeded}, plan.ErrTimeout},
		{"server operation timeout", fmt.Errorf("zookeeper put: %w", fmt.Errorf("unknown error: %v", -7)), plan.ErrTimeout},
		{"server request timeout", fmt.Errorf("unknown error: %v", -122), plan.ErrTimeout},

		{"connection closed", zk.ErrConnectionClosed, plan.ErrConnection},
		{"wrapped connection closed", fmt.Errorf("zookeeper get: sync: %w", zk.ErrConnectionClosed), plan.ErrConnection},
		{"no server", fmt.Errorf("zookeeper put: %w", zk.ErrNoServer), plan.ErrConnection},
		{"closing", zk.ErrClosing, plan.ErrConnection},
		{"server connection loss", fmt.Errorf("unknown error: %v", -4), plan.ErrConnection},
		{"dial refused", refused, plan.ErrConnection},
		{"reset", fmt.Errorf("write: %w", syscall.ECONNRESET), plan.ErrConnection},
		{"broken pipe", &net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)}, plan.ErrConnection},
		{"eof", io.EOF, plan.ErrConnection},
		{"unexpected eof", io.ErrUnexpectedEOF, plan.ErrConnection},
		{"closed", net.ErrClosed, plan.ErrConnection},

		{"session expired", fmt.Errorf("zookeeper put: %w", zk.ErrSessionExpired), plan.ErrUnavailable},
		{"session moved", zk.ErrSessionMoved, plan.ErrUnavailable},
		{"not read-only", fmt.Errorf("zookeeper put: %w", fmt.Errorf("unknown error: %v", -119)), plan.ErrUnavailable},
		{"throttled", fmt.Errorf("unknown error: %v", -127), plan.ErrUnavailable},
		{"unknown session", fmt.Errorf("unknown error: %v", -12), plan.ErrUnavailable},

		{"bad version", zk.ErrBadVersion, plan.ErrOther},
		{"no auth", zk.ErrNoAuth, plan.ErrOther},
		{"node exists", zk.ErrNodeExists, plan.ErrOther},
		{"invalid path", zk.ErrInvalidPath, plan.ErrOther},
		{"other server code", fmt.Errorf("unknown error: %v", -2), plan.ErrOther},
		{"malformed code", errors.New("unknown error: soon"), plan.ErrOther},
		{"plain error", errors.New("connection closed"), plan.ErrOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestZnodeName(t *testing.T) {
	tests := []struct{ key, name string }{
		{"", "k"},
		{".", "k."},
		{"..", "k.."},
		{"/scenario/kv/000123", "k%2Fscenario%2Fkv%2F000123"},
		{"50%", "k50%25"},
		{"%2F", "k%252F"},
		{"a b~", "ka b~"},
		{"tab\tnul\x00del\x7f", "ktab%09nul%00del%7F"},
		{"ü", "k%C3%BC"},
		{"\xff", "k%FF"},
	}
	for _, tt := range tests {
		if got := znodeName(tt.key); got != tt.name {
			t.Errorf("znodeName(%q) = %q, want %q", tt.key, got, tt.name)
		}
		if got, ok := keyOf(tt.name); !ok || got != tt.key {
			t.Errorf("keyOf(%q) = %q, %v; want %q", tt.name, got, ok, tt.key)
		}
	}
	// Names znodeName never makes.
	for _, name := range []string{"", "x", "k%", "k%2", "k%2f", "k%G0", "k%41", "k/", "kü", "k\x00", "k%%"} {
		if key, ok := keyOf(name); ok {
			t.Errorf("keyOf(%q) = %q, want it refused", name, key)
		}
	}
}

func TestCountRange(t *testing.T) {
	var names []string
	for _, k := range []string{"/kv/a", "/kv/b", "/kv/b/1", "/kv/c", "/kw/a", "/kv%", "/kv"} {
		names = append(names, znodeName(k))
	}
	names = append(names, "foreign", "k%zz")
	tests := []struct {
		key, end string
		limit    int
		want     int
	}{
		{"/kv/", "", 0, 4},
		{"/kv/", "", 2, 2},
		{"/kv", "", 0, 6},
		{"/kv/b", "", 0, 2},
		{"", "", 0, 7},
		{"/nothing", "", 0, 0},
		{"/kv/a", "/kv/c", 0, 3},
		{"/kv/a", "/kv/c", 1, 1},
		{"/kv/", "/kv0", 0, 4}, // '/' < '0'
		{"/kv", "/kw", 0, 6},   // bounds compare keys: "/kv%" < "/kv/" < "/kw"
		{"/kv/c", "/kv/a", 0, 0},
	}
	for _, tt := range tests {
		if got := countRange(names, tt.key, tt.end, tt.limit); got != tt.want {
			t.Errorf("countRange(%q, %q, limit %d) = %d, want %d", tt.key, tt.end, tt.limit, got, tt.want)
		}
	}
}

func TestOrderedHosts(t *testing.T) {
	h := &orderedHosts{servers: []string{"a:1", "b:1", "c:1"}}
	if err := h.Init([]string{"c:1", "a:1", "b:1"}); err != nil {
		t.Fatal(err)
	}
	type next struct {
		server string
		retry  bool
	}
	var got []next
	step := func() {
		s, r := h.Next()
		got = append(got, next{s, r})
	}
	// Every server once, then retryStart when the cycle comes round
	// without a connection.
	step()
	step()
	step()
	step()
	// Connected to a: the next full cycle ends at a again.
	h.Connected()
	step()
	step()
	step()
	want := []next{{"a:1", false}, {"b:1", false}, {"c:1", false}, {"a:1", true}, {"b:1", false}, {"c:1", false}, {"a:1", true}}
	if !slices.Equal(got, want) {
		t.Errorf("Next sequence %v, want %v", got, want)
	}
	if h.Len() != 3 {
		t.Errorf("Len = %d", h.Len())
	}
	if err := (&orderedHosts{}).Init(nil); err == nil {
		t.Error("Init with no servers succeeded")
	}
}

// recordingConn is a net.Conn that reads from r and records deadlines.
type recordingConn struct {
	net.Conn
	r         io.Reader
	mu        sync.Mutex
	deadlines []time.Time
}

func (c *recordingConn) Read(p []byte) (int, error) { return c.r.Read(p) }
func (c *recordingConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadlines = append(c.deadlines, t)
	return nil
}

func TestHandshakeConn(t *testing.T) {
	// A connect response of 5 bytes, then a reply packet, arriving in
	// pieces that split the length prefix.
	var stream bytes.Buffer
	binary.Write(&stream, binary.BigEndian, uint32(5))
	stream.WriteString("hello")
	binary.Write(&stream, binary.BigEndian, uint32(3))
	stream.WriteString("abc")
	rc := &recordingConn{r: &stream}
	deadline := time.Now().Add(time.Hour)
	c := &handshakeConn{Conn: rc, deadline: deadline}

	late := deadline.Add(time.Hour)
	c.SetReadDeadline(late)        // go-zookeeper: ten read timeouts
	read(t, c, 2)                  // half the length prefix
	c.SetReadDeadline(time.Time{}) // go-zookeeper clears it before the body
	read(t, c, 2)
	read(t, c, 4)
	if c.done.Load() {
		t.Fatal("handshake done before the whole response was read")
	}
	read(t, c, 1)
	if !c.done.Load() {
		t.Fatal("handshake not done after the whole response")
	}
	c.SetReadDeadline(late)
	c.SetReadDeadline(time.Time{})
	read(t, c, 7)
	want := []time.Time{deadline, deadline, late, {}}
	if !slices.EqualFunc(rc.deadlines, want, time.Time.Equal) {
		t.Errorf("deadlines %v, want %v", rc.deadlines, want)
	}
	// A deadline sooner than the handshake's is kept.
	c2 := &handshakeConn{Conn: &recordingConn{r: &bytes.Buffer{}}, deadline: deadline}
	soon := time.Now().Add(time.Second)
	if got := c2.clamp(soon); !got.Equal(soon) {
		t.Errorf("clamp(soon) = %v, want %v", got, soon)
	}
}

func read(t *testing.T, r io.Reader, n int) {
	t.Helper()
	if _, err := io.ReadFull(r, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
}

// silentServer accepts connections and never answers: a paused server,
// from a client's side.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
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

// With no server answering, a client can still be made, and an op fails
// once its own timeout has passed, although go-zookeeper calls take no
// context; the dialer given is used.
func TestClientWithNoServerAnswering(t *testing.T) {
	eps := []stores.Endpoint{{Node: 1, ClientAddr: silentServer(t)}, {Node: 2, ClientAddr: freeAddr(t)}}
	var mu sync.Mutex
	dialed := map[string]int{}
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		mu.Lock()
		dialed[addr]++
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	cli, err := NewClient(context.Background(), stores.ClientOptions{Endpoints: eps, Conns: 2, Timeout: 300 * time.Millisecond, Dial: dial})
	if err != nil {
		t.Fatalf("NewClient with no server answering: %v", err)
	}
	for _, kind := range []string{plan.OpPut, plan.OpGet, plan.OpDelete, plan.OpRange, plan.OpTxn} {
		start := time.Now()
		res := cli.Do(context.Background(), stores.Op{Kind: kind, Key: "k", Value: []byte("v"), Client: 1})
		took := time.Since(start)
		if res.Err == nil || res.Class != plan.ErrTimeout && res.Class != plan.ErrConnection {
			t.Errorf("%s: %v (class %q), want a timeout or a connection error", kind, res.Err, res.Class)
		}
		if took > time.Second {
			t.Errorf("%s took %s with a 300ms timeout", kind, took)
		}
	}
	// The caller's deadline wins over the client's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if res := cli.Do(ctx, stores.Op{Kind: plan.OpGet, Key: "k"}); res.Class != plan.ErrTimeout || time.Since(start) > 250*time.Millisecond {
		t.Errorf("get with a 50ms context: %v (class %q) after %s", res.Err, res.Class, time.Since(start))
	}
	res := cli.Do(context.Background(), stores.Op{Kind: "scan", Key: "k"})
	if res.Err == nil || res.Class != plan.ErrOther {
		t.Errorf("unknown op: %v (class %q), want class other", res.Err, res.Class)
	}

	start = time.Now()
	if err := cli.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %s", took)
	}
	if res := cli.Do(context.Background(), stores.Op{Kind: plan.OpGet, Key: "k"}); res.Class != plan.ErrConnection {
		t.Errorf("get after Close: %v (class %q), want a connection error", res.Err, res.Class)
	}
	mu.Lock()
	defer mu.Unlock()
	if dialed[eps[0].ClientAddr] == 0 {
		t.Errorf("the client's dialer was not used: %v", dialed)
	}
}

func TestNewClientRejects(t *testing.T) {
	if _, err := NewClient(context.Background(), stores.ClientOptions{}); err == nil {
		t.Error("no endpoints accepted")
	}
	eps := []stores.Endpoint{{Node: 1, ClientAddr: "127.0.0.1:1"}}
	if _, err := NewClient(context.Background(), stores.ClientOptions{Endpoints: eps, Consistency: "linearizable"}); err == nil || !strings.Contains(err.Error(), `"local" or "sync"`) {
		t.Errorf("consistency \"linearizable\": %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewClient(ctx, stores.ClientOptions{Endpoints: eps}); !errors.Is(err, context.Canceled) {
		t.Errorf("NewClient with a cancelled context: %v", err)
	}
}
