package shaper

import "encoding/binary"

// IP protocol numbers and the TCP flags a reject reads and writes.
const (
	protoICMP = 1
	protoTCP  = 6

	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpACK = 0x10
)

// rejectReply is what a firewall's REJECT sends back to the source of pkt
// (iptables' defaults: a TCP reset for TCP, an ICMP port unreachable for
// everything else), or nil when nothing may be sent: a reset, an ICMP
// error, a fragment after the first, or a packet too short to answer.
func rejectReply(pkt []byte) []byte {
	if len(pkt) < ipv4HeaderLen || pkt[0]>>4 != 4 {
		return nil
	}
	ihl := int(pkt[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(pkt[2:4]))
	if ihl < ipv4HeaderLen || total < ihl || total > len(pkt) {
		return nil
	}
	if binary.BigEndian.Uint16(pkt[6:8])&0x1fff != 0 {
		return nil // not the first fragment: it has no transport header
	}
	src, dst := [4]byte(pkt[12:16]), [4]byte(pkt[16:20])
	body := pkt[ihl:total]
	switch pkt[9] {
	case protoTCP:
		return tcpReset(src, dst, body)
	case protoICMP:
		// Never answer an error with an error (RFC 1122 3.2.2); echo
		// requests are answered like any other packet.
		if len(body) < 1 || body[0] != 8 {
			return nil
		}
	}
	return icmpUnreachable(src, dst, pkt[:min(total, ihl+8)])
}

// tcpReset answers the TCP segment seg, sent from src to dst, with a reset
// as RFC 793 generates one for a segment that reaches no connection.
func tcpReset(src, dst [4]byte, seg []byte) []byte {
	if len(seg) < 20 {
		return nil
	}
	flags := seg[13]
	if flags&tcpRST != 0 {
		return nil
	}
	out := make([]byte, ipv4HeaderLen+20)
	ipHeader(out, protoTCP, dst, src)
	t := out[ipv4HeaderLen:]
	copy(t[0:2], seg[2:4]) // source port: the one the segment was sent to
	copy(t[2:4], seg[0:2])
	if flags&tcpACK != 0 {
		// <SEQ=SEG.ACK><CTL=RST>
		copy(t[4:8], seg[8:12])
		t[13] = tcpRST
	} else {
		// <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>
		dataOff := int(seg[12]>>4) * 4
		n := uint32(max(len(seg)-dataOff, 0))
		if flags&tcpSYN != 0 {
			n++
		}
		if flags&tcpFIN != 0 {
			n++
		}
		binary.BigEndian.PutUint32(t[8:12], binary.BigEndian.Uint32(seg[4:8])+n)
		t[13] = tcpRST | tcpACK
	}
	t[12] = 5 << 4 // data offset: 20 bytes, no options
	binary.BigEndian.PutUint16(t[16:18], tcpChecksum(dst, src, t))
	return out
}

// icmpUnreachable is an ICMP destination unreachable, port unreachable,
// from dst to src, quoting the offending packet's header and first 8 bytes.
func icmpUnreachable(src, dst [4]byte, quote []byte) []byte {
	out := make([]byte, ipv4HeaderLen+8+len(quote))
	ipHeader(out, protoICMP, dst, src)
	m := out[ipv4HeaderLen:]
	m[0], m[1] = 3, 3 // destination unreachable, port unreachable
	copy(m[8:], quote)
	binary.BigEndian.PutUint16(m[2:4], checksum(0, m))
	return out
}

// ipHeader writes a 20-byte IPv4 header for a packet of len(out) bytes.
func ipHeader(out []byte, proto byte, from, to [4]byte) {
	out[0] = 0x45
	binary.BigEndian.PutUint16(out[2:4], uint16(len(out)))
	binary.BigEndian.PutUint16(out[6:8], 0x4000) // don't fragment
	out[8] = 64                                  // TTL
	out[9] = proto
	copy(out[12:16], from[:])
	copy(out[16:20], to[:])
	binary.BigEndian.PutUint16(out[10:12], checksum(0, out[:ipv4HeaderLen]))
}

// tcpChecksum is the TCP checksum of seg (its checksum field zero) with
// the IPv4 pseudo-header.
func tcpChecksum(from, to [4]byte, seg []byte) uint16 {
	var pseudo [12]byte
	copy(pseudo[0:4], from[:])
	copy(pseudo[4:8], to[:])
	pseudo[9] = protoTCP
	binary.BigEndian.PutUint16(pseudo[10:12], uint16(len(seg)))
	return checksum(sum(0, pseudo[:]), seg)
}

// checksum is the Internet checksum (RFC 1071) of b, continuing from a
// partial sum.
func checksum(partial uint32, b []byte) uint16 {
	s := sum(partial, b)
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func sum(s uint32, b []byte) uint32 {
	for len(b) >= 2 {
		s += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}
