package shaper

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"
)

// tcpPacket builds an IPv4 TCP segment from 10.99.0.1:40000 to
// 10.99.0.2:2379 with the given flags, sequence numbers and payload.
func tcpPacket(flags byte, seq, ack uint32, payload int) []byte {
	pkt := make([]byte, 20+20+payload)
	from, to := [4]byte{10, 99, 0, 1}, [4]byte{10, 99, 0, 2}
	ipHeader(pkt, protoTCP, from, to)
	t := pkt[20:]
	binary.BigEndian.PutUint16(t[0:2], 40000)
	binary.BigEndian.PutUint16(t[2:4], 2379)
	binary.BigEndian.PutUint32(t[4:8], seq)
	binary.BigEndian.PutUint32(t[8:12], ack)
	t[12] = 5 << 4
	t[13] = flags
	binary.BigEndian.PutUint16(t[16:18], tcpChecksum(from, to, t))
	return pkt
}

func TestRejectReply(t *testing.T) {
	tests := []struct {
		name       string
		pkt        []byte
		none       bool
		proto      byte
		flags      byte
		seq, ack   uint32
		icmpQuoted int
	}{
		{name: "a SYN gets RST|ACK acknowledging it", pkt: tcpPacket(tcpSYN, 1000, 0, 0), proto: protoTCP, flags: tcpRST | tcpACK, seq: 0, ack: 1001},
		{name: "data with ACK gets RST at its ack", pkt: tcpPacket(tcpACK|0x08, 5000, 777, 100), proto: protoTCP, flags: tcpRST, seq: 777},
		{name: "data without ACK gets RST|ACK past its payload", pkt: tcpPacket(0x08, 5000, 0, 100), proto: protoTCP, flags: tcpRST | tcpACK, ack: 5100},
		{name: "a FIN counts one", pkt: tcpPacket(tcpFIN, 9, 0, 0), proto: protoTCP, flags: tcpRST | tcpACK, ack: 10},
		{name: "a reset is never answered", pkt: tcpPacket(tcpRST, 1, 0, 0), none: true},
		{name: "UDP gets port unreachable quoting its header", pkt: udpPacket(), proto: protoICMP, icmpQuoted: 28},
		{name: "an ICMP error is never answered", pkt: icmpPacket(3), none: true},
		{name: "an echo request is answered", pkt: icmpPacket(8), proto: protoICMP, icmpQuoted: 28},
		{name: "too short", pkt: []byte{0x45, 0, 0}, none: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rejectReply(tt.pkt)
			if tt.none {
				if r != nil {
					t.Fatalf("answered with %x", r)
				}
				return
			}
			if r == nil {
				t.Fatal("no answer")
			}
			if checksum(0, r[:20]) != 0 {
				t.Error("bad IP header checksum")
			}
			if [4]byte(r[12:16]) != [4]byte(tt.pkt[16:20]) || [4]byte(r[16:20]) != [4]byte(tt.pkt[12:16]) {
				t.Error("addresses not swapped")
			}
			if r[9] != tt.proto || int(binary.BigEndian.Uint16(r[2:4])) != len(r) {
				t.Fatalf("protocol %d, length %d of %d", r[9], binary.BigEndian.Uint16(r[2:4]), len(r))
			}
			body := r[20:]
			switch tt.proto {
			case protoTCP:
				if tcpChecksum([4]byte(r[12:16]), [4]byte(r[16:20]), body) != 0 {
					t.Error("bad TCP checksum")
				}
				if binary.BigEndian.Uint16(body[0:2]) != 2379 || binary.BigEndian.Uint16(body[2:4]) != binary.BigEndian.Uint16(tt.pkt[20:22]) {
					t.Error("ports not swapped")
				}
				if body[13] != tt.flags || binary.BigEndian.Uint32(body[4:8]) != tt.seq || binary.BigEndian.Uint32(body[8:12]) != tt.ack {
					t.Errorf("flags %#x seq %d ack %d, want %#x %d %d", body[13], binary.BigEndian.Uint32(body[4:8]), binary.BigEndian.Uint32(body[8:12]), tt.flags, tt.seq, tt.ack)
				}
			case protoICMP:
				if checksum(0, body) != 0 {
					t.Error("bad ICMP checksum")
				}
				if body[0] != 3 || body[1] != 3 || len(body) != 8+tt.icmpQuoted || string(body[8:]) != string(tt.pkt[:tt.icmpQuoted]) {
					t.Errorf("ICMP type %d code %d quoting %d bytes", body[0], body[1], len(body)-8)
				}
			}
		})
	}
}

func udpPacket() []byte {
	pkt := make([]byte, 20+8+32)
	ipHeader(pkt, 17, [4]byte{10, 99, 0, 1}, [4]byte{10, 99, 0, 2})
	binary.BigEndian.PutUint16(pkt[20:22], 8301)
	binary.BigEndian.PutUint16(pkt[22:24], 8301)
	binary.BigEndian.PutUint16(pkt[24:26], 40)
	return pkt
}

func icmpPacket(typ byte) []byte {
	pkt := make([]byte, 20+8+20)
	ipHeader(pkt, protoICMP, [4]byte{10, 99, 0, 1}, [4]byte{10, 99, 0, 2})
	pkt[20] = typ
	binary.BigEndian.PutUint16(pkt[22:24], checksum(0, pkt[20:]))
	return pkt
}

// TestStatsCountBeforeWrite: writing a frame to a TUN device runs the
// receiving network stack inside the write, so whatever that wakes (a
// reader of the data, a sender whose socket a reset ends) may read the
// stats before Write returns. By then the frame must be counted, or a
// caller sees its connection reset with no rejection counted (as
// fabric's TestRejectSegment once did in CI).
func TestStatsCountBeforeWrite(t *testing.T) {
	forwarded := func(s PairStats) uint64 { return s.Forwarded }
	for _, tt := range []struct {
		name  string
		opts  Options
		link  Link
		dev   int // the device the router writes to: 1 the destination, 0 the sender
		count func(PairStats) uint64
	}{
		{"forwarded at once", Options{}, Link{}, 1, forwarded},
		{"forwarded, engaged", Options{Engage: true}, Link{}, 1, forwarded},
		{"forwarded after a delay", Options{}, Link{Delay: time.Millisecond}, 1, forwarded},
		{"rejected", Options{}, Link{Down: true, Reject: true}, 0, func(s PairStats) uint64 { return s.Rejected }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tn := startNet(t, 2, tt.opts, func(r *Router) { r.SetLink(hostID(0), hostID(1), tt.link) })
			var mu sync.Mutex
			var writes int
			var counted []uint64
			// Set before the first packet is sent: the send on the
			// device's channel orders it before the router's Write.
			tn.devs[tt.dev].onWrite = func() {
				mu.Lock()
				defer mu.Unlock()
				writes++
				if c := tt.count(tn.pair(0, 1)); c < uint64(writes) {
					counted = append(counted, c)
				}
			}
			const n = 50
			tn.send(0, 1, n, 64, 0)
			tn.recv(t, tt.dev, n, 5*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if len(counted) > 0 {
				t.Errorf("%d of %d frames were not yet counted when written (the counts then: %v)", len(counted), writes, counted)
			}
		})
	}
}
