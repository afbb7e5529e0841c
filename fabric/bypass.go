package fabric

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// bypassName is the name, inside every host's namespace, of the veth that
// joins it to the fabric's bridge when Options.Bypass is set.
const bypassName = "scnk0"

// rpFilterAll is a namespace's own reverse-path filtering setting, which
// the bypass turns off.
const rpFilterAll = "/proc/sys/net/ipv4/conf/all/rp_filter"

// hostRoutes is a host's side of the bypass: a netlink socket opened in its
// namespace (a route then changes in one system call, so a fault's start
// is not held up by an exec of ip), the index of its TUN device, and the
// destinations its packets currently reach through the shaper.
type hostRoutes struct {
	nl     *netlink.Handle
	tun    int          // index of the TUN device
	shaped map[int]bool // destinations routed through the TUN device
	// leaving are those of them whose link is untouched again, waiting
	// for the shaper to send what it holds of them: the number of the
	// leaveShaper that is to move each (a pair shaped and untouched again
	// meanwhile gets a new one, and a full grace).
	leaving map[int]uint64
	moves   uint64 // the last number given

	// mark is a UDP socket in the namespace whose datagrams go to
	// markAddr through the TUN device: marks that tell how far the shaper
	// has read it (syncReader). markMu orders the numbers they carry.
	mark   net.Conn
	markMu sync.Mutex
	marked uint64 // the number of the last mark sent
}

// markAddr is an address in the subnet no host has (hosts go up to
// 10.99.0.250), routed through every host's TUN device; the shaper reads
// datagrams to it as marks (shaper.Options.MarkAddr).
var markAddr = netip.MustParseAddr("10.99.255.254")

// addBypass joins h's namespace to the bridge by a veth pair, routes the
// whole subnet through it, and opens the netlink socket that later moves
// single destinations onto the TUN device. The veth carries the host's
// address as well, so that ARP on the bridge is answered whatever the
// namespace's arp_ignore; reverse-path filtering is turned off, since a
// pair's two directions may take different devices (one shaped, the other
// not).
func (f *Fabric) addBypass(ctx context.Context, h *Host) error {
	if err := f.joinBridge(ctx, h, bypassName, 32); err != nil {
		return err
	}
	err := inNetns(h.NetnsPath(), func() error {
		if h.attach != 0 {
			old, err := os.ReadFile(rpFilterAll)
			if err != nil {
				return fmt.Errorf("read reverse-path filtering: %w", err)
			}
			h.rpFilter = strings.TrimSpace(string(old))
		}
		for _, dev := range []string{"all", tunName, bypassName} {
			p := filepath.Join("/proc/sys/net/ipv4/conf", dev, "rp_filter")
			if err := os.WriteFile(p, []byte("0"), 0); err != nil {
				return fmt.Errorf("turn reverse-path filtering off: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	nsh, err := netns.GetFromPath(h.NetnsPath())
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", h.ns, err)
	}
	defer nsh.Close()
	nl, err := netlink.NewHandleAt(nsh)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", h.ns, err)
	}
	h.routes = &hostRoutes{nl: nl, shaped: map[int]bool{}, leaving: map[int]uint64{}}
	tun, err := nl.LinkByName(tunName)
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", tunName, h.ns, err)
	}
	h.routes.tun = tun.Attrs().Index
	// The TUN device has no queueing discipline (openTUN): a mark is read
	// after every packet sent before it.
	if err := nl.RouteAdd(tunRoute(h, markAddr)); err != nil {
		return fmt.Errorf("route marks through %s in %s: %w", tunName, h.ns, err)
	}
	// The discard port: a mark that reached a host would be dropped.
	h.routes.mark, err = h.DialNetwork(ctx, "udp", netip.AddrPortFrom(markAddr, 9).String())
	if err != nil {
		return fmt.Errorf("socket for marks in %s: %w", h.ns, err)
	}
	return runIP(ctx, f.ip, "-n", h.ns, "route", "add", subnet.String(), "dev", bypassName, "src", h.Addr.String())
}

// routeLink moves c's pair onto the TUN device when its link shapes
// anything, and back onto the bridge when it no longer does: a route to
// the destination's address alone, through the TUN device, overrides the
// subnet's route through the veth. The shaper already holds the new link,
// so a packet that reaches it after the move is shaped as declared. A pair
// leaves the shaper once what it holds of the pair is out (leaveShaper).
func (f *Fabric) routeLink(c LinkChange) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	rt := c.From.routes
	if f.closed || rt == nil {
		return nil
	}
	to := c.To.ID
	if !c.Link.Untouched() {
		delete(rt.leaving, to) // a leaveShaper under way finds the pair shaped again
		if rt.shaped[to] {
			return nil
		}
		if err := rt.nl.RouteReplace(shaperRoute(c.From, c.To)); err != nil {
			return fmt.Errorf("fabric: route %s>%s through the shaper: %w", c.From.Name, c.To.Name, err)
		}
		rt.shaped[to] = true
		return nil
	}
	if rt.shaped[to] && rt.leaving[to] == 0 {
		rt.moves++
		rt.leaving[to] = rt.moves
		go f.leaveShaper(c.From, c.To, rt.moves)
	}
	return nil
}

// leaveGrace is how long a pair whose link is untouched again stays in the
// shaper at least, and how long it must have sent nothing for it to leave
// (leaveShaper).
const leaveGrace = 20 * time.Millisecond

// leaveBusy is how long a pair that keeps sending stays in the shaper
// after its link became untouched, by default: it then leaves at a moment
// the shaper holds none of its packets, which can reorder one still on
// its way into the TUN device. Until then the shaper forwards its packets
// at once, at the shaper's cost rather than the kernel's.
const leaveBusy = 500 * time.Millisecond

// leaveShaper moves from→to back onto the bridge once the pair has been
// quiet for leaveGrace: the shaper holds none of its packets and has read
// none since the last look, up to a mark sent after it (syncReader). A
// packet sent through the kernel can then overtake none still on its way
// through the shaper, a reordering no wire makes. A pair that is never
// quiet for so long leaves after f.leaveBusy (leaveBusy unless a test sets
// it), once the shaper holds none of its packets; the wait is bounded by
// that and the old link's delay, jitter and rate. Meanwhile the shaper
// forwards the pair's new packets behind its queued ones at once, as its
// link is untouched. The wait ends early if the fabric closes.
func (f *Fabric) leaveShaper(from, to *Host, move uint64) {
	busyUntil := time.Now().Add(f.leaveBusy)
	last, wasIdle := f.seenAfterSync(from, to)
	look := time.NewTimer(leaveGrace)
	defer look.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-look.C:
		}
		n, idle := f.seenAfterSync(from, to)
		if wasIdle && idle && n == last {
			break
		}
		if time.Now().After(busyUntil) {
			if _, idle := f.router.Seen(from.ID, to.ID); idle {
				f.log.Debug("a busy pair leaves the shaper", "pair", from.Name+">"+to.Name)
				break
			}
		}
		last, wasIdle = n, idle
		next := leaveGrace
		if !idle {
			// The old link's queue drains by its last due time.
			next = time.Millisecond
		}
		look.Reset(next)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rt := from.routes
	if f.closed || rt.leaving[to.ID] != move {
		return
	}
	delete(rt.leaving, to.ID)
	if err := rt.nl.RouteDel(shaperRoute(from, to)); err != nil {
		f.log.Warn("a pair with nothing to shape stays in the shaper", "pair", from.Name+">"+to.Name, "err", err)
		return
	}
	delete(rt.shaped, to.ID)
}

// seenAfterSync returns the shaper's count of from→to's packets once it
// has read every packet from put in its TUN device before the call, and
// whether it holds none of them. A failed sync reports the pair busy.
func (f *Fabric) seenAfterSync(from, to *Host) (n uint64, idle bool) {
	if err := f.syncReader(from); err != nil {
		f.log.Debug("no mark through the shaper", "host", from.Name, "err", err)
		return 0, false
	}
	return f.router.Seen(from.ID, to.ID)
}

// markTimeout bounds the wait for one mark: the TUN device drops what
// overflows its queue, marks included.
const markTimeout = time.Second

// syncReader returns once the shaper has read everything h's kernel put in
// its TUN device before the call: a mark sent through the device behind
// those packets comes back from the shaper's count of marks (Marked).
func (f *Fabric) syncReader(h *Host) error {
	rt := h.routes
	rt.markMu.Lock()
	rt.marked++
	n := rt.marked
	_, err := rt.mark.Write(binary.BigEndian.AppendUint64(nil, n))
	rt.markMu.Unlock()
	if err != nil {
		return fmt.Errorf("send mark %d: %w", n, err)
	}
	deadline := time.Now().Add(markTimeout)
	poll := time.NewTicker(100 * time.Microsecond)
	defer poll.Stop()
	for f.router.Marked(h.ID) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("mark %d not read in %v", n, markTimeout)
		}
		select {
		case <-f.stop:
			return errors.New("fabric closed")
		case <-poll.C:
		}
	}
	return nil
}

// shaperRoute is from's route to to's address alone through its TUN
// device.
func shaperRoute(from, to *Host) *netlink.Route { return tunRoute(from, to.Addr) }

// tunRoute is h's route to dst alone through its TUN device.
func tunRoute(h *Host, dst netip.Addr) *netlink.Route {
	return &netlink.Route{
		LinkIndex: h.routes.tun,
		Dst:       &net.IPNet{IP: dst.AsSlice(), Mask: net.CIDRMask(32, 32)},
		Src:       h.Addr.AsSlice(),
		Scope:     netlink.SCOPE_LINK,
	}
}

// closeBridge closes the hosts' netlink sockets and removes the bridge's
// namespace, which deletes every veth pair, both ends, with the end in a
// host its address and routes. The kernel dismantles a deleted namespace
// in the background, so the pairs of attached namespaces, which live on,
// are deleted first, for them to be gone when Close returns.
func (f *Fabric) closeBridge(ctx context.Context) error {
	var errs []error
	for _, h := range f.hosts {
		if h.routes != nil {
			h.routes.nl.Close()
			if h.routes.mark != nil {
				h.routes.mark.Close()
			}
		}
		if h.attach != 0 && h.bridged {
			if err := runIP(ctx, f.ip, "-n", f.bridge, "link", "del", vethName(h)); err != nil {
				errs = append(errs, err)
			}
		}
		if h.rpFilter != "" {
			// The namespace outlives the run with its container; what
			// it filtered before is its own again.
			err := inNetns(h.NetnsPath(), func() error { return os.WriteFile(rpFilterAll, []byte(h.rpFilter), 0) })
			if err != nil {
				errs = append(errs, fmt.Errorf("restore reverse-path filtering in %s: %w", h.ns, err))
			}
		}
	}
	if err := runIP(ctx, f.ip, "netns", "delete", f.bridge); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
