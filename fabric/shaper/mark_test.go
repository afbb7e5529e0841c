package shaper

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

// markPacket is a UDP datagram from src to dst carrying n as its payload.
func markPacket(src, dst netip.Addr, n uint64) []byte {
	b := ipv4To(src, dst, 28, 0) // the header and a UDP header
	b = binary.BigEndian.AppendUint64(b, n)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	return b
}

// TestMarks: a UDP datagram to Options.MarkAddr is read as a mark, after
// the packets read before it and forwarded to no host; anything else to
// that address is unroutable, as to any other address no host has.
func TestMarks(t *testing.T) {
	mark := netip.AddrFrom4([4]byte{10, 0, 0, 254})
	tcpToMark := ipv4To(hostAddr(0), mark, 64, 0)
	tcpToMark[9] = 6
	for _, tc := range []struct {
		name     string
		markAddr netip.Addr
		pkt      []byte
		toHost   int    // packets host 1 receives
		noRoute  uint64 // of pkt
	}{
		{"mark", mark, markPacket(hostAddr(0), mark, 7), 1, 0},
		{"mark without MarkAddr", netip.Addr{}, markPacket(hostAddr(0), mark, 7), 1, 1},
		{"mark to a host", mark, markPacket(hostAddr(0), hostAddr(1), 7), 2, 0},
		{"TCP to MarkAddr", mark, tcpToMark, 1, 1},
		{"UDP too short to MarkAddr", mark, markPacket(hostAddr(0), mark, 7)[:32], 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tn := startNet(t, 2, Options{MarkAddr: tc.markAddr}, func(r *Router) {
				r.SetLink(hostID(0), hostID(1), Link{Delay: 200 * time.Millisecond})
			})
			tn.devs[0].in <- ipv4(0, 1, 64, 1)
			tn.devs[0].in <- tc.pkt
			// A last mark, so that the test knows when both were read.
			tn.devs[0].in <- markPacket(hostAddr(0), mark, 1000)
			if tc.markAddr.IsValid() {
				waitFor(t, 5*time.Second, "the last mark", func() bool { return tn.r.Marked(hostID(0)) == 1000 })
				if n, idle := tn.r.Seen(hostID(0), hostID(1)); idle || n != 0 {
					t.Errorf("with a packet of 0>1 queued for 200 ms, Seen = %d, %v, want 0, false", n, idle)
				}
			} else {
				waitFor(t, 5*time.Second, "the packets read", func() bool { return tn.r.HostStats()[hostID(0)].Read == 3 })
			}
			tn.recv(t, 1, tc.toHost, 5*time.Second)
			tn.quiet(t, 1, 50*time.Millisecond)
			if n, idle := tn.r.Seen(hostID(0), hostID(1)); !idle || n != uint64(tc.toHost) {
				t.Errorf("after %d packets of 0>1 went out, Seen = %d, %v, want %d, true", tc.toHost, n, idle, tc.toHost)
			}
			wantNoRoute, wantMarked := tc.noRoute, uint64(1000)
			if !tc.markAddr.IsValid() {
				wantNoRoute, wantMarked = wantNoRoute+1, 0 // the last mark is no mark either
			}
			hs := tn.r.HostStats()[hostID(0)]
			if hs.NoRoute != wantNoRoute {
				t.Errorf("NoRoute = %d, want %d", hs.NoRoute, wantNoRoute)
			}
			if m := tn.r.Marked(hostID(0)); m != wantMarked {
				t.Errorf("Marked = %d, want %d", m, wantMarked)
			}
		})
	}
	// A mark's number is kept per host, and an unknown host has none.
	tn := startNet(t, 2, Options{MarkAddr: mark}, nil)
	tn.devs[1].in <- markPacket(hostAddr(1), mark, 3)
	waitFor(t, 5*time.Second, "host 1's mark", func() bool { return tn.r.Marked(hostID(1)) == 3 })
	if m, u := tn.r.Marked(hostID(0)), tn.r.Marked(999); m != 0 || u != 0 {
		t.Errorf("Marked of a host that sent none = %d, of an unknown host %d, want 0", m, u)
	}
}
