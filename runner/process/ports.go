package process

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// portFloor is the lowest port AllocatePorts hands out: well above the
// registered services most machines run.
const portFloor = 10000

// AllocatePorts returns n distinct ports that are free on 127.0.0.1 for both
// TCP and UDP (Consul gossips over both), and holds them for this process
// until release is called: no other caller of AllocatePorts, in this process
// or another, gets one of them meanwhile, whether or not the node given it
// has bound it yet. A process that dies releases its ports with it.
//
// Choosing by binding and closing is not enough on its own: two callers can
// both find a port free that neither node has bound yet, and the node that
// binds it second dies. A ZooKeeper node binds its election port seconds
// after it starts, and died so (exit 14) while a Consul cluster started
// beside it; make test runs the store drivers' tests and the command's two
// packages at a time, each with its own clusters.
//
// Against other programs, ports are drawn at random from below the kernel's
// ephemeral range (net.ipv4.ip_local_port_range): the kernel never gives
// those out as the local port of a connect() or of a bind to port 0, so
// only a program that asks for that exact port can take one before the node
// binds it. In the ephemeral range, any outgoing connection could, the
// cluster's own peers dialing each other while later nodes start included.
// When no such range is left, it falls back to ports the kernel picks. A
// node that still loses the race dies with an error that matches
// ErrAddrInUse; the caller allocates again, calls SetSpec and restarts it.
func AllocatePorts(n int) (ports []int, release func(), err error) {
	held, err := allocatePorts(n)
	if err != nil {
		return nil, nil, err
	}
	ports = make([]int, 0, n)
	for p := range held {
		ports = append(ports, p)
	}
	return ports, func() { closeAll(held) }, nil
}

// AllocatePorts is the package-level AllocatePorts, with the ports held
// until the run closes.
func (r *Run) AllocatePorts(n int) ([]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	held, err := allocatePorts(n)
	if err != nil {
		return nil, err
	}
	ports := make([]int, 0, n)
	for p, c := range held {
		r.ports[p] = c
		ports = append(ports, p)
	}
	return ports, nil
}

// releasePorts gives the run's ports back, once its nodes have ended (a
// node left running still holds its ports, which no bind can then take).
func (r *Run) releasePorts() {
	r.mu.Lock()
	defer r.mu.Unlock()
	closeAll(r.ports)
	clear(r.ports)
}

func closeAll(held map[int]io.Closer) {
	for _, c := range held {
		c.Close()
	}
}

// allocatePorts returns n ports, each with the reservation that holds it.
func allocatePorts(n int) (map[int]io.Closer, error) {
	if n < 0 {
		return nil, fmt.Errorf("allocate %d ports: negative count", n)
	}
	// The sockets that show a port free stay open until every port is
	// chosen, so that a port the kernel picks is not picked twice.
	var probes []io.Closer
	defer func() {
		for _, c := range probes {
			c.Close()
		}
	}()
	held := make(map[int]io.Closer, n)
	var lastErr error
	take := func(p int, tcp net.Listener) {
		if tcp != nil {
			probes = append(probes, tcp)
		}
		if _, dup := held[p]; dup {
			return
		}
		res, err := reservePort(p)
		if err != nil {
			if !errors.Is(err, syscall.EADDRINUSE) {
				lastErr = err
			}
			return
		}
		cs, free := bindFree(p, tcp != nil)
		probes = append(probes, cs...)
		if !free {
			res.Close()
			return
		}
		held[p] = res
	}

	lo := ephemeralLow()
	if span := lo - portFloor; span >= 1000 {
		for tries := 0; len(held) < n && tries < 100*n; tries++ {
			take(portFloor+rand.IntN(span), nil)
		}
	}
	for tries := 0; len(held) < n && tries < 100*n; tries++ {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			closeAll(held)
			return nil, fmt.Errorf("allocate ports: %w", err)
		}
		take(l.Addr().(*net.TCPAddr).Port, l)
	}
	if len(held) < n {
		closeAll(held)
		err := fmt.Errorf("allocate ports: found %d free loopback ports of %d", len(held), n)
		if lastErr != nil {
			err = fmt.Errorf("%w (last reservation: %w)", err, lastErr)
		}
		return nil, err
	}
	return held, nil
}

// bindFree binds TCP (unless haveTCP: a listener on p is open already) and
// UDP on 127.0.0.1:p, and reports whether both are free, with the sockets
// to close.
func bindFree(p int, haveTCP bool) ([]io.Closer, bool) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	var cs []io.Closer
	if !haveTCP {
		l, err := net.Listen("tcp4", addr)
		if err != nil {
			return nil, false
		}
		cs = append(cs, l)
	}
	u, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return cs, false
	}
	return append(cs, u), true
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
