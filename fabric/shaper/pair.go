package shaper

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
)

// maxBatch bounds the packets one wake-up takes off the queue before
// writing them, so that the reader is never locked out for long.
const maxBatch = 64

// pair is the traffic of one ordered (source, destination) pair of hosts.
type pair struct {
	from, to *host
	dst      io.Writer
	batch    BatchWriter // dst, when it takes several frames a call

	// Owned by the source host's reader goroutine, the only one that
	// enqueues to this pair: no synchronisation needed.
	lastDue   int64 // due time of the last packet queued (FIFO floor)
	busyUntil int64 // when the rate-limited link finishes its last packet
	started   bool  // the scheduler goroutine runs

	mu   sync.Mutex // guards q, between the reader and the scheduler
	q    ring
	wake chan struct{} // capacity 1: the queue became non-empty

	// inflight counts packets queued or being written: the reader only
	// writes directly when it is 0, and tail-drops at the limit.
	inflight atomic.Int64

	forwarded, lost, down, rejected, overflow, writeErrs atomic.Uint64
	hist                                                 atomic.Pointer[histogram] // set when the scheduler starts
	warned                                               atomic.Bool               // a write error was logged
}

// BatchWriter is a device that takes several frames in one call, as a
// packet socket does with sendmmsg(2). WriteBatch writes frames in order
// and returns how many it wrote; when that is short of all of them, err
// says why the next was not (it is lost), and the caller may go on with
// the rest.
type BatchWriter interface {
	WriteBatch(frames [][]byte) (int, error)
}

func newPair(from, to *host) *pair {
	bw, _ := to.dev.(BatchWriter)
	return &pair{from: from, to: to, dst: to.dev, batch: bw, wake: make(chan struct{}, 1)}
}

// write hands one packet to the destination device.
func (p *pair) write(ctx context.Context, r *Router, b []byte) {
	// Counted before the write: writing to a TUN device runs the
	// destination's network stack in this thread, so whoever that wakes
	// (a reader of the frame's data) may look at the stats before Write
	// returns, and must find the frame counted.
	p.forwarded.Add(1)
	if _, err := p.dst.Write(b); err != nil {
		p.failed(ctx, r, err)
	}
}

// failed counts a frame counted as forwarded that its write lost.
func (p *pair) failed(ctx context.Context, r *Router, err error) {
	p.forwarded.Add(^uint64(0))
	p.writeErrs.Add(1)
	// Devices closed while Run stops are no news.
	if ctx.Err() == nil && p.warned.CompareAndSwap(false, true) {
		r.log.Warn("shaper write failed (further errors only counted)", "from", p.from.id, "to", p.to.id, "err", err)
	}
}

// writeBatch hands the batch to a destination that takes several frames a
// call, frames being scratch space for their bytes. A frame the device
// refuses is counted as a write error, and the rest go on.
func (p *pair) writeBatch(ctx context.Context, r *Router, batch []*packet, frames [][]byte) [][]byte {
	frames = frames[:0]
	for _, pk := range batch {
		frames = append(frames, pk.b)
	}
	// Counted before the write, as in write.
	p.forwarded.Add(uint64(len(frames)))
	for rest := frames; len(rest) > 0; {
		n, err := p.batch.WriteBatch(rest)
		if err == nil || n >= len(rest) {
			break
		}
		p.failed(ctx, r, err)
		rest = rest[n+1:]
	}
	clear(frames)
	return frames[:0]
}

// schedule is the pair's goroutine: it sleeps until the head packet is
// due, then writes every packet that is due, in order.
func (r *Router) schedule(ctx context.Context, p *pair) {
	sl := r.newSleeper(ctx)
	defer sl.Close()
	h := p.hist.Load()
	batch := make([]*packet, 0, maxBatch)
	var frames [][]byte
	if p.batch != nil {
		frames = make([][]byte, 0, maxBatch)
	}
	for {
		p.mu.Lock()
		head := p.q.peek()
		if head == nil {
			p.mu.Unlock()
			select {
			case <-p.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		now := r.now()
		if wait := head.due - now; wait > 0 {
			p.mu.Unlock()
			if !sl.Sleep(wait) {
				return
			}
			continue
		}
		for len(batch) < maxBatch {
			pk := p.q.peek()
			if pk == nil || pk.due > now {
				break
			}
			batch = append(batch, p.q.pop())
		}
		p.mu.Unlock()

		if p.batch != nil {
			// The whole batch reaches its host in the one call.
			frames = p.writeBatch(ctx, r, batch, frames)
			end := r.now()
			for _, pk := range batch {
				h.record(end - pk.due)
				putPacket(pk)
			}
		} else {
			for _, pk := range batch {
				p.write(ctx, r, pk.b)
				// Timed once the write returns: writing to a TUN
				// device runs the destination's network stack, so the
				// packet has then reached the receiving host, which is
				// what its link's delay is to.
				h.record(r.now() - pk.due)
				putPacket(pk)
			}
		}
		// Only now may the reader write this pair's packets directly.
		p.inflight.Add(-int64(len(batch)))
		clear(batch)
		batch = batch[:0]
	}
}

// packet is a queued frame in a pooled buffer.
type packet struct {
	due int64 // on the Router's now clock
	b   []byte
}

// Queued frames are copied into pooled buffers of two sizes, so that a
// queue of small packets never holds buffers sized for TSO segments.
const (
	smallFrame = 2048
	largeFrame = 80 << 10 // a 64 KiB IPv4 packet and any header before it
)

var (
	smallPackets = sync.Pool{New: func() any { return &packet{b: make([]byte, 0, smallFrame)} }}
	largePackets = sync.Pool{New: func() any { return &packet{b: make([]byte, 0, largeFrame)} }}
)

// getLarge returns an empty packet whose buffer holds the largest frame.
func getLarge() *packet {
	pk := largePackets.Get().(*packet)
	pk.b = pk.b[:0]
	return pk
}

func getPacket(b []byte) *packet {
	pool := &smallPackets
	if len(b) > smallFrame {
		pool = &largePackets
	}
	pk := pool.Get().(*packet)
	pk.b = append(pk.b[:0], b...)
	return pk
}

func putPacket(pk *packet) {
	switch cap(pk.b) {
	case smallFrame:
		smallPackets.Put(pk)
	case largeFrame:
		largePackets.Put(pk)
	}
	// Anything else grew past its pool's size: let it go.
}

// ring is a FIFO of packets that grows by doubling and never shrinks.
type ring struct {
	buf  []*packet // len is a power of two
	head int
	n    int
}

func (q *ring) len() int { return q.n }

func (q *ring) peek() *packet {
	if q.n == 0 {
		return nil
	}
	return q.buf[q.head]
}

func (q *ring) push(pk *packet) {
	if q.n == len(q.buf) {
		nb := make([]*packet, max(16, 2*len(q.buf)))
		for i := range q.n {
			nb[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = pk
	q.n++
}

func (q *ring) pop() *packet {
	pk := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return pk
}
