package fabric

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/coordlab/scenario/fabric/shaper"
)

// Delivery through a packet socket (Options.PacketWrites): besides its TUN
// device, each host has a veth, scnw0, whose other end sits in a namespace
// of the fabric's own, where the shaper writes to it through an AF_PACKET
// socket. Unlike a TUN device, which takes a write(2) a frame, such a
// socket takes a batch of frames in one sendmmsg(2).

// hostMAC is the hardware address of every host's scnw0: the frames the
// shaper delivers are addressed to it, so that the host takes them as its
// own.
var hostMAC = net.HardwareAddr{0x02, 0x73, 0x63, 0x6e, 0x00, 0x01}

// ethHeader is an Ethernet header from and to the hosts' shared address,
// carrying IPv4.
func ethHeader() []byte {
	b := make([]byte, 14)
	copy(b, hostMAC)
	copy(b[6:], hostMAC)
	binary.BigEndian.PutUint16(b[12:], unix.ETH_P_IP)
	return b
}

// makePacketNS creates the namespace that holds the fabric's ends of the
// hosts' delivering veths, with IPv6 off so that none of them sends
// anything of its own.
func (f *Fabric) makePacketNS(ctx context.Context, runID string) error {
	ns := nsName(runID, "packets")
	if err := runIP(ctx, f.ip, "netns", "add", ns); err != nil {
		return err
	}
	f.packets = ns // from here Close removes it
	return inNetns(netnsPath(ns), func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0)
	})
}

// deliverName is the veth in a host's namespace through which the shaper
// delivers its frames with Options.PacketWrites.
const deliverName = "scnw0"

// addDelivery gives h's namespace a veth pair through which the shaper
// delivers frames in batches (Options.PacketWrites), its other end in the
// packet namespace, and opens the shaper's socket on that end, for writing
// only. The host sends nothing through it (no route, no IPv6, no ARP), and
// takes what arrives on it for its own address on the TUN device, which
// reverse-path filtering would refuse.
func (f *Fabric) addDelivery(ctx context.Context, h *Host) (*os.File, error) {
	outer := vethName(h)
	for _, args := range [][]string{
		{"-n", f.packets, "link", "add", outer, "type", "veth", "peer", "name", deliverName, "netns", h.ns},
		{"-n", h.ns, "link", "set", deliverName, "address", hostMAC.String(), "arp", "off"},
		{"-n", f.packets, "link", "set", outer, "up"},
	} {
		if err := runIP(ctx, f.ip, args...); err != nil {
			return nil, err
		}
	}
	if err := inNetns(h.NetnsPath(), func() error {
		for _, set := range []struct{ path, value string }{
			{"/proc/sys/net/ipv6/conf/" + deliverName + "/disable_ipv6", "1"},
			{rpFilterAll, "0"},
			{"/proc/sys/net/ipv4/conf/" + deliverName + "/rp_filter", "0"},
		} {
			if err := os.WriteFile(set.path, []byte(set.value), 0); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("configure %s: %w", deliverName, err)
	}
	if err := runIP(ctx, f.ip, "-n", h.ns, "link", "set", deliverName, "up"); err != nil {
		return nil, err
	}
	var out *os.File
	err := inNetns(netnsPath(f.packets), func() error {
		var err error
		out, err = openWriteSocket(outer)
		return err
	})
	return out, err
}

// deliveryDrops counts the frames the delivering veths dropped: the veth
// driver counts a frame its other end, in the host, did not take (its
// backlog full, or the device down) as a transmit drop of the end the
// shaper writes to. 0 without Options.PacketWrites.
func (f *Fabric) deliveryDrops() (uint64, error) {
	if f.packets == "" {
		return 0, nil
	}
	var n uint64
	err := inNetns(netnsPath(f.packets), func() error {
		nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
		defer nl.Close()
		for _, h := range f.hosts {
			if h.out == nil {
				continue
			}
			l, err := nl.LinkByName(vethName(h))
			if err != nil {
				return fmt.Errorf("host %s's delivering veth: %w", h.Name, err)
			}
			if st := l.Attrs().Statistics; st != nil {
				n += st.TxDropped
			}
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("fabric: %w", err)
	}
	return n, nil
}

// openWriteSocket opens a non-blocking AF_PACKET socket on the calling
// thread's device ifname that reads nothing (protocol 0) and writes frames
// with virtio-net headers straight to the device.
func openWriteSocket(ifname string) (*os.File, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("packet socket: %w", err)
	}
	for _, o := range []struct {
		name int
		what string
	}{
		{unix.PACKET_VNET_HDR, "virtio-net headers"},
		{unix.PACKET_QDISC_BYPASS, "bypass the queueing discipline"},
	} {
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, o.name, 1); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("packet socket: %s: %w", o.what, err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind packet socket to %s: %w", ifname, err)
	}
	return os.NewFile(uintptr(fd), "packet:"+ifname), nil
}

// deliveringTUN is a host's TUN device, read and written frame by frame as
// any, whose batches of frames go through a packet socket instead.
type deliveringTUN struct {
	*os.File
	out  *os.File // the packet socket
	eth  []byte   // the Ethernet header of every frame delivered
	hlen int      // the TUN frames' virtio-net header length
}

// WriteBatch delivers frames read from TUN devices in as few sendmmsg(2)
// calls as it can (see sendBatch).
func (d *deliveringTUN) WriteBatch(frames [][]byte) (int, error) {
	return sendBatch(d.out, frames, d.eth, d.hlen)
}

// mmsghdr is struct mmsghdr.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// scratch is a sendBatch's message headers and virtio-net headers,
// pooled: several pairs' schedulers write to one device at once.
type scratch struct {
	iov   []unix.Iovec
	msgs  []mmsghdr
	heads []byte
}

var batchScratch = sync.Pool{New: func() any { return new(scratch) }}

// shiftOffload moves the offsets of a virtio-net header read from a TUN
// device, which count from the IPv4 header, past a link header of n bytes
// put before it: the checksum's start, and the headers' length of a
// segment (struct virtio_net_hdr, little-endian as on the devices here).
// Left as they were, the receiving stack writes a checksum into the wrong
// bytes and drops the packet.
func shiftOffload(h []byte, n int) {
	const (
		needsCsum = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM
		gsoNone   = 0
	)
	if h[1] != gsoNone {
		binary.LittleEndian.PutUint16(h[2:], binary.LittleEndian.Uint16(h[2:])+uint16(n))
	}
	if h[0]&needsCsum != 0 {
		binary.LittleEndian.PutUint16(h[6:], binary.LittleEndian.Uint16(h[6:])+uint16(n))
	}
}

// sendBatch sends frames through the packet socket f, one message each,
// with as few sendmmsg(2) calls as it can. Each frame is a TUN device's:
// hlen bytes of virtio-net header, or none, then an IPv4 packet; it is
// sent as a copy of its header moved past eth (a header asking for no
// offload where it has none), eth, and its packet. It returns how many
// were sent and, if not all, why the next one was not (it is then lost: a
// full queue at the destination, say); the caller may go on with the rest.
func sendBatch(f *os.File, frames [][]byte, eth []byte, hlen int) (int, error) {
	if len(frames) == 0 {
		return 0, nil
	}
	sc := batchScratch.Get().(*scratch)
	defer batchScratch.Put(sc)
	iov := slices.Grow(sc.iov[:0], 3*len(frames))[:3*len(frames)]
	msgs := slices.Grow(sc.msgs[:0], len(frames))[:len(frames)]
	heads := slices.Grow(sc.heads[:0], vnetHeaderLen*len(frames))[:vnetHeaderLen*len(frames)]
	sc.iov, sc.msgs, sc.heads = iov, msgs, heads
	clear(heads)
	set := func(v *unix.Iovec, b []byte) {
		v.Base = unsafe.SliceData(b)
		v.SetLen(len(b))
	}
	for i, b := range frames {
		head := heads[i*vnetHeaderLen : (i+1)*vnetHeaderLen]
		if hlen > 0 {
			copy(head, b[:hlen])
			shiftOffload(head, len(eth))
		}
		v := iov[3*i : 3*i+3]
		set(&v[0], head)
		set(&v[1], eth)
		set(&v[2], b[hlen:])
		msgs[i].hdr.Iov = &v[0]
		msgs[i].hdr.SetIovlen(len(v))
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	sent := 0
	var serr error
	werr := rc.Write(func(fd uintptr) bool {
		for sent < len(msgs) {
			n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&msgs[sent])), uintptr(len(msgs)-sent), unix.MSG_DONTWAIT, 0, 0)
			if e == unix.EAGAIN {
				return false // the poller waits for room
			}
			if e != 0 {
				serr = e
				return true
			}
			sent += int(n)
		}
		return true
	})
	if werr != nil {
		return sent, werr
	}
	return sent, serr
}

var _ shaper.BatchWriter = (*deliveringTUN)(nil)
