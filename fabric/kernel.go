package fabric

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/coordlab/scenario/fabric/shaper"
)

// KernelBackend names the reference network: hosts joined by veth pairs to
// a Linux bridge, partitions made by iptables in each destination's INPUT
// chain. It shapes nothing (this kernel has no sch_netem); it exists so
// that the shaper's partitions can be checked against the kernel's.
const KernelBackend = "kernel (veth to a bridge, iptables partitions)"

const (
	bridgeName = "br0"
	// cutChain holds a host's partition rules; INPUT jumps to it.
	cutChain = "SCN-CUT"
)

// kernelNet is the state of a kernel-backed fabric: the cuts in force per
// destination host (the bridge is the Fabric's).
type kernelNet struct {
	iptables string

	mu   sync.Mutex
	cuts map[[2]int]shaper.Link // (from, to) host ids: Down links
}

// kernelAvailable says why the kernel backend cannot run here, or nil.
func kernelAvailable() (string, error) {
	p, err := exec.LookPath("iptables")
	if err != nil {
		return "", fmt.Errorf("the kernel network backend needs iptables (apt-get install iptables): %w", err)
	}
	return p, nil
}

// startSwitch makes the kernel backend's switch (see makeBridge).
func (f *Fabric) startSwitch(ctx context.Context, runID string) error {
	ipt, err := kernelAvailable()
	if err != nil {
		return err
	}
	if err := f.makeBridge(ctx, runID); err != nil {
		return err
	}
	f.kernel = &kernelNet{iptables: ipt, cuts: map[[2]int]shaper.Link{}}
	return nil
}

// makeBridge creates the namespace and bridge every host's veth joins, for
// the kernel backend or the shaper's bypass. Nothing is configured in the
// namespace this process runs in.
func (f *Fabric) makeBridge(ctx context.Context, runID string) error {
	sw := nsName(runID, "switch")
	if err := runIP(ctx, f.ip, "netns", "add", sw); err != nil {
		return err
	}
	f.bridge = sw // from here Close removes it
	for _, args := range [][]string{
		{"-n", sw, "link", "set", "lo", "up"},
		{"-n", sw, "link", "add", bridgeName, "type", "bridge"},
		{"-n", sw, "link", "set", bridgeName, "up"},
	} {
		if err := runIP(ctx, f.ip, args...); err != nil {
			return err
		}
	}
	return nil
}

// addKernelHost joins h's namespace to the bridge by a veth pair whose
// host end is named like the TUN device of the shaper's fabric, and gives
// it its address and an empty partition chain.
func (f *Fabric) addKernelHost(ctx context.Context, h *Host) error {
	if err := runIP(ctx, f.ip, "-n", h.ns, "link", "set", "lo", "up"); err != nil {
		return err
	}
	if err := f.joinBridge(ctx, h, tunName, subnet.Bits()); err != nil {
		return err
	}
	return f.kernel.restore(ctx, f.ip, h.ns, []string{"*filter", ":" + cutChain + " - [0:0]", "-I INPUT -j " + cutChain, "COMMIT"})
}

// joinBridge connects h's namespace to the bridge by a veth pair whose end
// in h's namespace is named dev and carries h's address with a prefix of
// bits.
func (f *Fabric) joinBridge(ctx context.Context, h *Host, dev string, bits int) error {
	veth := vethName(h)
	for _, args := range [][]string{
		{"-n", f.bridge, "link", "add", veth, "type", "veth", "peer", "name", dev, "netns", h.ns},
		{"-n", f.bridge, "link", "set", veth, "master", bridgeName, "up"},
		{"-n", h.ns, "addr", "add", h.Addr.String() + "/" + strconv.Itoa(bits), "dev", dev},
		{"-n", h.ns, "link", "set", dev, "up"},
	} {
		if err := runIP(ctx, f.ip, args...); err != nil {
			return err
		}
		h.bridged = true
	}
	return nil
}

// vethName is the bridge's end of h's veth pair.
func vethName(h *Host) string { return fmt.Sprintf("v%d", h.ID) }

// restore feeds rules to iptables-restore in namespace ns, without
// flushing what the rules do not name.
func (k *kernelNet) restore(ctx context.Context, ip, ns string, lines []string) error {
	cmd := exec.CommandContext(ctx, ip, "netns", "exec", ns, k.iptables+"-restore", "--noflush")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore in %s: %w: %s", ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// LinkChange is one ordered pair's new shaping, for SetLinks.
type LinkChange struct {
	From, To *Host
	Link     shaper.Link
}

// setKernelLinks puts the changed cuts into force: each destination whose
// cuts changed gets its chain rewritten in one iptables-restore, the
// destinations in parallel.
func (f *Fabric) setKernelLinks(ctx context.Context, changes []LinkChange) error {
	k := f.kernel
	k.mu.Lock()
	defer k.mu.Unlock()
	dirty := map[int]*Host{}
	for _, c := range changes {
		l := c.Link
		l.Reject = false
		if l.Down {
			l = shaper.Link{Down: true}
		}
		if l != (shaper.Link{}) && !l.Down {
			return fmt.Errorf("fabric: the kernel backend only cuts links (no netem here): %s -> %s asks for %+v", c.From.Name, c.To.Name, c.Link)
		}
		key := [2]int{c.From.ID, c.To.ID}
		if c.Link.Down {
			k.cuts[key] = shaper.Link{Down: true, Reject: c.Link.Reject}
		} else {
			delete(k.cuts, key)
		}
		dirty[c.To.ID] = c.To
	}
	var wg sync.WaitGroup
	errs := make([]error, len(f.hosts))
	for id, to := range dirty {
		lines := []string{"*filter", "-F " + cutChain}
		var froms []int
		for key := range k.cuts {
			if key[1] == id {
				froms = append(froms, key[0])
			}
		}
		slices.Sort(froms)
		for _, from := range froms {
			src := f.hosts[from].Addr.String()
			if k.cuts[[2]int{from, id}].Reject {
				// The answers of the far side's REJECT come back across
				// the cut: a firewall lets its own answers out, and the
				// shaper writes them straight back to the sender. Without
				// these, a cut both ways would drop them here.
				lines = append(lines,
					"-A "+cutChain+" -s "+src+" -p tcp --tcp-flags RST RST -j ACCEPT",
					"-A "+cutChain+" -s "+src+" -p icmp --icmp-type destination-unreachable -j ACCEPT",
					"-A "+cutChain+" -s "+src+" -p tcp -j REJECT --reject-with tcp-reset",
					"-A "+cutChain+" -s "+src+" -j REJECT --reject-with icmp-port-unreachable")
			} else {
				lines = append(lines, "-A "+cutChain+" -s "+src+" -j DROP")
			}
		}
		lines = append(lines, "COMMIT")
		wg.Go(func() { errs[id] = k.restore(ctx, f.ip, to.ns, lines) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// closeKernel empties the partition chain of attached namespaces, which
// outlive the fabric. Close then removes the switch namespace, which
// deletes every veth pair (a veth goes with either end).
func (f *Fabric) closeKernel(ctx context.Context) []error {
	var errs []error
	for _, h := range f.hosts {
		if h.attach != 0 {
			if err := f.kernel.restore(ctx, f.ip, h.ns, []string{"*filter", "-F " + cutChain, "COMMIT"}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}
