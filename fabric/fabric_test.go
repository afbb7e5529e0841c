package fabric

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/fabric/shaper"
)

// childEnv makes the test binary build a fabric and wait to be killed, for
// the test of a SIGKILLed runner.
const childEnv = "SCENARIO_FABRIC_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		f, err := New(context.Background(), []HostSpec{{Name: "a"}, {Name: "b"}}, Options{RunID: "child", Bypass: true})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("ready", f.Host("a").ns, f.bridge)
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

func needFabric(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("needs network namespaces and TUN: %v", err)
	}
}

func newFabric(t testing.TB, names ...string) *Fabric {
	t.Helper()
	return newFabricWith(t, Options{}, names...)
}

// newFabricWith is newFabric with options (RunID and Seed are set here).
func newFabricWith(t testing.TB, opts Options, names ...string) *Fabric {
	t.Helper()
	needFabric(t)
	if opts.Kernel {
		if _, err := kernelAvailable(); err != nil {
			t.Skip(err)
		}
	}
	specs := make([]HostSpec, len(names))
	for i, n := range names {
		specs[i] = HostSpec{Name: n, Region: n}
	}
	opts.RunID, opts.Seed = "t"+fmt.Sprint(time.Now().UnixNano()%1e6), 1
	f, err := New(context.Background(), specs, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
		// Whatever a test sent through the shaper, it read what the
		// devices handed it and lost none of it.
		if rc := f.Reads(); rc.Lost != 0 {
			t.Errorf("the shaper lost frames it read: %+v", rc)
		}
		for _, h := range f.Hosts() {
			if _, err := os.Stat(h.NetnsPath()); !os.IsNotExist(err) {
				t.Errorf("namespace %s left behind", h.ns)
			}
		}
		for what, ns := range map[string]string{"switch": f.bridge, "packet": f.packets} {
			if ns == "" {
				continue // the fabric made no such namespace
			}
			if _, err := os.Stat(netnsPath(ns)); !os.IsNotExist(err) {
				t.Errorf("%s namespace %s left behind", what, ns)
			}
		}
	})
	return f
}

// both shapes a and b's link the same way in each direction.
func both(f *Fabric, a, b string, l shaper.Link) {
	f.SetLink(f.Host(a), f.Host(b), l)
	f.SetLink(f.Host(b), f.Host(a), l)
}

// listenIn listens inside h's namespace.
func listenIn(t testing.TB, h *Host, network string) (addr string, ln net.Listener, pc net.PacketConn) {
	t.Helper()
	err := inNetns(h.NetnsPath(), func() error {
		var err error
		if network == "udp" {
			pc, err = net.ListenPacket("udp", h.Addr.String()+":0")
			if err == nil {
				addr = pc.LocalAddr().String()
			}
			return err
		}
		ln, err = net.Listen("tcp", h.Addr.String()+":0")
		if err == nil {
			addr = ln.Addr().String()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ln != nil {
			ln.Close()
		}
		if pc != nil {
			pc.Close()
		}
	})
	return addr, ln, pc
}

// tcpRoundTrips measures n ping-pongs of a small message over one TCP
// connection from a to an echo server on b.
func tcpRoundTrips(t *testing.T, f *Fabric, a, b string, n int) []time.Duration {
	t.Helper()
	return dialEcho(t, f, a, b).roundTrips(t, n)
}

// echoConn is one TCP connection from a to an echo server on b, which
// TestBypass keeps open while the pair's path changes under it.
type echoConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialEcho(t testing.TB, f *Fabric, a, b string) *echoConn {
	t.Helper()
	addr, ln, _ := listenIn(t, f.Host(b), "tcp")
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := f.Host(a).Dial(ctx, addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, a, err)
	}
	t.Cleanup(func() { c.Close() })
	return &echoConn{c: c, r: bufio.NewReader(c)}
}

// roundTrips times n ping-pongs on the connection.
func (e *echoConn) roundTrips(t testing.TB, n int) []time.Duration {
	t.Helper()
	rtts := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		e.c.SetDeadline(start.Add(10 * time.Second))
		if _, err := fmt.Fprintf(e.c, "ping %d\n", i); err != nil {
			t.Fatal(err)
		}
		if _, err := e.r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts
}

// checkRoundTrip delays both directions between a and b by oneWay and
// checks that the median of n TCP round trips is within 5 ms above twice
// that.
func checkRoundTrip(t *testing.T, f *Fabric, a, b string, oneWay time.Duration, n int) {
	t.Helper()
	both(f, a, b, shaper.Link{Delay: oneWay})
	m := median(tcpRoundTrips(t, f, a, b, n))
	rtt := 2 * oneWay
	t.Logf("TCP round trip %s>%s with rtt %v: median %v", a, b, rtt, m)
	if m < rtt || m > rtt+5*time.Millisecond {
		t.Errorf("median round trip %v with rtt %v, want %v-%v", m, rtt, rtt, rtt+5*time.Millisecond)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// spread is the standard deviation of a normal distribution with the
// interquartile range of ds: a few round trips a loaded machine delays do
// not move it, as they would a plain standard deviation.
func spread(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return time.Duration(float64(s[len(s)*3/4]-s[len(s)/4]) / 1.349)
}

func TestRTT(t *testing.T) {
	f := newFabric(t, "a", "b")
	unshaped := median(tcpRoundTrips(t, f, "a", "b", 50))
	t.Logf("TCP round trip unshaped: median %v", unshaped)
	checkRoundTrip(t, f, "a", "b", 25*time.Millisecond, 50)
}

func TestJitter(t *testing.T) {
	f := newFabric(t, "a", "b")
	// A round-trip jitter of 10 ms, split over both directions as the
	// runner does (see JitterPerDirection).
	both(f, "a", "b", shaper.Link{Delay: 25 * time.Millisecond, Jitter: JitterPerDirection(10 * time.Millisecond)})
	rtts := tcpRoundTrips(t, f, "a", "b", 300)
	m, sd := median(rtts), spread(rtts)
	t.Logf("TCP round trip with rtt 50ms, jitter 10ms: median %v, spread (σ from the interquartile range) %v", m, sd)
	if sd < 7*time.Millisecond || sd > 13*time.Millisecond {
		t.Errorf("round-trip spread %v with jitter 10ms, want 7-13ms", sd)
	}
	if m < 48*time.Millisecond || m > 58*time.Millisecond {
		t.Errorf("median round trip %v, want about 50ms", m)
	}
}

func TestLoss(t *testing.T) {
	f := newFabric(t, "a", "b")
	f.SetLink(f.Host("a"), f.Host("b"), shaper.Link{Loss: 0.10})
	addr, _, pc := listenIn(t, f.Host("b"), "udp")
	var got atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	c, err := f.Host("a").DialNetwork(context.Background(), "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const sent = 2000
	for i := range sent {
		if _, err := c.Write([]byte(fmt.Sprintf("datagram %d", i))); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			time.Sleep(time.Millisecond) // stay below any socket buffer
		}
	}
	time.Sleep(200 * time.Millisecond)
	lost := float64(sent-got.Load()) / sent
	t.Logf("10%% loss: %d of %d datagrams arrived (%.1f%% lost)", got.Load(), sent, 100*lost)
	if lost < 0.08 || lost > 0.12 {
		t.Errorf("lost %.1f%% of %d datagrams with loss 10%%, want 8-12%%", 100*lost, sent)
	}
}

func TestBandwidth(t *testing.T) {
	f := newFabric(t, "a", "b")
	f.SetLink(f.Host("a"), f.Host("b"), shaper.Link{Rate: 10_000_000})
	addr, ln, _ := listenIn(t, f.Host("b"), "tcp")
	const measure = 3 * time.Second
	res := make(chan float64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			res <- 0
			return
		}
		defer c.Close()
		buf := make([]byte, 64<<10)
		// Skip the first second: slow start and the queue filling.
		var n int64
		start := time.Now()
		var from time.Time
		for {
			k, err := c.Read(buf)
			if err != nil {
				break
			}
			if time.Since(start) > time.Second {
				if from.IsZero() {
					from = time.Now()
				}
				n += int64(k)
			}
			if !from.IsZero() && time.Since(from) > measure {
				break
			}
		}
		res <- float64(n*8) / time.Since(from).Seconds()
	}()
	c, err := f.Host("a").Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	bps := <-res
	t.Logf("10 Mbit/s link: TCP goodput %.2f Mbit/s", bps/1e6)
	if bps < 9e6 || bps > 10.5e6 {
		t.Errorf("TCP goodput %.2f Mbit/s through a 10 Mbit/s link, want 9-10.5", bps/1e6)
	}
}

// TestPartition cuts and heals a link under a steady UDP flow, with every
// packet through the shaper and with the bypass (where the heal moves the
// pair back onto the kernel's path).
func TestPartition(t *testing.T) {
	for _, bypass := range []bool{false, true} {
		t.Run(map[bool]string{false: "shaper", true: "bypass"}[bypass], func(t *testing.T) {
			testPartition(t, newFabricWith(t, Options{Bypass: bypass}, "a", "b"))
		})
	}
}

func testPartition(t *testing.T, f *Fabric) {
	addr, _, pc := listenIn(t, f.Host("b"), "udp")
	// Each datagram carries its send time; the receiver keeps every one.
	arrivals := make(chan time.Time, 100000)
	go func() {
		defer close(arrivals)
		buf := make([]byte, 64)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n >= 8 {
				arrivals <- time.Unix(0, int64(binary.BigEndian.Uint64(buf)))
			}
		}
	}()
	c, err := f.Host("a").DialNetwork(context.Background(), "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := make(chan struct{})
	go func() {
		buf := make([]byte, 8)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			binary.BigEndian.PutUint64(buf, uint64(time.Now().UnixNano()))
			c.Write(buf)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	cut := time.Now()
	f.SetLink(f.Host("a"), f.Host("b"), shaper.Link{Down: true})
	time.Sleep(500 * time.Millisecond)
	healed := time.Now()
	f.SetLink(f.Host("a"), f.Host("b"), shaper.Link{})
	time.Sleep(300 * time.Millisecond)
	close(stop)
	time.Sleep(50 * time.Millisecond)
	pc.Close() // ends the receiver, which closes arrivals

	// A datagram sent just before the heal may be read by the shaper just
	// after it, and rightly pass: only those sent 5 ms or more before it
	// count as having crossed the partition.
	var lastBefore, firstAfter time.Time
	for sent := range arrivals {
		switch {
		case sent.Before(healed.Add(-5*time.Millisecond)) && sent.After(lastBefore):
			lastBefore = sent
		case !sent.Before(healed) && (firstAfter.IsZero() || sent.Before(firstAfter)):
			firstAfter = sent
		}
	}
	t.Logf("partition: last datagram through sent %v after the cut; first after the heal sent %v after it",
		lastBefore.Sub(cut), firstAfter.Sub(healed))
	if lastBefore.Sub(cut) > 100*time.Millisecond {
		t.Errorf("traffic still flowed %v after the partition started, want < 100ms", lastBefore.Sub(cut))
	}
	if firstAfter.IsZero() || firstAfter.Sub(healed) > 100*time.Millisecond {
		t.Errorf("traffic resumed %v after the partition ended, want < 100ms", firstAfter.Sub(healed))
	}
}

func TestReapKilledRun(t *testing.T) {
	needFabric(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready ") {
		cmd.Process.Kill()
		t.Fatalf("child: %q, %v", line, err)
	}
	ns, bridge, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "ready ")), " ")
	for _, n := range []string{ns, bridge} {
		if _, err := os.Stat(netnsDir + "/" + n); err != nil {
			t.Fatalf("child's namespace: %v", err)
		}
	}
	mine := newFabric(t, "live")
	cmd.Process.Kill()
	cmd.Wait()

	reaped, err := Reap(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{ns, bridge} {
		if !slices.Contains(reaped, n) {
			t.Errorf("Reap removed %v, not the killed child's %s", reaped, n)
		}
		if _, err := os.Stat(netnsDir + "/" + n); !os.IsNotExist(err) {
			t.Errorf("killed child's namespace %s still there", n)
		}
	}
	if _, err := os.Stat(mine.Host("live").NetnsPath()); err != nil {
		t.Errorf("Reap removed a live fabric's namespace: %v", err)
	}
}

// TestAttach makes a host of another process's namespace (as the docker
// provider does with a container's) and checks that it is shaped like the
// others and that Close leaves the namespace, and only it, behind.
func TestAttach(t *testing.T) {
	needFabric(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs util-linux's unshare")
	}
	cmd := exec.Command(unshare, "--net", "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	nsLink := func() string {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid))
		return l
	}
	self, _ := os.Readlink("/proc/self/ns/net")
	deadline := time.Now().Add(5 * time.Second)
	for nsLink() == self || nsLink() == "" {
		if time.Now().After(deadline) {
			t.Fatal("unshare did not enter a namespace of its own")
		}
		time.Sleep(10 * time.Millisecond)
	}
	own := nsLink()
	// The bypass turns reverse-path filtering off in every host's
	// namespace; an attached one gets its setting back at Close.
	rpFilter := func(set string) string {
		t.Helper()
		var v []byte
		err := inNetns(fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid), func() error {
			p := "/proc/sys/net/ipv4/conf/all/rp_filter"
			if set != "" {
				if err := os.WriteFile(p, []byte(set), 0); err != nil {
					return err
				}
			}
			var err error
			v, err = os.ReadFile(p)
			return err
		})
		if err != nil {
			t.Fatalf("rp_filter in the attached namespace: %v", err)
		}
		return strings.TrimSpace(string(v))
	}
	rpFilter("1")
	f, err := New(context.Background(), []HostSpec{{Name: "c", Region: "c", AttachPID: cmd.Process.Pid}, {Name: "b", Region: "b"}},
		Options{RunID: "t" + fmt.Sprint(time.Now().UnixNano()%1e6), Seed: 1, Bypass: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := rpFilter(""); v != "0" {
		t.Errorf("rp_filter %s in the attached namespace with the bypass, want 0", v)
	}
	checkRoundTrip(t, f, "c", "b", 10*time.Millisecond, 20)
	path := f.Host("c").NetnsPath()
	if err := f.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("name %s left behind", path)
	}
	if nsLink() != own {
		t.Fatalf("the attached process changed namespace")
	}
	if v := rpFilter(""); v != "1" {
		t.Errorf("rp_filter %s in the attached namespace after Close, want its own 1 back", v)
	}
	out, err := exec.Command("nsenter", "--net=/proc/"+fmt.Sprint(cmd.Process.Pid)+"/ns/net", "ip", "-o", "link").CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter: %v: %s", err, out)
	}
	for _, dev := range []string{tunName, bypassName} {
		if strings.Contains(string(out), dev) {
			t.Errorf("device %s left in the attached namespace: %s", dev, out)
		}
	}
}

// TestPartitionModes: a dropped cut is silent, so a dial across it waits
// out its timeout and an established connection's writes go unanswered;
// a rejected cut answers, so the dial is refused and the connection is
// reset at once, as behind a firewall's REJECT. The shaper's cuts must
// behave as the kernel's (iptables on veth links) do.
func TestPartitionModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"shaper", Options{}},
		{"bypass", Options{Bypass: true}},
		{"kernel", Options{Kernel: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { testPartitionModes(t, newFabricWith(t, tc.opts, "a", "b")) })
	}
}

func testPartitionModes(t *testing.T, f *Fabric) {
	addr, ln, _ := listenIn(t, f.Host("b"), "tcp")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c)
		}
	}()
	udpAddr, _, _ := listenIn(t, f.Host("b"), "udp")
	for _, tt := range []struct {
		name   string
		link   shaper.Link
		dial   error // nil: the dial times out
		reset  bool  // an established connection fails at once
		udpErr bool  // a connected UDP socket learns of the cut
	}{
		{name: "drop", link: shaper.Link{Down: true}},
		{name: "reject", link: shaper.Link{Down: true, Reject: true}, dial: syscall.ECONNREFUSED, reset: true, udpErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := f.Host("a"), f.Host("b")
			established, err := a.Dial(context.Background(), addr)
			if err != nil {
				t.Fatal(err)
			}
			defer established.Close()
			udp, err := a.DialNetwork(context.Background(), "udp", udpAddr)
			if err != nil {
				t.Fatal(err)
			}
			defer udp.Close()
			// Cut both ways, as a partition does: the answers of a
			// reject must still reach the sender.
			f.SetLink(a, b, tt.link)
			f.SetLink(b, a, tt.link)
			defer f.SetLink(b, a, shaper.Link{})
			defer f.SetLink(a, b, shaper.Link{})

			ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
			defer cancel()
			start := time.Now()
			c, err := a.Dial(ctx, addr)
			took := time.Since(start)
			if c != nil {
				c.Close()
			}
			switch {
			case tt.dial == nil && (err == nil || took < 600*time.Millisecond):
				t.Errorf("dial across a silent cut: %v after %v, want a timeout", err, took)
			case tt.dial != nil && (!errors.Is(err, tt.dial) || took > 300*time.Millisecond):
				t.Errorf("dial across a rejecting cut: %v after %v, want %v at once", err, took, tt.dial)
			}

			// Writes on the established connection: a reset ends it; a
			// silent cut leaves it waiting on retransmissions (the kernel
			// gives up after ~15 minutes), however long data stays
			// unacknowledged: nothing in the shaper fails it early.
			writeFor := time.Second
			if !tt.reset {
				writeFor = 4 * time.Second
			}
			established.SetDeadline(time.Now().Add(writeFor))
			var werr error
			for deadline := time.Now().Add(writeFor - 100*time.Millisecond); time.Now().Before(deadline); {
				if _, werr = established.Write(make([]byte, 1000)); werr != nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := werr != nil && !errors.Is(werr, os.ErrDeadlineExceeded); got != tt.reset {
				t.Errorf("established connection: write error %v, want a reset: %v", werr, tt.reset)
			}

			// A connected UDP socket hears of the port unreachable on its
			// next send or receive.
			var uerr error
			for range 10 {
				if _, uerr = udp.Write([]byte("x")); uerr != nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := uerr != nil; got != tt.udpErr {
				t.Errorf("UDP: %v, want an error: %v", uerr, tt.udpErr)
			}
			if tt.reset && f.kernel == nil {
				st := f.Stats()["a>b"]
				if st.Rejected == 0 {
					t.Errorf("no packet counted as rejected: %+v", st)
				}
			}
		})
	}
}
