package metrics

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// writeLog keeps the completion time of every successful write, exactly, so
// that the longest write gap and the first write after any instant can be
// answered without approximation however the writes were spread over
// workers. Sinks deliver samples out of order, so times are kept per second
// of the run: a second is collected unsorted while it may still receive
// samples, then sorted and delta-encoded as uvarints (about 3 bytes per
// write at tens of µs apart, instead of 8). With a spool, the encoding of a
// sealed second then moves to the spool file and only where it lies stays
// in memory.
type writeLog struct {
	chunks []writeChunk
	spool  *spoolFile // nil: sealed seconds stay in memory
}

type writeChunk struct {
	enc     []byte          // sorted, delta-encoded offsets from the chunk's start
	pending []time.Duration // not yet encoded: the open second, or late arrivals
	// Where enc lies in the spool once spooled (enc is then nil). A late
	// arrival re-encodes the chunk in memory and it is spooled afresh.
	off     int64
	size    int32
	spooled bool
	sealed  bool // later adds are late, even into an empty second
}

// add records one write completion. It reports whether the write landed in
// a second that had already been sealed (a late arrival).
func (w *writeLog) add(t time.Duration) (late bool) {
	t = max(t, 0) // keeps deltas non-negative; nothing completes before the run
	k := secondOf(t)
	if k >= len(w.chunks) {
		w.chunks = slices.Grow(w.chunks, k+1-len(w.chunks))[:k+1]
	}
	c := &w.chunks[k]
	c.pending = append(c.pending, t)
	return c.sealed
}

// seal sorts and encodes every second before upTo that has pending times.
func (w *writeLog) seal(upTo int) {
	for k := range min(upTo, len(w.chunks)) {
		c := &w.chunks[k]
		c.sealed = true
		if len(c.pending) == 0 {
			continue
		}
		times, ok := w.times(k, nil)
		if !ok {
			// Re-encoding now would drop the spooled times for good: keep
			// the late ones pending and try again at the next seal.
			continue
		}
		enc := make([]byte, 0, len(times)*3)
		prev := time.Duration(k) * time.Second
		for _, t := range times {
			enc = binary.AppendUvarint(enc, uint64(t-prev))
			prev = t
		}
		c.enc, c.pending, c.spooled = enc, nil, false
	}
}

// spill moves the encoding of every sealed second before upTo to the
// spool. A second the spool cannot take stays in memory, and so do the
// rest until the next seal: a full disk is retried once a second, not once
// per chunk.
func (w *writeLog) spill(upTo int) {
	if w.spool == nil {
		return
	}
	for k := range min(upTo, len(w.chunks)) {
		c := &w.chunks[k]
		if !c.sealed || len(c.enc) == 0 {
			continue
		}
		off, err := w.spool.append(c.enc)
		if err != nil {
			return
		}
		c.off, c.size, c.spooled, c.enc = off, int32(len(c.enc)), true, nil
	}
}

// times returns second k's write times in order, appended to buf[:0]. ok
// is false when its spooled part could not be read back (the error is
// recorded in the spool); the times returned then lack it.
func (w *writeLog) times(k int, buf []time.Duration) (_ []time.Duration, ok bool) {
	c := &w.chunks[k]
	buf, ok = buf[:0], true
	enc := c.enc
	if c.spooled {
		b, err := w.spool.read(c.off, int(c.size))
		enc, ok = b, err == nil
	}
	prev := time.Duration(k) * time.Second
	for b := enc; len(b) > 0; {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			// Only a spool file changed under us can get here.
			if c.spooled {
				w.spool.fail(fmt.Errorf("spool: %s: second %d at %d: bad encoding", w.spool.name, k, c.off))
			}
			ok = false
			break
		}
		b = b[n:]
		prev += time.Duration(d)
		buf = append(buf, prev)
	}
	if len(c.pending) > 0 {
		buf = append(buf, c.pending...)
		slices.Sort(buf)
	}
	return buf, ok
}

// lastBefore returns the latest write strictly before t.
func (w *writeLog) lastBefore(t time.Duration) (time.Duration, bool) {
	var buf []time.Duration
	for k := min(secondOf(t), len(w.chunks)-1); k >= 0; k-- {
		buf, _ = w.times(k, buf)
		if i, _ := slices.BinarySearch(buf, t); i > 0 {
			return buf[i-1], true
		}
	}
	return 0, false
}

// firstFrom returns the earliest write at or after t.
func (w *writeLog) firstFrom(t time.Duration) (time.Duration, bool) {
	var buf []time.Duration
	for k := max(secondOf(t), 0); k < len(w.chunks); k++ {
		buf, _ = w.times(k, buf)
		if i, _ := slices.BinarySearch(buf, t); i < len(buf) {
			return buf[i], true
		}
	}
	return 0, false
}

// longestGap returns the longest stretch between successive writes in
// [from, to], from and to counting as writes.
func (w *writeLog) longestGap(from, to time.Duration) (start, end time.Duration) {
	start, end = from, from
	prev := from
	var buf []time.Duration
	for k := max(secondOf(from), 0); k < len(w.chunks) && k <= secondOf(to); k++ {
		buf, _ = w.times(k, buf)
		for _, t := range buf {
			if t <= from || t > to {
				continue
			}
			if t-prev > end-start {
				start, end = prev, t
			}
			prev = t
		}
	}
	if to-prev > end-start {
		start, end = prev, to
	}
	return start, end
}

// OutageGap is the shortest stretch without a successful write that counts
// as time the store was unavailable, for time-based availability. Shorter
// stretches are the ordinary spacing of writes (and, below one write a
// second, time availability means little: say so where it is shown).
const OutageGap = time.Second

// gapScan computes the longest stretches without a write, per phase and
// over the whole run, from write times fed in increasing order, and the
// total time in stretches of at least OutageGap (the time without writes,
// for time-based availability). Every phase's own start and end count as
// boundaries: a phase in which nothing was written has a gap as long as
// the phase.
type gapScan struct {
	phases   []plan.PhaseSpan
	runStart time.Duration
	runEnd   time.Duration
	cur      int             // index of the first phase not yet over
	last     []time.Duration // last write (or the start) per phase
	gap      []time.Duration
	down     []time.Duration // total of the gaps of at least OutageGap
	runLast  time.Duration
	runGap   time.Duration
	runDown  time.Duration
}

// outage is the part of a gap that counts as unavailable time.
func outage(gap time.Duration) time.Duration {
	if gap >= OutageGap {
		return gap
	}
	return 0
}

func newGapScan(phases []plan.PhaseSpan) gapScan {
	g := gapScan{phases: phases, last: make([]time.Duration, len(phases)), gap: make([]time.Duration, len(phases)), down: make([]time.Duration, len(phases))}
	for i, p := range phases {
		g.last[i] = p.Start.D()
	}
	if len(phases) > 0 {
		g.runStart, g.runEnd = phases[0].Start.D(), phases[len(phases)-1].End().D()
	}
	g.runLast = g.runStart
	return g
}

func (g *gapScan) clone() gapScan {
	c := *g
	c.last = slices.Clone(g.last)
	c.gap = slices.Clone(g.gap)
	c.down = slices.Clone(g.down)
	return c
}

func (g *gapScan) feed(t time.Duration) {
	if t >= g.runStart && t <= g.runEnd {
		g.runGap = max(g.runGap, t-g.runLast)
		g.runDown += outage(t - g.runLast)
		g.runLast = t
	}
	for g.cur < len(g.phases) && t >= g.phases[g.cur].End().D() {
		g.cur++
	}
	if i := g.cur; i < len(g.phases) && t >= g.phases[i].Start.D() {
		g.gap[i] = max(g.gap[i], t-g.last[i])
		g.down[i] += outage(t - g.last[i])
		g.last[i] = t
	}
}

// gapResult is what a gapScan found up to a horizon.
type gapResult struct {
	gap, down       []time.Duration // per phase
	runGap, runDown time.Duration
}

// result closes every gap still open at horizon (the end of the run, or
// "now" for a snapshot taken while the run goes on) and returns the longest
// gap and the unavailable time per phase and over the run.
func (g *gapScan) result(horizon time.Duration) gapResult {
	r := gapResult{gap: slices.Clone(g.gap), down: slices.Clone(g.down), runGap: g.runGap, runDown: g.runDown}
	for i, p := range g.phases {
		if end := min(p.End().D(), horizon); end > g.last[i] {
			r.gap[i] = max(r.gap[i], end-g.last[i])
			r.down[i] += outage(end - g.last[i])
		}
	}
	if end := min(g.runEnd, horizon); end > g.runLast {
		r.runGap = max(r.runGap, end-g.runLast)
		r.runDown += outage(end - g.runLast)
	}
	return r
}

// gapCache holds a gapScan advanced over the sealed prefix of a writeLog,
// so that a snapshot only has to scan the seconds still open. A late write
// into a sealed second invalidates it; it is rebuilt on the next use.
type gapCache struct {
	scan gapScan
	upTo int // chunks [0, upTo) have been fed
}

func (c *gapCache) reset(phases []plan.PhaseSpan) {
	c.scan, c.upTo = newGapScan(phases), 0
}

// advance feeds the log's chunks [c.upTo, to). It stops at a chunk that
// could not be read back: a scan cached without it would stay wrong after
// the spool recovers.
func (c *gapCache) advance(w *writeLog, to int) {
	var buf []time.Duration
	for ; c.upTo < min(to, len(w.chunks)); c.upTo++ {
		var ok bool
		if buf, ok = w.times(c.upTo, buf); !ok {
			return
		}
		for _, t := range buf {
			c.scan.feed(t)
		}
	}
}

func secondOf(t time.Duration) int {
	if t < 0 {
		return 0
	}
	return int(t / time.Second)
}

// writeTrack is the write record of one set of workloads (all of them, or
// one): completion times, the gap cache over them, and which phases
// attempted a write at all, since a phase without write attempts has no gap
// to speak of.
type writeTrack struct {
	log       writeLog
	gaps      gapCache
	attempted []bool // per phase
}

func newWriteTrack(phases []plan.PhaseSpan) *writeTrack {
	t := &writeTrack{attempted: make([]bool, len(phases))}
	t.gaps.reset(phases)
	return t
}

// add records a successful write completing at end.
func (t *writeTrack) add(end time.Duration, phases []plan.PhaseSpan) {
	if t.log.add(end) && secondOf(end) < t.gaps.upTo {
		t.gaps.reset(phases) // a sealed second changed: rescan
	}
}

// seal encodes the seconds before upTo, advances the gap cache over them
// and only then spools them, so that the cache never reads back what was
// just written.
func (t *writeTrack) seal(upTo int) {
	t.log.seal(upTo)
	t.gaps.advance(&t.log, upTo)
	t.log.spill(upTo)
}

// writeGaps is, per phase and over the run, the longest write gap (ms) and
// the time availability: the share of the time elapsed (up to the horizon)
// not spent in stretches of at least OutageGap without a successful write.
// Entries are nil for phases without write attempts.
type writeGaps struct {
	maxGap, timeAvail       []*float64
	runMaxGap, runTimeAvail *float64
}

// measure measures the write gaps per phase and over the run, up to horizon.
// The sealed prefix comes from the cache; only open seconds are scanned.
func (t *writeTrack) measure(sealed int, horizon time.Duration, phases []plan.PhaseSpan) writeGaps {
	t.gaps.advance(&t.log, sealed)
	g := t.gaps.scan.clone()
	var buf []time.Duration
	for k := t.gaps.upTo; k < len(t.log.chunks); k++ {
		buf, _ = t.log.times(k, buf)
		for _, at := range buf {
			g.feed(at)
		}
	}
	r := g.result(horizon)
	out := writeGaps{maxGap: make([]*float64, len(r.gap)), timeAvail: make([]*float64, len(r.gap))}
	elapsed := func(start, end time.Duration) time.Duration { return min(end, horizon) - start }
	any := false
	for i, d := range r.gap {
		if t.attempted[i] {
			out.maxGap[i] = results.Ptr(results.MS(d))
			out.timeAvail[i] = availableShare(r.down[i], elapsed(phases[i].Start.D(), phases[i].End().D()))
			any = true
		}
	}
	if any {
		out.runMaxGap = results.Ptr(results.MS(r.runGap))
		out.runTimeAvail = availableShare(r.runDown, elapsed(g.runStart, g.runEnd))
	}
	return out
}

// availableShare is 1 - down/elapsed, rounded like every ratio in the
// results, or nil before anything elapsed.
func availableShare(down, elapsed time.Duration) *float64 {
	if elapsed <= 0 {
		return nil
	}
	share := 1 - float64(min(down, elapsed))/float64(elapsed)
	return results.Ptr(math.Round(share*1e6) / 1e6)
}
