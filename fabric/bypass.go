package fabric

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/coordlab/scenario/fabric/shaper"
)

// bypassName is the name, inside every host's namespace, of the veth that
// joins it to the fabric's bridge when Options.Bypass is set.
const bypassName = "scnk0"

// hostRoutes is a host's side of the bypass: a netlink socket opened in its
// namespace (a route then changes in one system call, so a fault's start
// is not held up by an exec of ip), the index of its TUN device, and the
// destinations its packets currently reach through the shaper.
type hostRoutes struct {
	nl     *netlink.Handle
	tun    int // index of the TUN device
	shaped map[int]bool
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
	h.routes = &hostRoutes{nl: nl, shaped: map[int]bool{}}
	tun, err := nl.LinkByName(tunName)
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", tunName, h.ns, err)
	}
	h.routes.tun = tun.Attrs().Index
	return runIP(ctx, f.ip, "-n", h.ns, "route", "add", subnet.String(), "dev", bypassName, "src", h.Addr.String())
}

// untouched reports whether l leaves every packet as it is, so that its
// pair can take the kernel's path.
func untouched(l shaper.Link) bool {
	return !l.Down && l.Delay <= 0 && l.Jitter <= 0 && l.Loss <= 0 && l.Rate <= 0
}

// routeLink moves c's pair onto the TUN device when its link shapes
// anything, and back onto the bridge when it no longer does: a route to
// the destination's address alone, through the TUN device, overrides the
// subnet's route through the veth. The shaper already holds the new link,
// so a packet that reaches it after the move is shaped as declared; one
// still queued in it from before leaves as it was shaped.
func (f *Fabric) routeLink(c LinkChange) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	rt := c.From.routes
	if f.closed || rt == nil {
		return nil
	}
	shaped := !untouched(c.Link)
	if shaped == rt.shaped[c.To.ID] {
		return nil
	}
	r := &netlink.Route{
		LinkIndex: rt.tun,
		Dst:       &net.IPNet{IP: c.To.Addr.AsSlice(), Mask: net.CIDRMask(32, 32)},
		Src:       c.From.Addr.AsSlice(),
		Scope:     netlink.SCOPE_LINK,
	}
	if shaped {
		if err := rt.nl.RouteReplace(r); err != nil {
			return fmt.Errorf("fabric: route %s>%s through the shaper: %w", c.From.Name, c.To.Name, err)
		}
		rt.shaped[c.To.ID] = true
		return nil
	}
	if err := rt.nl.RouteDel(r); err != nil {
		return fmt.Errorf("fabric: route %s>%s through the kernel: %w", c.From.Name, c.To.Name, err)
	}
	delete(rt.shaped, c.To.ID)
	return nil
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
	}
	if err := runIP(ctx, f.ip, "netns", "delete", f.bridge); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
