package fabric

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/coordlab/scenario/fabric/shaper"
	"github.com/coordlab/scenario/internal/proc"
)

// HostSpec declares one host.
type HostSpec struct {
	// Name is unique in the fabric: a node name ("n1") or a client region
	// ("client-east").
	Name string
	// Region is where the host sits; links are declared between regions.
	Region string
	// AttachPID, when not 0, makes the host the existing network
	// namespace of that process (a container's, say) instead of a new
	// one: the fabric names it, adds its TUN device, address and route,
	// and at Close removes those and the name, never the namespace.
	AttachPID int
}

// Host is one network namespace with its address.
type Host struct {
	ID     int
	Name   string
	Region string
	Addr   netip.Addr
	ns     string // namespace name
	attach int    // pid whose namespace this is; 0 for one the fabric made
	tun    *os.File
	out    *os.File // the socket delivering frames, with Options.PacketWrites
	ip     string   // iproute2 binary

	// Guarded by the Fabric's mu: whether the TUN device hands over TCP
	// segments of up to 64 KiB, and which of the host's outgoing links
	// act per packet, which such segments would defeat.
	tso       bool
	perPacket map[int]bool // by destination host id

	routes  *hostRoutes // with Options.Bypass
	bridged bool        // a veth pair joins the namespace to the fabric's bridge
	// rpFilter is an attached namespace's own reverse-path filtering
	// (net.ipv4.conf.all.rp_filter) before the bypass turned it off; Close
	// puts it back. "" if untouched.
	rpFilter string
}

// NetnsPath is where the host's namespace is pinned.
func (h *Host) NetnsPath() string { return netnsPath(h.ns) }

// netnsPath is where the namespace named ns is pinned.
func netnsPath(ns string) string { return filepath.Join(netnsDir, ns) }

// Dial opens a connection from inside the host's namespace. Its signature
// fits grpc.WithContextDialer.
func (h *Host) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return dialIn(ctx, h.NetnsPath(), "tcp", addr)
}

// DialNetwork is Dial for any network ("udp", ...).
func (h *Host) DialNetwork(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialIn(ctx, h.NetnsPath(), network, addr)
}

// Command returns the path and arguments that run path with args inside the
// host's namespace. `ip netns exec` replaces itself with the program, so the
// pid the caller sees is the program's own.
func (h *Host) Command(path string, args []string) (string, []string) {
	return h.ip, append([]string{"netns", "exec", h.ns, path}, args...)
}

// Options configure New.
type Options struct {
	// RunID names the run the fabric belongs to.
	RunID string
	// Engage sends every packet through the shaper's scheduler even on
	// links with no effect (for overhead measurements).
	Engage bool
	// Seed makes loss and jitter draws reproducible.
	Seed int64
	// Logger receives setup and teardown events; nil discards them.
	Logger *slog.Logger
	// NoOffload makes every TUN device hand the shaper packets of the
	// device's MTU, as before offloads were used (for measuring what the
	// offloads save). By default a host's device hands over TCP segments
	// of up to 64 KiB while none of its outgoing links drops, jitters or
	// limits the rate of packets (see SetLinks).
	NoOffload bool
	// PlainReads makes the shaper read each frame with a read(2) of its
	// own, not in batches through io_uring (shaper.Options.PlainReads;
	// for measuring what the ring saves).
	PlainReads bool
	// Bypass sends the packets of a pair whose link shapes nothing (no
	// delay, jitter, loss, rate or cut) through the kernel, not the
	// shaper: every host is joined to a bridge by a veth pair as well, the
	// subnet is routed through it, and a pair whose link comes to shape
	// something is routed through the TUN device again by a route to its
	// destination alone. Such a pair then costs what it costs on the
	// kernel reference network (see Kernel) instead of a read and a
	// write of every packet in the shaper, and the shaper's counters
	// (Stats) see only the shaped pairs. Without it every packet goes
	// through the shaper, as Engage measures.
	Bypass bool
	// Kernel builds the reference network instead of the shaper: every
	// host joined by a veth pair to a bridge in a namespace of the
	// fabric's own, partitions made by iptables. Links can only be cut.
	Kernel bool
	// PacketWrites keeps each host's TUN device for the frames it sends,
	// and delivers what the shaper's pair schedulers write to it in
	// batches through a veth pair and an AF_PACKET socket (one
	// sendmmsg(2) for the frames a pair sends at one wake-up) instead of
	// a write(2) a frame to the TUN device, for measuring what that saves
	// (see packet.go). Not in attached namespaces, nor with Kernel.
	PacketWrites bool
	// BusyPoll is the shaper's busy-poll window (shaper.Options.BusyPoll):
	// its schedulers spin through the last BusyPoll before each packet is
	// due. 0 sleeps.
	BusyPoll time.Duration

	// leaveBusy replaces the default leaveBusy (tests).
	leaveBusy time.Duration
}

// Fabric is the set of hosts of one run and the shaper between them.
type Fabric struct {
	hosts   []*Host
	byName  map[string]*Host
	router  *shaper.Router // nil on the kernel backend
	kernel  *kernelNet     // nil on the shaper
	bridge  string         // the namespace of the bridge (kernel backend, bypass); "" if none
	packets string         // the namespace of the delivering veths' outer ends (Options.PacketWrites); "" if none
	vnet    bool           // TUN frames carry virtio-net headers (offloads)
	log     *slog.Logger
	ip      string

	cancel context.CancelFunc
	done   chan error

	mu     sync.Mutex
	closed bool
	// reads is the outcome of checkReads, once it ran.
	reads ReadCheck
	// stop ends the waits of pairs leaving the shaper (routeLink) when
	// the fabric closes.
	stop chan struct{}
	// leaveBusy is how long a healed pair that keeps sending stays in the
	// shaper (leaveShaper).
	leaveBusy time.Duration
}

// subnet is the private range every fabric's hosts live in. Each run has
// its own namespaces, so runs never see each other's addresses.
var subnet = netip.MustParsePrefix("10.99.0.0/16")

// hostAddr is the address of the i-th host (0-based): 10.99.0.1 up.
func hostAddr(i int) netip.Addr {
	b := subnet.Addr().As4()
	n := i + 1
	b[2], b[3] = byte(n>>8), byte(n)
	return netip.AddrFrom4(b)
}

// nsPrefix starts every namespace this package creates.
const nsPrefix = "scn-"

// nsName is "scn-<owner pid>-<run id suffix>-<host>": the pid lets Reap
// tell a live run's namespaces from a dead one's.
func nsName(runID, host string) string {
	return fmt.Sprintf("%s%d-%s-%s", nsPrefix, os.Getpid(), runID, host)
}

// Available reports why this process cannot build a fabric, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("network shaping and partitions need root (network namespaces and TUN devices need CAP_NET_ADMIN and CAP_SYS_ADMIN); run as root, or drop the network block and network faults to run on loopback")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("network shaping needs /dev/net/tun: %w", err)
	}
	if _, err := ipBinary(); err != nil {
		return err
	}
	return nil
}

// New creates a namespace, an address and a TUN device per host and starts
// forwarding between them with every link unshaped. On error, whatever was
// created is removed again.
func New(ctx context.Context, specs []HostSpec, opts Options) (_ *Fabric, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if len(specs) == 0 || len(specs) > 250 {
		return nil, fmt.Errorf("fabric: %d hosts, want 1 to 250", len(specs))
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ip, _ := ipBinary()
	f := &Fabric{
		byName: map[string]*Host{},
		log:    log,
		ip:     ip,
		stop:   make(chan struct{}),

		leaveBusy: cmp.Or(opts.leaveBusy, leaveBusy),
	}
	if opts.PacketWrites && opts.Kernel {
		return nil, errors.New("fabric: delivery through packet sockets goes only with the shaper")
	}
	if !opts.Kernel {
		f.vnet = !opts.NoOffload
		f.router = shaper.New(shaper.Options{Engage: opts.Engage, PlainReads: opts.PlainReads, Seed: opts.Seed, Logger: log,
			HeaderLen: f.headerLen(), MarkAddr: markAddr, BusyPoll: opts.BusyPoll})
	}
	defer func() {
		if err != nil {
			if cerr := f.Close(context.WithoutCancel(ctx)); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}()
	switch {
	case opts.Kernel:
		if err := f.startSwitch(ctx, opts.RunID); err != nil {
			return nil, fmt.Errorf("fabric: switch: %w", err)
		}
	case opts.Bypass:
		if err := f.makeBridge(ctx, opts.RunID); err != nil {
			return nil, fmt.Errorf("fabric: bypass bridge: %w", err)
		}
	}
	if opts.PacketWrites {
		if err := f.makePacketNS(ctx, opts.RunID); err != nil {
			return nil, fmt.Errorf("fabric: delivery through packet sockets: %w", err)
		}
	}
	for i, s := range specs {
		if _, dup := f.byName[s.Name]; dup {
			return nil, fmt.Errorf("fabric: host %q declared twice", s.Name)
		}
		h := &Host{ID: i, Name: s.Name, Region: s.Region, Addr: hostAddr(i), ns: nsName(opts.RunID, s.Name), attach: s.AttachPID, ip: ip}
		if opts.PacketWrites && h.attach != 0 {
			return nil, fmt.Errorf("fabric: host %q: delivery through packet sockets goes only in namespaces the fabric makes", s.Name)
		}
		if err := f.addHost(ctx, h); err != nil {
			return nil, fmt.Errorf("fabric: host %s: %w", s.Name, err)
		}
	}
	if f.router != nil {
		rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f.cancel = cancel
		f.done = make(chan error, 1)
		go func() { f.done <- f.router.Run(rctx) }()
	}
	log.Info("network fabric up", "hosts", len(f.hosts), "backend", f.Backend())
	return f, nil
}

// headerLen is how many bytes come before the IPv4 packet in a frame of
// the hosts' TUN devices: a virtio-net header with offloads, else none.
func (f *Fabric) headerLen() int {
	if f.vnet {
		return vnetHeaderLen
	}
	return 0
}

// bypassing reports whether unshaped pairs go through the bridge rather
// than the shaper (Options.Bypass): a bridge without the kernel backend.
func (f *Fabric) bypassing() bool { return f.bridge != "" && f.kernel == nil }

// Backend names the fabric's mechanism, for results.json.
func (f *Fabric) Backend() string {
	switch {
	case f.kernel != nil:
		return KernelBackend
	case f.bypassing() && f.packets != "":
		return BypassPacketWritesBackend
	case f.bypassing():
		return BypassBackend
	case f.packets != "":
		return PacketWritesBackend
	}
	return Backend
}

// Backend and BypassBackend name the shaping mechanism, for results.json:
// every pair through the shaper, or only the pairs whose link shapes
// something (Options.Bypass).
const (
	Backend       = "userspace (TUN router)"
	BypassBackend = "userspace (TUN router) for shaped pairs, kernel (veth to a bridge) for the others"
	// PacketWritesBackend and BypassPacketWritesBackend are Backend and
	// BypassBackend with the shaper delivering in batches through packet
	// sockets (Options.PacketWrites).
	PacketWritesBackend       = "userspace (TUN router, deliveries batched through packet sockets)"
	BypassPacketWritesBackend = BypassBackend + "; the shaper's deliveries batched through packet sockets"
)

func (f *Fabric) addHost(ctx context.Context, h *Host) error {
	create := []string{"netns", "add", h.ns}
	if h.attach != 0 {
		// A name for the process's namespace, so that it is handled like
		// the others; deleting the name later leaves the namespace, which
		// lives as long as its processes.
		create = []string{"netns", "attach", h.ns, strconv.Itoa(h.attach)}
	}
	if err := runIP(ctx, f.ip, create...); err != nil {
		return err
	}
	// Registered before anything else can fail, so Close removes it.
	f.hosts = append(f.hosts, h)
	f.byName[h.Name] = h
	if f.kernel != nil {
		return f.addKernelHost(ctx, h)
	}
	tun, err := openTUN(h.NetnsPath(), f.vnet)
	if err != nil {
		return err
	}
	h.tun, h.tso = tun, f.vnet
	var dev io.ReadWriter = tun
	for _, args := range [][]string{
		{"-n", h.ns, "link", "set", "lo", "up"},
		{"-n", h.ns, "addr", "add", h.Addr.String() + "/32", "dev", tunName},
		{"-n", h.ns, "link", "set", tunName, "up"},
	} {
		if err := runIP(ctx, f.ip, args...); err != nil {
			return err
		}
	}
	if f.packets != "" {
		out, err := f.addDelivery(ctx, h)
		if err != nil {
			return err
		}
		h.out = out
		dev = &deliveringTUN{File: h.tun, out: out, eth: ethHeader(), hlen: f.headerLen()}
	}
	if f.bypassing() {
		if err := f.addBypass(ctx, h); err != nil {
			return err
		}
	} else if err := runIP(ctx, f.ip, "-n", h.ns, "route", "add", subnet.String(), "dev", tunName, "src", h.Addr.String()); err != nil {
		return err
	}
	return f.router.AddHost(h.ID, h.Addr, dev)
}

// Hosts lists the hosts in declaration order.
func (f *Fabric) Hosts() []*Host { return f.hosts }

// Host returns the host named name, or nil.
func (f *Fabric) Host(name string) *Host { return f.byName[name] }

// SetLink shapes the traffic from one host to another from now on. On the
// kernel backend a link can only be cut (Down, with or without Reject).
func (f *Fabric) SetLink(from, to *Host, l shaper.Link) error {
	return f.SetLinks(context.Background(), []LinkChange{{From: from, To: to, Link: l}})
}

// SetLinks applies several links' changes at once, which the kernel backend
// does with one iptables-restore per destination.
func (f *Fabric) SetLinks(ctx context.Context, changes []LinkChange) error {
	if f.kernel != nil {
		return f.setKernelLinks(ctx, changes)
	}
	var errs []error
	for _, c := range changes {
		// Segmentation offload off before a link acts per packet, so that
		// loss, jitter and rate apply to packets of the MTU, as on a
		// wire; a segment already queued or in flight is still shaped
		// whole.
		if err := f.trackPerPacket(c); err != nil {
			errs = append(errs, err)
		}
		f.router.SetLink(c.From.ID, c.To.ID, c.Link)
		if err := f.routeLink(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// trackPerPacket records whether c's link acts on each packet
// (shaper.Link.PerPacket) and switches its source's TCP segmentation offload off
// while any of that host's outgoing links does, on again once none does.
func (f *Fabric) trackPerPacket(c LinkChange) error {
	if !f.vnet {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := c.From
	if f.closed || h.tun == nil {
		return nil
	}
	if c.Link.PerPacket() {
		if h.perPacket == nil {
			h.perPacket = map[int]bool{}
		}
		h.perPacket[c.To.ID] = true
	} else {
		delete(h.perPacket, c.To.ID)
	}
	want := len(h.perPacket) == 0
	if want == h.tso {
		return nil
	}
	sc, err := h.tun.SyscallConn()
	if err != nil {
		return fmt.Errorf("fabric: host %s: %w", h.Name, err)
	}
	var serr error
	if err := sc.Control(func(fd uintptr) { serr = setOffload(int(fd), want) }); err != nil {
		return fmt.Errorf("fabric: host %s: %w", h.Name, err)
	}
	if serr != nil {
		return fmt.Errorf("fabric: host %s: %w", h.Name, serr)
	}
	h.tso = want
	return nil
}

// Stats reports the shaper's per-pair counters, keyed "from>to".
func (f *Fabric) Stats() map[string]shaper.PairStats {
	out := map[string]shaper.PairStats{}
	if f.router == nil {
		return out
	}
	for k, v := range f.router.Stats() {
		out[f.hosts[k[0]].Name+">"+f.hosts[k[1]].Name] = v
	}
	return out
}

// Pairs snapshots the shaper's counters of each ordered pair of hosts it
// has carried a packet of so far, keyed {from, to} by host name, with how
// late it handed on the packets it held (see shaper.PairCounts). Pairs the
// kernel carries (the bypass, the kernel reference) are not among them.
func (f *Fabric) Pairs() map[[2]string]*shaper.PairCounts {
	out := map[[2]string]*shaper.PairCounts{}
	if f.router == nil {
		return out
	}
	for k, v := range f.router.PairCounts() {
		out[[2]string{f.hosts[k[0]].Name, f.hosts[k[1]].Name}] = v
	}
	return out
}

// Drops counts the frames the fabric lost that no link declared, so far:
// those a host's TUN device dropped because its queue (tunQueueLen
// frames) was full when the shaper had not read it in time, those a
// pair's queue refused at its limit, and (Options.PacketWrites) those a
// host's delivering veth could not hand its namespace (its backlog full,
// or the device down). A link's declared loss and its cuts are not
// counted. On the kernel reference, which has none of these, it is 0.
func (f *Fabric) Drops() (uint64, error) {
	if f.router == nil {
		return 0, nil
	}
	n := f.router.QueueDrops()
	for _, h := range f.hosts {
		if h.tun == nil {
			continue
		}
		tx, err := deviceTX(h.NetnsPath())
		if err != nil {
			return n, fmt.Errorf("fabric: host %s: %w", h.Name, err)
		}
		n += tx.dropped
	}
	d, err := f.deliveryDrops()
	return n + d, err
}

// Frames counts the frames the shaper has read from the hosts' devices so
// far: every frame of a pair the shaper carries (a shaped pair's, or
// every pair's without the bypass), whatever its link then does with it.
// Frames that pairs on the kernel's path exchange are not counted, nor
// those a device dropped before the shaper read them (see Drops). On the
// kernel reference it is 0.
func (f *Fabric) Frames() uint64 {
	if f.router == nil {
		return 0
	}
	return f.router.FramesRead()
}

// checkReads compares, once the shaper has stopped, each device's count of
// the frames it handed its reader with the shaper's count of the frames it
// read. They differ only where the shaper lost frames it had read, which no
// other count shows (a ring reader once did: TCP retransmitted them, and
// the run's latencies carried it), so a difference is logged as an error
// and kept for ReadsLost.
func (f *Fabric) checkReads() {
	read := f.router.HostStats()
	var lost, total uint64
	for _, h := range f.hosts {
		if h.tun == nil {
			continue
		}
		tx, err := deviceTX(h.NetnsPath())
		if err != nil {
			f.log.Warn("shaper's reads not checked", "host", h.Name, "err", err)
			return
		}
		switch got := read[h.ID].Read; {
		case got < tx.packets:
			f.log.Error("the shaper lost frames its device handed it (a bug in scenario: they were retransmitted, and the latencies measured carry it)",
				"host", h.Name, "device", tx.packets, "shaper", got)
			lost += tx.packets - got
		case got > tx.packets:
			// No frame comes from elsewhere: the counts themselves are wrong.
			f.log.Error("the shaper counted more frames than its device handed it (a bug in scenario's counters)",
				"host", h.Name, "device", tx.packets, "shaper", got)
		}
		total += tx.packets
	}
	f.log.Debug("shaper's reads checked against the devices' counts", "frames", total, "lost", lost)
	f.reads = ReadCheck{Checked: true, Frames: total, Lost: lost}
}

// ReadCheck is the shaper's check of its own reads (see Reads).
type ReadCheck struct {
	// Checked says whether the check ran: once Close has stopped the
	// shaper, and only on the shaper.
	Checked bool
	// Frames counts the frames the devices handed the shaper over the
	// fabric's life, and Lost those it lost after reading them (0 where
	// it works).
	Frames, Lost uint64
}

// Reads reports the shaper's check of its own reads.
func (f *Fabric) Reads() ReadCheck {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// Close stops forwarding and deletes every namespace, which removes its
// TUN device and everything configured in it. It is idempotent.
func (f *Fabric) Close(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	close(f.stop)
	var errs []error
	if f.cancel != nil {
		f.cancel()
	}
	stopped := false
	if f.done != nil {
		// The readers stop on the cancel (a read deadline), so the devices
		// can be read before they close.
		select {
		case <-f.done:
			stopped = true
			f.checkReads()
		case <-time.After(time.Second):
		}
	}
	for _, h := range f.hosts {
		if h.tun != nil {
			h.tun.Close()
		}
		if h.out != nil {
			h.out.Close()
		}
	}
	if f.done != nil && !stopped {
		select {
		case <-f.done:
		case <-time.After(5 * time.Second):
			errs = append(errs, errors.New("fabric: shaper did not stop"))
		}
	}
	if f.kernel != nil {
		errs = append(errs, f.closeKernel(ctx)...)
	}
	if f.bridge != "" {
		if err := f.closeBridge(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if f.packets != "" {
		// Deleting the namespace deletes every veth pair, both ends.
		if err := runIP(ctx, f.ip, "netns", "delete", f.packets); err != nil {
			errs = append(errs, err)
		}
	}
	for _, h := range f.hosts {
		// For an attached namespace this removes only the name: the TUN
		// device, with its address and route, went when its file was
		// closed above (it is not persistent), and the namespace lives on
		// with its processes.
		if err := runIP(ctx, f.ip, "netns", "delete", h.ns); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		f.log.Info("network fabric removed", "hosts", len(f.hosts))
	}
	return errors.Join(errs...)
}

// nsPattern matches this package's namespace names and captures the owner.
var nsPattern = regexp.MustCompile(`^` + nsPrefix + `(\d+)-`)

// Reap deletes the namespaces of fabrics whose owning process is gone (a
// runner killed with SIGKILL) and returns their names. Namespaces of live
// runners, this one's included, are left alone.
func Reap(ctx context.Context, log *slog.Logger) ([]string, error) {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reap namespaces: %w", err)
	}
	ip, err := ipBinary()
	if err != nil {
		return nil, err
	}
	var reaped []string
	var errs []error
	for _, e := range entries {
		m := nsPattern.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if proc.Alive(pid) {
			continue
		}
		if err := runIP(ctx, ip, "netns", "delete", e.Name()); err != nil {
			errs = append(errs, err)
			continue
		}
		if log != nil {
			log.Info("removed a killed run's namespace", "netns", e.Name())
		}
		reaped = append(reaped, e.Name())
	}
	return reaped, errors.Join(errs...)
}

// OneWay is the shaping of each direction of a path declared by its round
// trip: half the RTT each way; jitter (the standard deviation of a normal
// delay variation) split so that round trips vary with a standard
// deviation of the declared jitter, as two independent directions add
// their variances; loss (in percent) and bandwidth (bits/s) apply to each
// direction. It is the one place a round trip becomes per-direction
// shaping.
func OneWay(rtt, jitter time.Duration, lossPercent float64, bandwidth int64) shaper.Link {
	return shaper.Link{
		Delay:  rtt / 2,
		Jitter: JitterPerDirection(jitter),
		Loss:   lossPercent / 100,
		Rate:   bandwidth,
	}
}

// JitterPerDirection is the per-direction jitter that makes round trips
// vary with a standard deviation of rtt (see OneWay).
func JitterPerDirection(rtt time.Duration) time.Duration {
	return time.Duration(float64(rtt) / math.Sqrt2)
}
