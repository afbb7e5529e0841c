package netcut

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// pair is two namespaces joined by a veth pair: a (10.231.0.1) and b
// (10.231.0.2).
type pair struct{ a, b string }

func newPair(t *testing.T) pair {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netcut's tests make network namespaces: they need root")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("netcut's tests need ip (apt-get install iproute2)")
	}
	p := pair{a: fmt.Sprintf("scn-netcut-a-%d", os.Getpid()), b: fmt.Sprintf("scn-netcut-b-%d", os.Getpid())}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("netns", "add", p.a)
	t.Cleanup(func() { _ = exec.Command(ip, "netns", "delete", p.a).Run() })
	run("netns", "add", p.b)
	t.Cleanup(func() { _ = exec.Command(ip, "netns", "delete", p.b).Run() })
	run("-n", p.a, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", p.b)
	for ns, addr := range map[string]string{p.a: "10.231.0.1/24", p.b: "10.231.0.2/24"} {
		run("-n", ns, "addr", "add", addr, "dev", "eth0")
		run("-n", ns, "link", "set", "eth0", "up")
		run("-n", ns, "link", "set", "lo", "up")
	}
	return p
}

// in runs fn with this goroutine's thread in namespace ns; sockets made
// there stay in it.
func in(t *testing.T, ns string, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	target, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			panic(err) // a thread left in another namespace must not be reused
		}
	}()
	fn()
}

// nsOpt opens ns for an nftables connection.
func nsOpt(t *testing.T, ns string) nftables.ConnOption {
	t.Helper()
	f, err := os.Open(filepath.Join("/run/netns", ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return nftables.WithNetNSFd(int(f.Fd()))
}

var (
	addrA = netip.MustParseAddr("10.231.0.1")
	addrB = netip.MustParseAddr("10.231.0.2")
)

// outcome of a TCP connect from a to b's listener.
const (
	connected = "connected"
	refused   = "refused"
	silent    = "silent"
)

func connect(t *testing.T, p pair, port int) string {
	t.Helper()
	var conn net.Conn
	var err error
	in(t, p.a, func() {
		d := net.Dialer{Timeout: 700 * time.Millisecond}
		conn, err = d.DialContext(context.Background(), "tcp", fmt.Sprintf("%s:%d", addrB, port))
	})
	switch {
	case err == nil:
		conn.Close()
		return connected
	case errors.Is(err, syscall.ECONNREFUSED):
		return refused
	case errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err):
		return silent
	}
	t.Fatalf("connect: %v", err)
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestApplyCutsReal(t *testing.T) {
	p := newPair(t)
	var l net.Listener
	in(t, p.b, func() {
		var err error
		if l, err = net.Listen("tcp", addrB.String()+":0"); err != nil {
			t.Fatal(err)
		}
	})
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	optA, optB := nsOpt(t, p.a), nsOpt(t, p.b)

	for _, tc := range []struct {
		name string
		a, b Rules
		want string
	}{
		{"no cut", Rules{}, Rules{}, connected},
		{"b drops a's input", Rules{}, Rules{In: []Cut{{Addr: addrA}}}, silent},
		{"b rejects a's input", Rules{}, Rules{In: []Cut{{Addr: addrA, Reject: true}}}, refused},
		// b's reset crosses a's own rejecting cut: the exception.
		{"both reject", Rules{In: []Cut{{Addr: addrB, Reject: true}}}, Rules{In: []Cut{{Addr: addrA, Reject: true}}}, refused},
		{"a drops its output to b", Rules{Out: []Cut{{Addr: addrB}}}, Rules{}, silent},
		{"a rejects its output to b", Rules{Out: []Cut{{Addr: addrB, Reject: true}}}, Rules{}, refused},
		{"b drops its output to a", Rules{}, Rules{Out: []Cut{{Addr: addrA}}}, silent},
		{"a cut from another peer only", Rules{In: []Cut{{Addr: netip.MustParseAddr("10.231.0.9")}}}, Rules{}, connected},
		{"healed", Rules{}, Rules{}, connected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Apply(tc.a, optA); err != nil {
				t.Fatal(err)
			}
			if err := Apply(tc.b, optB); err != nil {
				t.Fatal(err)
			}
			if got := connect(t, p, port); got != tc.want {
				t.Errorf("connect a -> b: %s, want %s", got, tc.want)
			}
		})
	}

	for _, opt := range []nftables.ConnOption{optA, optB} {
		if err := Remove(opt); err != nil {
			t.Fatal(err)
		}
		conn, err := nftables.New(opt)
		if err != nil {
			t.Fatal(err)
		}
		tables, err := conn.ListTables()
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			if tb.Name == Table {
				t.Errorf("table %s still there after Remove", Table)
			}
		}
		if err := Remove(opt); err != nil {
			t.Errorf("second Remove: %v", err)
		}
	}
}

func TestApplyRefusesIPv6(t *testing.T) {
	err := Apply(Rules{In: []Cut{{Addr: netip.MustParseAddr("fd00::1")}}})
	if err == nil {
		t.Fatal("an IPv6 peer was accepted")
	}
}
