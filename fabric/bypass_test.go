package fabric

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/fabric/shaper"
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

func TestUntouched(t *testing.T) {
	for _, tc := range []struct {
		link shaper.Link
		want bool
	}{
		{shaper.Link{}, true},
		{shaper.Link{Reject: true}, true}, // Reject means nothing without Down
		{shaper.Link{Delay: time.Microsecond}, false},
		{shaper.Link{Jitter: time.Microsecond}, false},
		{shaper.Link{Loss: 0.001}, false},
		{shaper.Link{Rate: 1e9}, false},
		{shaper.Link{Down: true}, false},
		{shaper.Link{Down: true, Reject: true}, false},
	} {
		if got := untouched(tc.link); got != tc.want {
			t.Errorf("untouched(%+v) = %v, want %v", tc.link, got, tc.want)
		}
	}
}
