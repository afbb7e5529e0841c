package shaper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coordlab/scenario/internal/hrsleep"
)

// Link is the shaping of one direction between two hosts. The zero Link
// passes packets through untouched.
type Link struct {
	// Delay is the one-way delay added to every packet (the runner sets
	// rtt/2 per direction).
	Delay time.Duration
	// Jitter is the standard deviation of a normal variation added to
	// each packet's delay; the drawn delay is clamped at 0. Because a pair
	// never reorders, a packet drawn earlier than its predecessor leaves
	// right after it instead, so when packets are closer together than
	// the jitter, the spread shrinks and the mean grows.
	Jitter time.Duration
	// Loss is the probability that a packet is dropped, drawn
	// independently per packet; 0 or less never drops, 1 or more always.
	Loss float64
	// Rate is the link's bandwidth in bits per second; 0 is unlimited.
	Rate int64
	// Down drops every packet: a partition.
	Down bool
	// Reject, with Down, answers each dropped packet as a firewall's
	// REJECT does: a TCP reset for TCP, an ICMP port unreachable for
	// anything else, sent back to the source. Without it a cut is silent,
	// as a cable cut or a DROP rule is.
	Reject bool
}

// immediate reports whether a packet that survives Down and Loss can be
// written at once.
func (l *Link) immediate() bool { return l.Delay <= 0 && l.Jitter <= 0 && l.Rate <= 0 }

// Untouched reports whether the link leaves every packet as it is: no
// cut, no loss and nothing to wait for. Such a pair needs no shaper at all
// (the fabric then routes it through the kernel).
func (l Link) Untouched() bool { return !l.Down && l.Loss <= 0 && l.immediate() }

// PerPacket reports whether the link acts on each packet on its own: a
// loss or jitter draw, or a rate that spaces packets by their size. A
// TCP segment of 64 KiB must then be cut into the packets of the MTU it
// stands for before it is shaped. A delay, a partition or nothing at all
// acts alike on a segment and on the packets it stands for.
func (l Link) PerPacket() bool { return l.Loss > 0 || l.Jitter > 0 || l.Rate > 0 }

// Options configure a Router.
type Options struct {
	// Engage queues every packet through the per-pair scheduler even when
	// its link adds no delay (used by the overhead benchmark to measure
	// the engaged path). By default such a packet is written by the
	// reading goroutine at once.
	Engage bool
	// PlainReads makes the router read each frame with a read(2) of its
	// own, as it did before it read devices through io_uring (for
	// measuring what the ring saves). Where io_uring is unavailable, or a
	// device is no file descriptor with a read deadline, frames are read
	// so anyway.
	PlainReads bool
	// QueueLimit is how many packets a pair holds (waiting for their due
	// time or being written) before it drops new ones; 0 means 10000.
	QueueLimit int
	// Seed seeds the loss and jitter draws: for the same packets read in
	// the same order per host, the same ones are dropped and delayed
	// alike.
	Seed int64
	// Logger receives start, stop and error events; nil discards them.
	Logger *slog.Logger
	// BusyPoll has each pair's scheduler spin through the last BusyPoll
	// before a packet is due instead of sleeping through it
	// (hrsleep.NewSpinning): packets leave within a few microseconds of
	// their due time on a quiet machine, for up to a core while packets
	// come closer together than BusyPoll. 0 sleeps.
	BusyPoll time.Duration
	// HeaderLen is how many bytes come before the IPv4 packet in every
	// frame a device reads and writes: a virtio-net header on a TUN
	// device opened with IFF_VNET_HDR, so that the kernel can hand over
	// TCP segments of up to 64 KiB (TSO) and leave checksums to the
	// receiving stack. The router forwards a frame as read, header and
	// all, and writes zeros (no offload asked) before the replies it
	// makes. 0: frames are bare IPv4 packets.
	HeaderLen int
	// MarkAddr, when valid, is an address no host has whose UDP
	// datagrams are marks: the router forwards none of them, and keeps
	// per host the number in the first 8 bytes (big-endian) of the last
	// one read (Marked). Since a device is read in order, a mark sent
	// after some packets tells when the router has read them all.
	MarkAddr netip.Addr
}

// DefaultQueueLimit is the QueueLimit used when Options leaves it 0.
const DefaultQueueLimit = 10000

const (
	// maxPacket bounds an IPv4 packet (its total length is 16 bits).
	maxPacket = 65535
	// ipv4HeaderLen is the minimal IPv4 header: enough to read the
	// destination address.
	ipv4HeaderLen = 20
)

// Router forwards IPv4 packets between hosts' devices, shaping each
// ordered pair of hosts by its Link.
type Router struct {
	opts  Options
	limit int64
	hlen  int // Options.HeaderLen
	log   *slog.Logger
	epoch time.Time // origin of the monotonic nanosecond clock of now

	// newSleeper makes each pair scheduler's sleeper: hrsleep.NewDual,
	// whose read deadline wakes a scheduler on time while the runner's Ps
	// are busy (a timerfd alone then waits for sysmon, up to 10 ms), or
	// another that benchmarks compare with it.
	newSleeper func(context.Context) hrsleep.Sleeper

	mu      sync.Mutex
	hosts   []*host
	byID    map[int]*host
	links   map[[2]int]Link // by host id, as set
	started bool

	// Read-only once Run starts (AddHost refuses from then on).
	byAddr map[[4]byte]int // destination address to host index
	mark   [4]byte         // Options.MarkAddr
	marks  bool            // Options.MarkAddr is valid

	// table is the links by host index, republished whole on every change
	// so that readers take no lock.
	table atomic.Pointer[linkTable]

	// schedulers counts the pair goroutines of a Run; readers start them.
	schedulers sync.WaitGroup

	plainReads  sync.Once    // logs once that readers read frame by frame
	ringReaders atomic.Int32 // readers that read their device through an io_uring
	watch       *readerWatch // wakes ring readers the poller left waiting
}

type linkTable struct {
	n     int
	links []Link // [from*n+to]
}

// host is one registered device and its per-destination pairs.
type host struct {
	id   int
	idx  int
	addr netip.Addr
	dev  io.ReadWriter
	out  []*pair // by destination index

	read, notIPv4, noRoute atomic.Uint64
	mark                   atomic.Uint64 // the number of the last mark read
}

// New returns a Router with no hosts.
func New(opts Options) *Router {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	limit := int64(opts.QueueLimit)
	if limit <= 0 {
		limit = DefaultQueueLimit
	}
	r := &Router{
		opts:       opts,
		limit:      limit,
		hlen:       max(opts.HeaderLen, 0),
		log:        log,
		epoch:      time.Now(),
		newSleeper: hrsleep.NewDual,
		watch:      newReaderWatch(),
		byID:       map[int]*host{},
		links:      map[[2]int]Link{},
		byAddr:     map[[4]byte]int{},
	}
	if a := opts.MarkAddr.Unmap(); a.Is4() {
		r.mark, r.marks = a.As4(), true
	}
	if opts.BusyPoll > 0 {
		r.newSleeper = func(ctx context.Context) hrsleep.Sleeper { return hrsleep.NewSpinning(ctx, opts.BusyPoll) }
	}
	r.table.Store(&linkTable{})
	return r
}

// now is the time since the router's epoch on the monotonic clock, in ns.
func (r *Router) now() int64 { return int64(time.Since(r.epoch)) }

// AddHost registers a host: packets read from dev are routed by their
// destination IPv4 address; packets for addr are written to dev. It must
// be called before Run.
//
// Each Read of dev must return exactly one frame (Options.HeaderLen bytes,
// then one IPv4 packet) and each Write must take one, as a TUN device
// opened with IFF_NO_PI does. Write must be safe
// for concurrent use (an *os.File is) and should not block: it is called
// by the goroutine reading the source host for unshaped packets, and by
// the pair's scheduler otherwise. See Run for how reads are stopped.
func (r *Router) AddHost(id int, addr netip.Addr, dev io.ReadWriter) error {
	addr = addr.Unmap()
	if !addr.Is4() {
		return fmt.Errorf("shaper: host %d: address %v is not IPv4", id, addr)
	}
	if dev == nil {
		return fmt.Errorf("shaper: host %d: nil device", id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return fmt.Errorf("shaper: host %d added after Run", id)
	}
	if _, dup := r.byID[id]; dup {
		return fmt.Errorf("shaper: host %d added twice", id)
	}
	if i, dup := r.byAddr[addr.As4()]; dup {
		return fmt.Errorf("shaper: host %d: address %v is host %d's", id, addr, r.hosts[i].id)
	}
	h := &host{id: id, idx: len(r.hosts), addr: addr, dev: dev}
	r.hosts = append(r.hosts, h)
	r.byID[id] = h
	r.byAddr[addr.As4()] = h.idx
	for _, o := range r.hosts {
		o.out = append(o.out, newPair(o, h))
		if o != h {
			h.out = append(h.out, newPair(h, o))
		}
	}
	// Both loops run in index order, so h.out[i] is the pair h→host i.
	r.publishLocked()
	return nil
}

// SetLink replaces the shaping from host from to host to. It applies to
// packets read after it returns; packets already queued keep their
// schedule. It is safe to call at any time, concurrently with Run; links
// of ids not (yet) added are kept and apply once they are.
func (r *Router) SetLink(from, to int, l Link) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l == (Link{}) {
		delete(r.links, [2]int{from, to})
	} else {
		r.links[[2]int{from, to}] = l
	}
	r.publishLocked()
}

// publishLocked rebuilds the link table for the readers.
func (r *Router) publishLocked() {
	n := len(r.hosts)
	t := &linkTable{n: n, links: make([]Link, n*n)}
	for k, l := range r.links {
		a, b := r.byID[k[0]], r.byID[k[1]]
		if a != nil && b != nil {
			t.links[a.idx*n+b.idx] = l
		}
	}
	r.table.Store(t)
}

// deadliner is implemented by devices whose blocked reads can be
// interrupted, such as an *os.File on a non-blocking TUN descriptor.
type deadliner interface {
	SetReadDeadline(time.Time) error
}

// Run forwards packets until ctx ends, a device read fails, or every
// device is closed, and returns once all of its goroutines have exited.
// It can be called once.
//
// When ctx ends, Run sets a read deadline in the past on every device
// that has SetReadDeadline (an *os.File opened non-blocking on a TUN fd
// does), which unblocks its reader. A device without it must be closed by
// the caller after ctx ends (its Read then returning os.ErrClosed, io.EOF
// or any error), or Run does not return. Packets still queued are
// discarded.
//
// A Read failing with os.ErrClosed, net.ErrClosed or io.EOF stops reading
// that device only; os.ErrDeadlineExceeded while ctx is live is taken for
// a stray deadline, which is cleared. Any other read error stops the
// Router and is returned. Write errors are counted per pair, never fatal.
// Run returns nil when stopped by ctx or by closed devices.
func (r *Router) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("shaper: Run called twice")
	}
	r.started = true
	hosts := r.hosts
	r.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		readers sync.WaitGroup
		errOnce sync.Once
		runErr  error
	)
	r.log.Debug("shaper running", "hosts", len(hosts), "engage", r.opts.Engage)
	var watcher sync.WaitGroup
	watcher.Go(func() { r.watch.run(ctx) })
	for _, h := range hosts {
		readers.Go(func() {
			if err := r.readLoop(ctx, h); err != nil {
				errOnce.Do(func() { runErr = err })
				cancel()
			}
		})
	}
	// Readers start the schedulers, so all Adds happen before this Wait.
	readers.Wait()
	cancel()
	r.schedulers.Wait()
	watcher.Wait()
	if runErr != nil {
		r.log.Error("shaper stopped", "err", runErr, "readers woken", r.watch.kicks.Load())
	} else {
		r.log.Debug("shaper stopped", "readers woken", r.watch.kicks.Load())
	}
	return runErr
}

// readLoop reads one device until it stops (see Run).
func (r *Router) readLoop(ctx context.Context, h *host) error {
	if done, err := r.ringReadLoop(ctx, h); done {
		return err
	}
	dl, _ := h.dev.(deadliner)
	if dl != nil {
		stop := context.AfterFunc(ctx, func() { dl.SetReadDeadline(time.Now()) })
		defer stop()
	}
	// Frame by frame through the device's descriptor where it has one, so
	// that the watcher knows when the reader waits and wakes it on a busy
	// process, as it wakes ring readers.
	read := h.dev.Read
	if sc, ok := h.dev.(syscall.Conn); ok && dl != nil {
		if rc, err := sc.SyscallConn(); err == nil {
			wait, unwatch := r.watched(rc, dl)
			defer unwatch()
			if f := watchedRead(rc, wait); f != nil {
				read = f
			}
		}
	}
	// The device is read into a pooled buffer of the largest frame.
	// Unshaped packets are written from it; a queued frame too large for a
	// small buffer takes it into the queue whole and the reader draws
	// another, so that TSO segments are never copied.
	rb := &readBuf{pk: getLarge()}
	defer func() { putPacket(rb.pk) }()
	rng := rand.New(rand.NewPCG(uint64(r.opts.Seed), uint64(h.idx)))
	for {
		n, err := read(rb.pk.b[:cap(rb.pk.b)])
		if err != nil {
			if strayDeadline(ctx, dl, err) {
				continue
			}
			return r.readErr(ctx, h, err)
		}
		if n == 0 {
			continue
		}
		h.read.Add(1)
		rb.n = n
		r.route(ctx, h, rb, rng)
	}
}

// strayDeadline reports whether a reader goes on after a read that failed
// with err: only after a deadline that is not ours (ours are set once ctx
// has ended), which it clears. dl is the device's deadliner, or nil.
func strayDeadline(ctx context.Context, dl deadliner, err error) bool {
	if ctx.Err() != nil || dl == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	dl.SetReadDeadline(time.Time{})
	// Checking ctx again orders the clearing before our own deadline.
	return ctx.Err() == nil
}

// readErr is what a reader of h that stops on err returns: nil when ctx
// has ended or the device was closed (Run's contract), else err.
func (r *Router) readErr(ctx context.Context, h *host, err error) error {
	switch {
	case ctx.Err() != nil:
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, os.ErrClosed),
		errors.Is(err, net.ErrClosed), errors.Is(err, io.EOF), closedFile(err):
		r.log.Debug("shaper device closed", "host", h.id, "err", err)
		return nil
	}
	return fmt.Errorf("shaper: read host %d: %w", h.id, err)
}

// closedFile reports whether err is what a device's raw connection returns
// once the device is closed. Readers read through RawConn.Read (the ring's
// reads and watchedRead), which returns internal/poll's ErrFileClosing as
// it is: only an *os.File's own methods turn it into os.ErrClosed, and the
// poll package's error is not exported, so its text is what identifies it
// (TestReaderStopsOnClosedDevice fails if it changes).
func closedFile(err error) bool {
	return err != nil && err.Error() == "use of closed file"
}

// readBuf is a reader's buffer and the length of the frame read into it.
type readBuf struct {
	pk *packet
	n  int
}

func (rb *readBuf) frame() []byte { return rb.pk.b[:rb.n] }

// take returns the frame as a packet the queue may keep: the buffer itself
// for a large frame, replaced by a fresh one, else a copy in a small one.
func (rb *readBuf) take() *packet {
	if rb.n <= smallFrame {
		return getPacket(rb.frame())
	}
	pk := rb.pk
	pk.b = pk.b[:rb.n]
	rb.pk = getLarge()
	return pk
}

// route shapes one frame read from h. It runs on h's reader goroutine,
// which alone enqueues to h's pairs and owns their schedule state.
func (r *Router) route(ctx context.Context, h *host, rb *readBuf, rng *rand.Rand) {
	frame := rb.frame()
	if len(frame) < r.hlen {
		h.notIPv4.Add(1)
		return
	}
	pkt := frame[r.hlen:]
	if len(pkt) < ipv4HeaderLen || pkt[0]>>4 != 4 {
		h.notIPv4.Add(1)
		return
	}
	d, ok := r.byAddr[[4]byte(pkt[16:20])]
	if !ok {
		if !r.marks || [4]byte(pkt[16:20]) != r.mark || !readMark(h, pkt) {
			h.noRoute.Add(1)
		}
		return
	}
	p := h.out[d]
	t := r.table.Load()
	l := &t.links[h.idx*t.n+d]
	switch {
	case l.Down:
		p.down.Add(1)
		if l.Reject {
			if reply := rejectReply(pkt); reply != nil {
				// Back to the sender's own device; Write is safe for
				// concurrent use. A zero header asks for no offload.
				// Counted before the write, as pair.write counts: the
				// reset ends the sender's socket within this Write, and
				// the sender may read the stats at once.
				p.rejected.Add(1)
				if _, err := h.dev.Write(append(make([]byte, r.hlen, r.hlen+len(reply)), reply...)); err != nil {
					p.rejected.Add(^uint64(0))
				}
			}
		}
	case l.Loss > 0 && rng.Float64() < l.Loss:
		p.lost.Add(1)
	case !r.opts.Engage && l.immediate() && p.inflight.Load() == 0:
		// Nothing of this pair is queued, so writing now cannot overtake
		// an earlier packet (the scheduler decrements after writing).
		p.write(ctx, r, frame)
	default:
		r.enqueue(ctx, p, l, rb, rng)
	}
}

// readMark keeps the number a mark (a UDP datagram to Options.MarkAddr)
// carries, and reports whether pkt was one.
func readMark(h *host, pkt []byte) bool {
	const udp, udpHeaderLen = 17, 8
	ihl := int(pkt[0]&0x0f) * 4
	if pkt[9] != udp || ihl < ipv4HeaderLen || len(pkt) < ihl+udpHeaderLen+8 {
		return false
	}
	h.mark.Store(binary.BigEndian.Uint64(pkt[ihl+udpHeaderLen:]))
	return true
}

// enqueue computes a frame's due time and queues it on its pair.
func (r *Router) enqueue(ctx context.Context, p *pair, l *Link, rb *readBuf, rng *rand.Rand) {
	if p.inflight.Load() >= r.limit {
		p.overflow.Add(1)
		return
	}
	now := r.now()
	due, busy := now, p.busyUntil
	if l.Rate > 0 {
		// The link sends one packet at a time; this one arrives once its
		// last bit is sent, plus the delay.
		busy = max(now, p.busyUntil) + int64(rb.n-r.hlen)*8*int64(time.Second)/l.Rate
		due = busy
	}
	delay := int64(l.Delay)
	if l.Jitter > 0 {
		delay += int64(rng.NormFloat64() * float64(l.Jitter))
	}
	// Never before the previous packet of the pair: FIFO.
	due = max(due+max(delay, 0), p.lastDue)

	pk := rb.take()
	pk.due = due
	p.mu.Lock()
	wasEmpty := p.q.len() == 0
	p.q.push(pk)
	p.inflight.Add(1)
	p.mu.Unlock()
	p.lastDue, p.busyUntil = due, busy

	if !p.started {
		p.started = true
		p.hist.Store(new(histogram))
		r.schedulers.Go(func() { r.schedule(ctx, p) })
	}
	if wasEmpty {
		// The scheduler only waits for a wake-up when its queue is empty:
		// due times never decrease, so a new packet never becomes the
		// head of a non-empty queue.
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}
