package fabric

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
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
}

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
// shaper at least: packets the source's kernel routed to the TUN device
// before the change and the shaper has not read yet are not counted as
// queued, and a reader waiting for a core lags by milliseconds (the
// shaper's lateness p99 under load was 11-13 ms).
const leaveGrace = 20 * time.Millisecond

// leaveShaper moves from→to back onto the bridge once the shaper holds
// none of its packets, and leaveGrace has passed: until then a packet
// sent through the kernel could overtake those still waiting out the old
// link's delay, a reordering no wire makes. Meanwhile the shaper forwards
// the pair's new packets behind its queued ones at once, as its link is
// untouched. The queue empties by the due time of its last packet, so the
// wait is bounded by the old link's delay, jitter and rate; it ends early
// if the fabric closes.
func (f *Fabric) leaveShaper(from, to *Host, move uint64) {
	grace := time.NewTimer(leaveGrace)
	defer grace.Stop()
	select {
	case <-f.stop:
		return
	case <-grace.C:
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for f.router.Queued(from.ID, to.ID) > 0 {
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
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

// shaperRoute is from's route to to's address alone through its TUN
// device.
func shaperRoute(from, to *Host) *netlink.Route {
	return &netlink.Route{
		LinkIndex: from.routes.tun,
		Dst:       &net.IPNet{IP: to.Addr.AsSlice(), Mask: net.CIDRMask(32, 32)},
		Src:       from.Addr.AsSlice(),
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
