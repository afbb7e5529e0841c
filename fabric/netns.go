package fabric

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns add` pins named namespaces.
const netnsDir = "/run/netns"

// tunName is the TUN device's name inside every host's namespace.
const tunName = "scn0"

// ipBinary finds iproute2's ip, which creates and deletes namespaces and
// configures links; its arguments are always built as a list, never a
// shell string.
func ipBinary() (string, error) {
	p, err := exec.LookPath("ip")
	if err != nil {
		for _, c := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"} {
			if _, serr := os.Stat(c); serr == nil {
				return c, nil
			}
		}
		return "", fmt.Errorf("iproute2's ip command not found (install the iproute2 package): %w", err)
	}
	return p, nil
}

func runIP(ctx context.Context, ip string, args ...string) error {
	out, err := exec.CommandContext(ctx, ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNetns runs fn on an OS thread switched into the namespace pinned at
// path, then switches the thread back. If it cannot switch back, the
// thread stays locked, so the runtime destroys it rather than let another
// goroutine run in the wrong namespace.
func inNetns(path string, fn func() error) error {
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open namespace: %w", err)
	}
	defer target.Close()
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open own namespace: %w", err)
	}
	defer self.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter namespace %s: %w", path, err)
	}
	ferr := fn()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// Left locked on purpose: see above.
		return errors.Join(ferr, fmt.Errorf("leave namespace %s: %w", path, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// The virtio-net header a TUN device opened with IFF_VNET_HDR puts before
// every frame (struct virtio_net_hdr: flags, gso_type, hdr_len, gso_size,
// csum_start, csum_offset), and the offloads TUNSETOFFLOAD takes
// (linux/if_tun.h).
const (
	vnetHeaderLen  = 10
	tunOffloadCSum = 0x01 // TUN_F_CSUM: frames may leave their checksum to the receiver
	tunOffloadTSO4 = 0x02 // TUN_F_TSO4: TCP over IPv4 may come as segments of up to 64 KiB
)

// openTUN creates the TUN device inside the namespace at nsPath and returns
// it as a non-blocking file, so reads honour deadlines and Close unblocks
// them. With vnet, every frame carries a virtio-net header and the device
// takes checksum and TCP segmentation offloads (see setOffload).
func openTUN(nsPath string, vnet bool) (*os.File, error) {
	var f *os.File
	err := inNetns(nsPath, func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(tunName)
		if err != nil {
			unix.Close(fd)
			return err
		}
		flags := uint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if vnet {
			flags |= unix.IFF_VNET_HDR
		}
		ifr.SetUint16(flags)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("create TUN device: %w", err)
		}
		if vnet {
			if err := setOffload(fd, true); err != nil {
				unix.Close(fd)
				return err
			}
		}
		if err := noQueue(); err != nil {
			unix.Close(fd)
			return err
		}
		f = os.NewFile(uintptr(fd), "tun:"+nsPath)
		return nil
	})
	return f, err
}

// tunQueueLen is how many frames a host's TUN device holds for the shaper
// to read: the kernel's default for a NIC (and a veth), not its 500 for a
// TUN device. A thousand closed-loop clients' bursts overran 500 whenever
// the shaper's reader was kept off a core: 31 to 673 frames no link
// declared were lost in 19 of 20 ten-second etcd put runs (Fabric.Drops).
// With 1,000 none was lost in 20 of 20, at the same put rate (1.004 of
// 500's, paired by round; 0.940 to 1.041). 10,000 lost none either but
// was slower (README, Benchmarks).
const tunQueueLen = 1000

// noQueue takes the queueing discipline off the TUN device of the calling
// thread's namespace, which it would get when brought up, and gives its
// read queue tunQueueLen frames. The device never pushes back (it drops
// what overflows its read queue), so a discipline only takes a lock per
// packet, and one of several bands (pfifo_fast's, by the packets'
// priority) would let a packet overtake another. The fabric relies on the
// device's order (syncReader). What a device drops is counted
// (Fabric.Drops).
func noQueue() error {
	return withTUN(func(nl *netlink.Handle, tun netlink.Link) error {
		err := nl.QdiscReplace(&netlink.GenericQdisc{
			QdiscAttrs: netlink.QdiscAttrs{LinkIndex: tun.Attrs().Index, Parent: netlink.HANDLE_ROOT},
			QdiscType:  "noqueue",
		})
		if err != nil {
			return fmt.Errorf("no queueing discipline on %s: %w", tunName, err)
		}
		if err := nl.LinkSetTxQLen(tun, tunQueueLen); err != nil {
			return fmt.Errorf("queue of %d frames on %s: %w", tunQueueLen, tunName, err)
		}
		return nil
	})
}

// withTUN calls fn with a netlink handle and the TUN device of the calling
// thread's namespace.
func withTUN(fn func(nl *netlink.Handle, tun netlink.Link) error) error {
	nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer nl.Close()
	tun, err := nl.LinkByName(tunName)
	if err != nil {
		return fmt.Errorf("find %s: %w", tunName, err)
	}
	return fn(nl, tun)
}

// txCounts is a TUN device's transmit counters: the kernel counts a frame
// as transmitted when the device's reader reads it, and as a transmit drop
// when it could not queue it for the reader.
type txCounts struct{ packets, dropped uint64 }

// deviceTX reads the transmit counters of the TUN device in the namespace
// at nsPath.
func deviceTX(nsPath string) (txCounts, error) {
	var tx txCounts
	err := inNetns(nsPath, func() error {
		return withTUN(func(_ *netlink.Handle, tun netlink.Link) error {
			if st := tun.Attrs().Statistics; st != nil {
				tx = txCounts{packets: st.TxPackets, dropped: st.TxDropped}
			}
			return nil
		})
	})
	return tx, err
}

// setOffload tells the kernel which offloads the reader of a TUN device
// with IFF_VNET_HDR takes: checksums always, and with tso TCP segments of
// up to 64 KiB, so that one frame carries what would otherwise be up to
// 44 packets of the device's MTU. Without tso the kernel cuts segments to
// the MTU before the device sees them.
func setOffload(fd int, tso bool) error {
	flags := tunOffloadCSum
	if tso {
		flags |= tunOffloadTSO4
	}
	if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, flags); err != nil {
		return fmt.Errorf("set TUN offloads %#x: %w", flags, err)
	}
	return nil
}

// dialIn dials addr from inside the namespace at nsPath. The socket is
// created there and keeps that namespace for its whole life.
func dialIn(ctx context.Context, nsPath, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := inNetns(nsPath, func() error {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		conn = c
		return err
	})
	return conn, err
}
