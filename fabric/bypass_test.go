package fabric

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/fabric/shaper"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// routesTo lists the routes in h's namespace to exactly dst's address.
func routesTo(t *testing.T, f *Fabric, h, dst string) string {
	t.Helper()
	out, err := exec.Command(f.ip, "-n", f.Host(h).ns, "-o", "route", "show", "exact", f.Host(dst).Addr.String()+"/32").CombinedOutput()
	if err != nil {
		t.Fatalf("ip route: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// waitRoute waits until from's route to to goes through the TUN device,
// or does not, as viaShaper says, and returns when it changed.
func waitRoute(t *testing.T, f *Fabric, from, to string, viaShaper bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := routesTo(t, f, from, to)
		if strings.Contains(r, tunName) == viaShaper {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's route to %s is %q after 5 s, want one through %s: %v", from, to, r, tunName, viaShaper)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBypass: with the bypass, a pair whose link shapes nothing goes
// through the kernel (the shaper never sees its packets), a pair whose
// link shapes something goes through the shaper and is shaped, each
// direction on its own, and one connection lives on while its pair moves
// from one path to the other and back.
func TestBypass(t *testing.T) {
	f := newFabricWith(t, Options{Bypass: true}, "a", "b", "c")
	e := dialEcho(t, f, "a", "b")
	forwarded := func(pair string) uint64 { return f.Stats()[pair].Forwarded }

	type step struct {
		name           string
		ab, ba         shaper.Link
		minRTT, maxRTT time.Duration
		shaperAB       bool // a>b's packets go through the shaper
		shaperBA       bool
	}
	delay := func(d time.Duration) shaper.Link { return shaper.Link{Delay: d} }
	for _, s := range []step{
		{name: "unshaped", maxRTT: 5 * time.Millisecond},
		{name: "both ways", ab: delay(10 * time.Millisecond), ba: delay(10 * time.Millisecond), minRTT: 20 * time.Millisecond, maxRTT: 25 * time.Millisecond, shaperAB: true, shaperBA: true},
		// The answers come back on the bridge, to a namespace whose own
		// route to the sender is the TUN device's: reverse-path
		// filtering would drop them.
		{name: "one way", ab: delay(15 * time.Millisecond), minRTT: 15 * time.Millisecond, maxRTT: 20 * time.Millisecond, shaperAB: true},
		{name: "other way", ba: delay(15 * time.Millisecond), minRTT: 15 * time.Millisecond, maxRTT: 20 * time.Millisecond, shaperBA: true},
		{name: "unshaped again", maxRTT: 5 * time.Millisecond},
	} {
		f.SetLink(f.Host("a"), f.Host("b"), s.ab)
		f.SetLink(f.Host("b"), f.Host("a"), s.ba)
		// A pair leaves the shaper some milliseconds after its link is
		// untouched (leaveShaper).
		waitRoute(t, f, "a", "b", s.shaperAB)
		waitRoute(t, f, "b", "a", s.shaperBA)
		e.roundTrips(t, 3) // what was in flight on the old path
		beforeAB, beforeBA := forwarded("a>b"), forwarded("b>a")
		m := median(e.roundTrips(t, 20))
		t.Logf("%s: median round trip %v; through the shaper a>b %d packets, b>a %d", s.name, m, forwarded("a>b")-beforeAB, forwarded("b>a")-beforeBA)
		if m < s.minRTT || m > s.maxRTT {
			t.Errorf("%s: median round trip %v, want %v-%v", s.name, m, s.minRTT, s.maxRTT)
		}
		for _, d := range []struct {
			pair      string
			before    uint64
			viaShaper bool
			from, to  string
		}{{"a>b", beforeAB, s.shaperAB, "a", "b"}, {"b>a", beforeBA, s.shaperBA, "b", "a"}} {
			n := forwarded(d.pair) - d.before
			if d.viaShaper && n < 20 || !d.viaShaper && n != 0 {
				t.Errorf("%s: %d of %s's packets through the shaper, want them all there: %v", s.name, n, d.pair, d.viaShaper)
			}
			r := routesTo(t, f, d.from, d.to)
			if got := strings.Contains(r, tunName); got != d.viaShaper {
				t.Errorf("%s: %s's route to %s is %q, want one through %s: %v", s.name, d.from, d.to, r, tunName, d.viaShaper)
			}
		}
	}
	// A pair the test never touched stays on the kernel's path.
	if r := routesTo(t, f, "a", "c"); r != "" {
		t.Errorf("a has a route of its own to c: %q", r)
	}
}

// TestBypassHealKeepsOrder: a pair whose link is healed while the shaper
// still holds its packets (a delay ends under traffic) moves back to the
// kernel only once they are out, so no later packet overtakes them.
func TestBypassHealKeepsOrder(t *testing.T) {
	// The pair stays in the shaper while the test sends, however slowly a
	// busy machine lets it send.
	f := newFabricWith(t, Options{Bypass: true, leaveBusy: time.Minute}, "a", "b")
	const delay = 30 * time.Millisecond
	f.SetLink(f.Host("a"), f.Host("b"), shaper.Link{Delay: delay})
	addr, _, pc := listenIn(t, f.Host("b"), "udp")
	got := make(chan []int, 1)
	go func() {
		var seqs []int
		buf := make([]byte, 64)
		for {
			pc.SetReadDeadline(time.Now().Add(time.Second))
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				got <- seqs
				return
			}
			seq, err := strconv.Atoi(string(buf[:n]))
			if err == nil {
				seqs = append(seqs, seq)
			}
		}
	}()
	c, err := f.Host("a").DialNetwork(context.Background(), "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(from, n int) {
		for i := from; i < from+n; i++ {
			if _, err := c.Write([]byte(strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	// 200 packets before the heal, at least 20 ms, 600 after it, at least
	// 60 ms, more than the delay, and 200 once the pair has left the
	// shaper, through the kernel.
	const before, after, kernel = 200, 600, 200
	send(0, before)
	queued := f.router.Queued(f.Host("a").ID, f.Host("b").ID)
	f.SetLink(f.Host("a"), f.Host("b"), shaper.Link{})
	if r := routesTo(t, f, "a", "b"); !strings.Contains(r, tunName) {
		t.Errorf("healed with %d packets queued, a's route to b is %q at once, want it through %s until they are out", queued, r, tunName)
	}
	send(before, after)
	waitRoute(t, f, "a", "b", false)
	shaped := f.Stats()["a>b"].Forwarded
	send(before+after, kernel)
	seqs := <-got
	out := 0
	for i := 1; i < len(seqs); i++ {
		if seqs[i] < seqs[i-1] {
			out++
		}
	}
	t.Logf("%d packets queued at the heal; %d of %d datagrams arrived, %d after a later one", queued, len(seqs), before+after+kernel, out)
	if queued == 0 {
		t.Fatalf("nothing queued at the heal: the test sends too slowly for a %v delay", delay)
	}
	if total := before + after + kernel; out > 0 || len(seqs) < total*9/10 {
		t.Errorf("%d datagrams of %d arrived, %d of them after a later one; want them all, in order", len(seqs), total, out)
	}
	if n := f.Stats()["a>b"].Forwarded; n != shaped {
		t.Errorf("the shaper forwarded %d of a>b's datagrams after the pair left it, want none", n-shaped)
	}
}

// TestBypassLeaveBusy: a healed pair that keeps sending stays in the
// shaper, and leaves it once it has been quiet for leaveGrace or busy for
// leaveBusy, whichever comes first.
func TestBypassLeaveBusy(t *testing.T) {
	f := newFabricWith(t, Options{Bypass: true, leaveBusy: time.Minute}, "a", "b")
	a, b := f.Host("a"), f.Host("b")
	addr, _, _ := listenIn(t, b, "udp")
	c, err := a.DialNetwork(context.Background(), "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// blast sends every 100 µs or so until stopped, and returns the
	// longest gap between two sends: a pair left in a gap of leaveGrace was
	// quiet. (Without a pause the shaper's queue of the pair, which new
	// packets join while it holds any, would seldom empty.)
	blast := func() (stop func() time.Duration) {
		done, gap := make(chan struct{}), make(chan time.Duration)
		go func() {
			var longest time.Duration
			last := time.Now()
			for {
				select {
				case <-done:
					gap <- longest
					return
				default:
				}
				c.Write([]byte("x"))
				time.Sleep(100 * time.Microsecond)
				now := time.Now()
				longest, last = max(longest, now.Sub(last)), now
			}
		}()
		return func() time.Duration { close(done); return <-gap }
	}

	f.SetLink(a, b, shaper.Link{Delay: 5 * time.Millisecond})
	stop := blast()
	f.SetLink(a, b, shaper.Link{})
	time.Sleep(300 * time.Millisecond)
	r := routesTo(t, f, "a", "b")
	gap := stop()
	t.Logf("300 ms after the heal, a's route to b is %q; the sender's longest pause was %v", r, gap)
	if !strings.Contains(r, tunName) && gap < leaveGrace {
		t.Errorf("a pair that never paused for %v left the shaper within 300 ms of its heal, want it kept there for leaveBusy (a minute)", leaveGrace)
	}
	waitRoute(t, f, "a", "b", false)

	f.mu.Lock() // leaveShaper reads it
	f.leaveBusy = 100 * time.Millisecond
	f.mu.Unlock()
	f.SetLink(a, b, shaper.Link{Delay: 5 * time.Millisecond})
	stop = blast()
	healed := time.Now()
	f.SetLink(a, b, shaper.Link{})
	left := waitRoute(t, f, "a", "b", false).Sub(healed)
	gap = stop()
	t.Logf("with leaveBusy %v, the busy pair left the shaper %v after its heal; the sender's longest pause was %v", f.leaveBusy, left, gap)
	if left < f.leaveBusy && gap < leaveGrace {
		t.Errorf("a pair that never paused for %v left the shaper %v after its heal, want at least leaveBusy (%v)", leaveGrace, left, f.leaveBusy)
	}
}

// TestBypassLeaveRestarts: a pair shaped again while it waits to leave the
// shaper, and untouched again, waits a whole grace from the last change,
// not from the first.
func TestBypassLeaveRestarts(t *testing.T) {
	f := newFabricWith(t, Options{Bypass: true}, "a", "b")
	a, b := f.Host("a"), f.Host("b")
	f.SetLink(a, b, shaper.Link{Delay: time.Millisecond})
	f.SetLink(a, b, shaper.Link{})
	time.Sleep(leaveGrace / 2)
	f.SetLink(a, b, shaper.Link{Delay: time.Millisecond})
	last := time.Now()
	f.SetLink(a, b, shaper.Link{})
	if d := waitRoute(t, f, "a", "b", false).Sub(last); d < leaveGrace {
		t.Errorf("the pair left the shaper %v after its last heal, want at least %v", d, leaveGrace)
	}
}

// TestTUNHasNoQueue: every host's TUN device, up, has no queueing
// discipline in front of it, so that packets reach the shaper in the order
// they were sent and a mark follows every packet sent before it, and holds
// tunQueueLen frames for the shaper, not the kernel's 500.
func TestTUNHasNoQueue(t *testing.T) {
	for _, opts := range []Options{{}, {Bypass: true}} {
		f := newFabricWith(t, opts, "a")
		err := inNetns(f.Host("a").NetnsPath(), func() error {
			nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
			if err != nil {
				return err
			}
			defer nl.Close()
			link, err := nl.LinkByName(tunName)
			if err != nil {
				return err
			}
			qdiscs, err := nl.QdiscList(link)
			if err != nil {
				return err
			}
			if link.Attrs().Flags&net.FlagUp == 0 {
				t.Errorf("bypass %v: %s is not up", opts.Bypass, tunName)
			}
			if len(qdiscs) != 1 || qdiscs[0].Type() != "noqueue" {
				t.Errorf("bypass %v: %s's queueing disciplines are %v, want noqueue alone", opts.Bypass, tunName, qdiscs)
			}
			if n := link.Attrs().TxQLen; n != tunQueueLen {
				t.Errorf("bypass %v: %s holds %d frames, want %d", opts.Bypass, tunName, n, tunQueueLen)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
