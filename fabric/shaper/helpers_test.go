package shaper

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// memDev is an in-memory TUN: the test sends packets into in (what the
// host transmits), and every packet the router writes lands in out with
// the time of the Write.
type memDev struct {
	in  chan []byte
	out chan arrival

	closeOnce sync.Once
	closed    chan struct{}
	dlOnce    sync.Once
	expired   chan struct{} // closed by a deadline in the past

	// onWrite, if set, runs inside each Write before the frame lands,
	// as a TUN device's receiving stack runs inside the writer's write(2).
	onWrite func()
}

type arrival struct {
	at time.Time
	b  []byte
}

func newMemDev() *memDev {
	return &memDev{
		in:      make(chan []byte),
		out:     make(chan arrival, 8192),
		closed:  make(chan struct{}),
		expired: make(chan struct{}),
	}
}

func (d *memDev) Read(b []byte) (int, error) {
	select {
	case p := <-d.in:
		return copy(b, p), nil
	case <-d.closed:
		return 0, os.ErrClosed
	case <-d.expired:
		return 0, os.ErrDeadlineExceeded
	}
}

func (d *memDev) Write(b []byte) (int, error) {
	if d.onWrite != nil {
		d.onWrite()
	}
	d.out <- arrival{at: time.Now(), b: slices.Clone(b)}
	return len(b), nil
}

// SetReadDeadline supports what Run does: a deadline in the past (stop).
func (d *memDev) SetReadDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		d.dlOnce.Do(func() { close(d.expired) })
	}
	return nil
}

func (d *memDev) Close() error {
	d.closeOnce.Do(func() { close(d.closed) })
	return nil
}

// noDeadline hides memDev's SetReadDeadline.
type noDeadline struct{ io.ReadWriter }

func hostID(i int) int { return 100 + i } // ids differ from indices on purpose

func hostAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}) }

// ipv4 builds a packet of size bytes (at least 24) from host i to host j
// carrying seq after the header.
func ipv4(i, j int, size int, seq uint32) []byte {
	return ipv4To(hostAddr(i), hostAddr(j), size, seq)
}

func ipv4To(src, dst netip.Addr, size int, seq uint32) []byte {
	b := make([]byte, max(size, 24))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[8], b[9] = 64, 17 // TTL, UDP
	copy(b[12:16], src.AsSlice())
	copy(b[16:20], dst.AsSlice())
	binary.BigEndian.PutUint32(b[20:], seq)
	return b
}

func seqOf(b []byte) uint32 { return binary.BigEndian.Uint32(b[20:]) }

func srcOf(b []byte) netip.Addr { return netip.AddrFrom4([4]byte(b[12:16])) }

// testNet is a running Router over n memDevs.
type testNet struct {
	r    *Router
	devs []*memDev
	stop func() error
}

// startNet starts a router over n hosts; setup runs before Run.
func startNet(t testing.TB, n int, opts Options, setup func(*Router)) *testNet {
	t.Helper()
	return startNetDevs(t, n, opts, func(_ int, d *memDev) io.ReadWriter { return d }, setup)
}

// startNetDevs is startNet with host i's device dev(i, its memDev).
func startNetDevs(t testing.TB, n int, opts Options, dev func(int, *memDev) io.ReadWriter, setup func(*Router)) *testNet {
	t.Helper()
	r := New(opts)
	tn := &testNet{r: r}
	for i := range n {
		d := newMemDev()
		tn.devs = append(tn.devs, d)
		if err := r.AddHost(hostID(i), hostAddr(i), dev(i, d)); err != nil {
			t.Fatal(err)
		}
	}
	if setup != nil {
		setup(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	var err error
	tn.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Error("Run did not return within 5s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { tn.stop() })
	return tn
}

// send sends seqs [0, n) from host i to host j, paced at pps (0: as fast
// as the router reads), and returns each packet's send time.
func (tn *testNet) send(i, j, n, size int, pps float64) []time.Time {
	sent := make([]time.Time, n)
	start := time.Now()
	for k := range n {
		if pps > 0 {
			// Sleeps are coarse; sending what is due after each keeps
			// the average rate.
			if d := time.Until(start.Add(time.Duration(float64(k) / pps * 1e9))); d > 0 {
				time.Sleep(d)
			}
		}
		p := ipv4(i, j, size, uint32(k))
		sent[k] = time.Now()
		tn.devs[i].in <- p
	}
	return sent
}

// recv collects n packets written to host j, or fails after timeout.
func (tn *testNet) recv(t testing.TB, j, n int, timeout time.Duration) []arrival {
	t.Helper()
	got := make([]arrival, 0, n)
	deadline := time.After(timeout)
	for len(got) < n {
		select {
		case a := <-tn.devs[j].out:
			got = append(got, a)
		case <-deadline:
			t.Fatalf("host %d received %d of %d packets within %v", j, len(got), n, timeout)
		}
	}
	return got
}

// quiet fails if host j receives anything within d.
func (tn *testNet) quiet(t testing.TB, j int, d time.Duration) {
	t.Helper()
	select {
	case a := <-tn.devs[j].out:
		t.Fatalf("host %d received seq %d, want nothing", j, seqOf(a.b))
	case <-time.After(d):
	}
}

// delays pairs arrivals with send times by seq, checks they are in order,
// and returns the one-way delays.
func delays(t testing.TB, sent []time.Time, got []arrival) []time.Duration {
	t.Helper()
	out := make([]time.Duration, len(got))
	for k, a := range got {
		s := seqOf(a.b)
		if k > 0 && s <= seqOf(got[k-1].b) {
			t.Fatalf("reordered: seq %d after %d", s, seqOf(got[k-1].b))
		}
		out[k] = a.at.Sub(sent[s])
	}
	return out
}

// waitFor polls cond until it holds or fails after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(timeout); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

func (tn *testNet) pair(i, j int) PairStats { return tn.r.Stats()[[2]int{hostID(i), hostID(j)}] }

type summary struct {
	min, p50, p99, max, mean, std time.Duration
	// iqrStd is the standard deviation a normal distribution with this
	// interquartile range has: unlike std, a few packets a loaded machine
	// wakes late do not move it.
	iqrStd time.Duration
}

func summarize(ds []time.Duration) summary {
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum, sq float64
	for _, d := range s {
		sum += float64(d)
	}
	mean := sum / float64(len(s))
	for _, d := range s {
		sq += (float64(d) - mean) * (float64(d) - mean)
	}
	return summary{
		min: s[0], p50: s[len(s)/2], p99: s[len(s)*99/100], max: s[len(s)-1],
		mean: time.Duration(mean), std: time.Duration(math.Sqrt(sq / float64(len(s)-1))),
		iqrStd: time.Duration(float64(s[len(s)*3/4]-s[len(s)/4]) / 1.349),
	}
}
