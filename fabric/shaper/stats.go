package shaper

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"
)

// PairStats are the counters of one ordered pair of hosts.
type PairStats struct {
	Forwarded    uint64 // packets written to the destination device
	DroppedLoss  uint64 // dropped by the Loss draw
	DroppedDown  uint64 // dropped because the link was Down
	Rejected     uint64 // of those, answered with a reset or an ICMP unreachable
	DroppedQueue uint64 // tail-dropped: QueueLimit packets were held
	WriteErrors  uint64 // the destination device's Write failed
	Queued       int64  // packets held right now (waiting or being written)

	// Scheduled counts the packets that went through the scheduler (those
	// with a delay, jitter or rate, or all with Options.Engage); the
	// Late figures are how long after its due time the destination's
	// Write of each returned (a TUN device's runs the receiving network
	// stack), with ~3% resolution. Packets written directly are not
	// timed: they have no due time to miss.
	Scheduled                 uint64
	LateP50, LateP99, LateMax time.Duration
}

// HostStats are the counters of packets read from one host that belong to
// no pair.
type HostStats struct {
	Read    uint64 // packets read from the device, all kinds
	NotIPv4 uint64 // shorter than an IPv4 header or not version 4
	NoRoute uint64 // IPv4, to an address that is no host's
}

// Stats reports the counters of every pair that has seen a packet, keyed
// by {from id, to id}. It is safe to call at any time.
func (r *Router) Stats() map[[2]int]PairStats {
	out := map[[2]int]PairStats{}
	r.eachPair(func(p *pair) {
		c := p.counts()
		s := PairStats{
			Forwarded:    c.Forwarded,
			DroppedLoss:  c.DroppedLoss,
			DroppedDown:  c.DroppedDown,
			Rejected:     p.rejected.Load(),
			DroppedQueue: c.DroppedQueue,
			WriteErrors:  c.WriteErrors,
			Queued:       p.inflight.Load(),
		}
		if hist := p.hist.Load(); hist != nil {
			s.Scheduled, s.LateP50, s.LateP99, s.LateMax = hist.summaryOf(&c.Late)
		}
		if s != (PairStats{}) {
			out[[2]int{p.from.id, p.to.id}] = s
		}
	})
	return out
}

// eachPair calls f for every pair of every host, holding r.mu against
// AddHost growing h.out (the counters themselves are atomic).
func (r *Router) eachPair(f func(*pair)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.hosts {
		for _, p := range h.out {
			f(p)
		}
	}
}

// counts snapshots p's counters, its lateness histogram agreeing with
// Forwarded to within the one packet that may be mid-write (counted as
// forwarded before its write, timed after it). The histogram is copied
// bucket by bucket, so the copy is retried while packets are forwarded
// during it: a reader preempted between the two would otherwise find
// packets timed that it never saw forwarded, and an interval's Late would
// disagree with its Forwarded by as many.
func (p *pair) counts() PairCounts {
	var c PairCounts
	hist := p.hist.Load()
	var giveUp time.Time
	for attempt := 0; ; attempt++ {
		c = PairCounts{
			Forwarded:    p.forwarded.Load(),
			DroppedLoss:  p.lost.Load(),
			DroppedDown:  p.down.Load(),
			DroppedQueue: p.overflow.Load(),
			WriteErrors:  p.writeErrs.Load(),
		}
		if hist == nil {
			return c
		}
		hist.addTo(&c.Late)
		if p.forwarded.Load() == c.Forwarded {
			return c
		}
		// Back-to-back copies can all fall inside one batch of writes,
		// and a scheduler preempted mid-batch holds it open for a time
		// slice: past a few tries, yield to it, for up to countsPatience.
		switch {
		case attempt < 8:
			continue
		case attempt == 8:
			giveUp = time.Now().Add(countsPatience)
		case time.Now().After(giveUp):
			return c // a pair this busy is off by the few packets of one copy
		}
		runtime.Gosched()
	}
}

// countsPatience bounds how long counts retries a pair that keeps
// forwarding while it copies: longer than a scheduler's time slice on a
// busy machine, short beside the second between snapshots.
const countsPatience = 20 * time.Millisecond

// QueueDrops reports how many packets every pair's queue has refused at
// its limit so far: PairStats.DroppedQueue summed, without the lateness
// summaries Stats works out for each pair.
func (r *Router) QueueDrops() uint64 {
	var n uint64
	r.eachPair(func(p *pair) { n += p.overflow.Load() })
	return n
}

// FramesRead reports how many frames the router has read from all its
// devices so far: HostStats' Read summed.
func (r *Router) FramesRead() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n uint64
	for _, h := range r.hosts {
		n += h.read.Load()
	}
	return n
}

// RingReaders reports how many hosts' devices are read through an
// io_uring (the others by read(2): Options.PlainReads, or no io_uring
// here).
func (r *Router) RingReaders() int { return int(r.ringReaders.Load()) }

// ReadersWoken reports how many times a ring reader was found waiting on a
// device with frames in it and woken (see readerWatch): each is a frame
// the runtime's poller had left waiting for more than a millisecond.
func (r *Router) ReadersWoken() uint64 { return r.watch.kicks.Load() }

// Queued reports how many packets of the pair from→to are held right now
// (waiting for their due time or being written); 0 for ids not added.
func (r *Router) Queued(from, to int) int64 {
	p := r.pairByID(from, to)
	if p == nil {
		return 0
	}
	return p.inflight.Load()
}

// pairByID is the pair from→to by host id, nil for ids not added.
func (r *Router) pairByID(from, to int) *pair {
	r.mu.Lock() // against AddHost growing h.out
	defer r.mu.Unlock()
	a, b := r.byID[from], r.byID[to]
	if a == nil || b == nil {
		return nil
	}
	return a.out[b.idx]
}

// Seen reports how many packets of the pair from→to the router has read,
// and whether it holds none of them right now (idle); 0 and true for ids
// not added. The count is exact when idle: a queued packet is counted as
// forwarded before it leaves the queue's count. Two calls that both find
// the pair idle with the same count saw no packet of it read in between.
func (r *Router) Seen(from, to int) (n uint64, idle bool) {
	p := r.pairByID(from, to)
	if p == nil {
		return 0, true
	}
	// inflight first: a packet it no longer counts is in the others.
	idle = p.inflight.Load() == 0
	n = p.forwarded.Load() + p.writeErrs.Load() + p.lost.Load() + p.down.Load() + p.overflow.Load()
	return n, idle
}

// Marked reports the number carried by the last mark read from host id
// (see Options.MarkAddr); 0 if none was, or for an id not added.
func (r *Router) Marked(id int) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.byID[id]; h != nil {
		return h.mark.Load()
	}
	return 0
}

// HostStats reports per-host read counters, keyed by host id.
func (r *Router) HostStats() map[int]HostStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int]HostStats, len(r.hosts))
	for _, h := range r.hosts {
		out[h.id] = HostStats{Read: h.read.Load(), NotIPv4: h.notIPv4.Load(), NoRoute: h.noRoute.Load()}
	}
	return out
}

// histogram is a log-linear histogram of lateness in microseconds: exact
// below 64 µs, then 32 buckets per power of two. One goroutine records;
// any may read.
type histogram struct {
	counts [histBuckets]atomic.Uint64
	max    atomic.Int64 // ns, exact
}

const (
	subBits     = 5 // 32 sub-buckets per octave
	histMaxExp  = 30
	histBuckets = (histMaxExp + 2) << subBits // up to 2^36 µs
)

func bucketOf(us uint64) int {
	if us < 2<<subBits {
		return int(us)
	}
	e := bits.Len64(us) - subBits - 1 // us>>e is in [32, 64)
	if e > histMaxExp {
		return histBuckets - 1
	}
	return e<<subBits + int(us>>e)
}

// bucketMid is the middle of bucket i, in µs.
func bucketMid(i int) float64 {
	if i < 2<<subBits {
		return float64(i) + 0.5
	}
	e := i>>subBits - 1
	lo := uint64(i&(1<<subBits-1)+1<<subBits) << e
	return float64(lo) + float64(uint64(1)<<e)/2
}

func (h *histogram) record(lateNs int64) {
	lateNs = max(lateNs, 0)
	h.counts[bucketOf(uint64(lateNs)/1000)].Add(1)
	if lateNs > h.max.Load() { // single writer: no CAS needed
		h.max.Store(lateNs)
	}
}

// summaryOf summarises l, a copy of h's counts, with h's exact largest
// lateness in place of its bucket's middle.
func (h *histogram) summaryOf(l *Lateness) (n uint64, p50, p99, maxLate time.Duration) {
	n, p50, p99, _ = l.Summary()
	maxLate = time.Duration(h.max.Load())
	return n, min(p50, maxLate), min(p99, maxLate), maxLate
}

// addTo adds the histogram's counts to l.
func (h *histogram) addTo(l *Lateness) {
	for i := range l.counts {
		l.counts[i] += h.counts[i].Load()
	}
}

// Lateness counts the packets the schedulers have handed to their
// destination, by how long after their due time (with the histogram's ~3%
// resolution), summed over every pair. A Router's Lateness is a snapshot
// of its counts so far; Since makes one of an interval. The zero value
// counts none.
type Lateness struct {
	counts [histBuckets]uint64
}

// Lateness snapshots the counts of every pair's scheduler so far.
func (r *Router) Lateness() *Lateness {
	l := &Lateness{}
	for _, c := range r.PairCounts() {
		l.Add(&c.Late)
	}
	return l
}

// Since is what was counted after the snapshot earlier: l minus earlier,
// bucket by bucket (never below 0, should earlier be the later one).
func (l *Lateness) Since(earlier *Lateness) *Lateness {
	d := &Lateness{}
	for i, n := range l.counts {
		d.counts[i] = n - min(n, earlier.counts[i])
	}
	return d
}

// Count adds a packet handed on late by d to l.
func (l *Lateness) Count(d time.Duration) {
	l.counts[bucketOf(uint64(max(d, 0)/time.Microsecond))]++
}

// Add adds o's counts to l's.
func (l *Lateness) Add(o *Lateness) {
	for i, n := range o.counts {
		l.counts[i] += n
	}
}

// Summary reports how many packets l counts and the median, 99th
// percentile and largest of their lateness, each the middle of its
// bucket (a microsecond wide below 64 µs, about 3% of its value above).
func (l *Lateness) Summary() (n uint64, p50, p99, maxLate time.Duration) {
	top := -1
	for i, k := range l.counts {
		n += k
		if k > 0 {
			top = i
		}
	}
	if n == 0 {
		return 0, 0, 0, 0
	}
	at := func(i int) time.Duration { return time.Duration(bucketMid(i) * float64(time.Microsecond)) }
	q := func(f float64) time.Duration {
		rank := uint64(f*float64(n-1)) + 1
		var c uint64
		for i, k := range l.counts {
			if c += k; c >= rank {
				return at(i)
			}
		}
		return 0
	}
	return n, q(0.50), q(0.99), at(top)
}

// PairCounts is one pair's counters so far, with its lateness counts in
// full, so that an interval's can be taken (Since) and intervals summed
// (Add); Router.Stats summarises instead.
type PairCounts struct {
	Forwarded, DroppedLoss, DroppedDown, DroppedQueue, WriteErrors uint64
	Late                                                           Lateness
}

// PairCounts snapshots the counters of every pair that has seen a packet,
// keyed by {from id, to id}. It is safe to call at any time. Each pair's
// Late agrees with its Forwarded to within the packet being written.
func (r *Router) PairCounts() map[[2]int]*PairCounts {
	out := map[[2]int]*PairCounts{}
	r.eachPair(func(p *pair) {
		if c := p.counts(); !c.Empty() {
			out[[2]int{p.from.id, p.to.id}] = &c
		}
	})
	return out
}

// Since is what was counted after the snapshot earlier (nil: none was):
// c minus earlier, never below 0.
func (c *PairCounts) Since(earlier *PairCounts) *PairCounts {
	if earlier == nil {
		earlier = &PairCounts{}
	}
	sub := func(a, b uint64) uint64 { return a - min(a, b) }
	return &PairCounts{
		Forwarded:    sub(c.Forwarded, earlier.Forwarded),
		DroppedLoss:  sub(c.DroppedLoss, earlier.DroppedLoss),
		DroppedDown:  sub(c.DroppedDown, earlier.DroppedDown),
		DroppedQueue: sub(c.DroppedQueue, earlier.DroppedQueue),
		WriteErrors:  sub(c.WriteErrors, earlier.WriteErrors),
		Late:         *c.Late.Since(&earlier.Late),
	}
}

// Add adds o's counts to c's.
func (c *PairCounts) Add(o *PairCounts) {
	c.Forwarded += o.Forwarded
	c.DroppedLoss += o.DroppedLoss
	c.DroppedDown += o.DroppedDown
	c.DroppedQueue += o.DroppedQueue
	c.WriteErrors += o.WriteErrors
	c.Late.Add(&o.Late)
}

// Empty reports whether c counts nothing.
func (c *PairCounts) Empty() bool {
	return c.Forwarded+c.DroppedLoss+c.DroppedDown+c.DroppedQueue+c.WriteErrors == 0
}
