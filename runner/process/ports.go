package process

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// portFloor is the lowest port AllocatePorts hands out: well above the
// registered services most machines run.
const portFloor = 10000

// handedOut holds the ports that the live Runs of this process have handed
// out. Ports belong to the machine, not to a Run: two runs in one process (a
// test's cases side by side) each choosing by binding and closing could
// otherwise both hand out a port that neither node has bound yet, and the
// node that binds it second dies. A ZooKeeper node binds its election port
// seconds after it starts, and died so (exit 14) while a Consul cluster
// started beside it, past the start's retry on a lost port. Runs of other
// processes can still race us; see AllocatePorts.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// AllocatePorts returns n distinct ports that are free on 127.0.0.1 for both
// TCP and UDP (Consul gossips over both). Each is bound while the others are
// chosen, so the n never collide with one another.
//
// They are closed on return, and something else may take one before the
// node binds it. To make that unlikely, ports are drawn at random from below
// the kernel's ephemeral range (net.ipv4.ip_local_port_range): the kernel
// never gives those out as the local port of a connect() or of a bind to
// port 0, so only a program that asks for that exact port can race us. In
// the ephemeral range, any outgoing connection could, the cluster's own
// peers dialing each other while later nodes start included. When no such
// range is left, it falls back to ports the kernel picks. A node that still
// loses the race dies with an error that matches ErrAddrInUse; the caller
// allocates again, calls SetSpec and restarts it.
//
// It leaves out the ports a live Run of this process has handed out, but
// does not hold the ports it returns: its callers (a store's tests) run one
// cluster at a time.
func AllocatePorts(n int) ([]int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	return allocatePorts(n, handedOut.ports)
}

// AllocatePorts is the package-level AllocatePorts, except that it never
// returns a port it returned before in this run, nor one another live Run
// of this process returned, whether or not the node given it has bound it
// yet. Close gives them back.
func (r *Run) AllocatePorts(n int) ([]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	handedOut.Lock()
	defer handedOut.Unlock()
	// The run's own ports are among the handed out until it closes.
	ports, err := allocatePorts(n, handedOut.ports)
	for _, p := range ports {
		r.ports[p] = true
		handedOut.ports[p] = true
	}
	return ports, err
}

// releasePorts gives the run's ports back to the process, once its nodes
// have ended (a node left running still holds its ports, which no bind can
// then take).
func (r *Run) releasePorts() {
	r.mu.Lock()
	defer r.mu.Unlock()
	handedOut.Lock()
	defer handedOut.Unlock()
	for p := range r.ports {
		delete(handedOut.ports, p)
	}
}

func allocatePorts(n int, exclude map[int]bool) ([]int, error) {
	if n < 0 {
		return nil, fmt.Errorf("allocate %d ports: negative count", n)
	}
	var held []io.Closer
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	ports := make([]int, 0, n)
	taken := func(p int) bool { return exclude[p] || slices.Contains(ports, p) }
	grab := func(p int) bool {
		cs, ok := bindBoth(p)
		if ok {
			held = append(held, cs...)
			ports = append(ports, p)
		}
		return ok
	}

	lo := ephemeralLow()
	if span := lo - portFloor; span >= 1000 {
		for tries := 0; len(ports) < n && tries < 100*n; tries++ {
			if p := portFloor + rand.IntN(span); !taken(p) {
				grab(p)
			}
		}
	}
	for tries := 0; len(ports) < n && tries < 100*n; tries++ {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("allocate ports: %w", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		held = append(held, l)
		if !taken(p) {
			// The TCP listener is held already; only UDP is left to check.
			if u, err := net.ListenPacket("udp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				held = append(held, u)
				ports = append(ports, p)
			}
		}
	}
	if len(ports) < n {
		return nil, fmt.Errorf("allocate ports: found %d free loopback ports of %d", len(ports), n)
	}
	return ports, nil
}

// bindBoth binds TCP and UDP on 127.0.0.1:p and returns the sockets.
func bindBoth(p int) ([]io.Closer, bool) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		return nil, false
	}
	u, err := net.ListenPacket("udp4", addr)
	if err != nil {
		l.Close()
		return nil, false
	}
	return []io.Closer{l, u}, true
}

// ephemeralLow is the first port of the kernel's ephemeral range; 32768, the
// Linux default, if it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return lo
}
