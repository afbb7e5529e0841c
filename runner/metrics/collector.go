package metrics

import (
	"bytes"
	"context"
	"io"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

const (
	// LateStart is how far behind its intended time an open-loop op may be
	// sent before it counts as a late start, here and in the load engine.
	LateStart = time.Millisecond
	// sealDelay is how long after a second ends it is sealed (its
	// percentiles fixed and its interval histogram logged). Workers record
	// an op right after it returns, so a second is complete well within
	// this; anything later is still counted, but misses the percentiles.
	sealDelay = time.Second
)

// Collector turns samples from many workers into per-phase and per-second
// numbers. Workers record into their own Sink; Run merges every sink once a
// second, Flush does a final merge, and Snapshot or Results renders
// everything measured so far.
//
// Merging is cheap and exact because a sink only buffers raw samples: Record
// appends to a slice under the sink's own mutex (uncontended except for the
// instant the collector swaps buffers), and the collector processes every
// sample itself, once, on one goroutine. Merging per-worker histograms
// instead would cost a full pass over each histogram per worker per second,
// far more than the samples themselves with hundreds of workers, and could
// not assign samples to phases, seconds and write gaps exactly.
type Collector struct {
	base      time.Time
	phases    []plan.PhaseSpan
	workloads []plan.WorkloadSpec
	leader    *LeaderTimeline
	resources *ResourceSampler
	self      *ResourceSampler // the runner's own process
	machine   *MachineSampler  // the whole machine the runner is on

	sinksMu sync.Mutex
	sinks   []*sink

	mu       sync.Mutex // guards everything below
	ops      map[opKey]*opState
	writes   *writeTrack            // every workload's writes
	wlWrites map[string]*writeTrack // each workload's writes
	sealed   int                    // seconds [0, sealed) are sealed
	last     *opState               // the op state add used last
	pool     []*hdr.Histogram
	finished bool                  // Flush ran: the run is over
	outside  int64                 // samples intended outside every phase
	late     int64                 // samples that arrived after their second was sealed
	clamped  int64                 // latencies above the histogram range
	served   map[int]time.Duration // node -> completion of its first answer
	logErr   error                 // first interval-log encoding error
	lines    lineEncoder           // encodes every op's interval log lines
	spool    *spooler              // nil: everything stays in memory

	// watches is copied on write so that WatchWrites never waits for mu,
	// which a merge may hold for a while: a fault must not be delayed.
	watches atomic.Pointer[[]*Watch]
}

type opKey struct{ workload, op string }

// opState is everything kept for one workload × op.
type opState struct {
	opKey
	writes  *writeTrack  // the workload's writes, shared by its ops
	phases  []*cell      // per phase, allocated on first sample
	seconds []second     // per second of End, from 0
	log     bytes.Buffer // the interval log, or with a spool what it could not take
	logw    io.Writer    // where the interval log's lines go
	logged  int          // seconds written to log
	spool   *hlogSpool   // nil: the interval log is all in log
	errs    int64        // failed ops, in every second
	request bool         // a request, not an observed op such as a notification
}

// second is one second of one workload × op, by completion time.
type second struct {
	tally
	corrected, raw *hdr.Histogram // successful ops; nil when none or sealed
	p50, p99       int64          // µs, fixed when sealed
	hasLatency     bool
	sealed         bool
}

// NewCollector returns a collector for a run with the given phases (in
// timeline order) and workloads. base is the run's base time, the instant
// every Sample offset is measured from.
func NewCollector(phases []plan.PhaseSpan, workloads []plan.WorkloadSpec, base time.Time) *Collector {
	c := &Collector{
		base:      base,
		phases:    slices.Clone(phases),
		workloads: slices.Clone(workloads),
		leader:    NewLeaderTimeline(),
		resources: NewResourceSampler(base),
		self:      NewResourceSampler(base),
		machine:   NewMachineSampler(),
		ops:       make(map[opKey]*opState),
		wlWrites:  make(map[string]*writeTrack),
		served:    make(map[int]time.Duration),
	}
	sort.SliceStable(c.phases, func(i, j int) bool { return c.phases[i].Start < c.phases[j].Start })
	c.writes = newWriteTrack(c.phases)
	c.self.SetPID(results.RunnerNode, os.Getpid())
	return c
}

// sink buffers one worker's samples until the collector takes them.
type sink struct {
	mu    sync.Mutex
	buf   []Sample
	spare []Sample // the buffer the collector hands back after processing
}

// Record appends the sample. In steady state it does not allocate: the
// collector returns each processed buffer for reuse.
func (s *sink) Record(x Sample) {
	s.mu.Lock()
	s.buf = append(s.buf, x)
	s.mu.Unlock()
}

// NewSink returns a sink for one worker goroutine.
func (c *Collector) NewSink() Sink {
	// Small at first: a run of 10,000 clients has as many sinks, and each
	// grows to what its worker records in a second, then keeps it.
	s := &sink{buf: make([]Sample, 0, 8)}
	c.sinksMu.Lock()
	c.sinks = append(c.sinks, s)
	c.sinksMu.Unlock()
	return s
}

// Leader returns the collector's leader timeline.
func (c *Collector) Leader() *LeaderTimeline { return c.leader }

// Resources returns the collector's resource sampler.
func (c *Collector) Resources() *ResourceSampler { return c.resources }

// ObserveLeader records one leader poll; see LeaderTimeline.ObserveLeader.
func (c *Collector) ObserveLeader(at time.Duration, leader int, term uint64) {
	c.leader.ObserveLeader(at, leader, term)
}

// ObserveUnanswered records a leader poll no node answered; see
// LeaderTimeline.ObserveUnanswered.
func (c *Collector) ObserveUnanswered(at time.Duration) {
	c.leader.ObserveUnanswered(at)
}

// SetPID names a node's process for resource sampling; see
// ResourceSampler.SetPID.
func (c *Collector) SetPID(node string, pid int) { c.resources.SetPID(node, pid) }

// SetSource names how a node's usage is read when it is not from /proc;
// see ResourceSampler.SetSource.
func (c *Collector) SetSource(node string, id int, read func() (Usage, error)) {
	c.resources.SetSource(node, id, read)
}

// Run merges the sinks, seals finished seconds and samples node resources
// once a second until ctx is done. Call Flush after it returns.
func (c *Collector) Run(ctx context.Context) {
	defer c.resources.Close()
	defer c.self.Close()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			at := now.Sub(c.base)
			c.mu.Lock()
			c.merge()
			c.seal(int((at - sealDelay) / time.Second))
			c.mu.Unlock()
			c.resources.SampleAt(at)
			c.self.SampleAt(at)
			c.machine.SampleAt(at)
		}
	}
}

// Flush merges whatever the sinks hold and seals every second: the run is
// over. Samples recorded afterwards are still counted, as late arrivals.
func (c *Collector) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.merge()
	n := len(c.writes.log.chunks)
	for _, st := range c.ops {
		n = max(n, len(st.seconds))
	}
	c.seal(n)
	c.finished = true
}

// merge takes every sink's buffer and processes it. c.mu must be held.
func (c *Collector) merge() {
	c.sinksMu.Lock()
	sinks := c.sinks[:len(c.sinks):len(c.sinks)]
	c.sinksMu.Unlock()
	for _, s := range sinks {
		s.mu.Lock()
		full := s.buf
		s.buf, s.spare = s.spare, nil
		s.mu.Unlock()
		if len(full) == 0 {
			s.mu.Lock()
			s.spare = full
			s.mu.Unlock()
			continue
		}
		for i := range full {
			c.add(&full[i])
		}
		clear(full) // drop string references held by the reused array
		s.mu.Lock()
		s.spare = full[:0]
		s.mu.Unlock()
	}
}

// add accounts one sample. c.mu must be held.
func (c *Collector) add(s *Sample) {
	st := c.state(s.Workload, s.Op)
	ok := s.Class == ""
	ci := classIndex(s.Class)

	// Per phase, by intended time: an op belongs to the phase that asked
	// for it, even when a stall pushed its completion into the next one.
	if p := c.phaseOf(s.Intended); p >= 0 {
		if st.phases[p] == nil {
			st.phases[p] = &cell{}
		}
		cl := st.phases[p]
		if ok {
			cl.ok++
			c.count(cl.corrected.record(s.End - s.Intended))
			c.count(cl.raw.record(s.End - s.Start))
		} else {
			// Errors keep their own count and stay out of the latency
			// histograms: a timeout's latency is the timeout, and mixing it
			// in would make latency depend on the error rate.
			cl.errs++
			cl.byClass[ci]++
		}
		if s.Start-s.Intended > LateStart {
			cl.late++
			if s.Queued {
				cl.lateQueued++
			}
		}
		if s.Write {
			c.writes.attempted[p] = true
			st.writes.attempted[p] = true
		}
	} else {
		c.outside++
	}

	// Per second, by completion time.
	k := secondOf(s.End)
	if k >= len(st.seconds) {
		st.seconds = slices.Grow(st.seconds, k+1-len(st.seconds))[:k+1]
	}
	row := &st.seconds[k]
	if k < c.sealed {
		row.sealed = true // a second first seen after it was sealed stays so
	}
	if row.sealed {
		c.late++
	}
	if ok {
		row.ok++
		if !row.sealed {
			if row.corrected == nil {
				row.corrected, row.raw = c.getHist(), c.getHist()
			}
			cv, _ := micros(s.End - s.Intended)
			rv, _ := micros(s.End - s.Start)
			_ = row.corrected.RecordValue(cv) // in range by construction
			_ = row.raw.RecordValue(rv)
		}
		if s.Write {
			c.writes.add(s.End, c.phases)
			st.writes.add(s.End, c.phases)
		}
		if first, ok := c.served[s.Node]; s.Node > 0 && (!ok || s.End < first) {
			c.served[s.Node] = s.End
		}
		if ws := c.watches.Load(); ws != nil {
			for _, w := range *ws {
				w.observe(s)
			}
		}
	} else {
		st.errs++
		row.errs++
		row.byClass[ci]++
	}
}

func (c *Collector) count(clamped bool) {
	if clamped {
		c.clamped++
	}
}

// state returns the accumulator of one workload × op, creating it.
func (c *Collector) state(workload, op string) *opState {
	k := opKey{workload, op}
	// A sink's samples mostly repeat the same workload and op: skip the
	// map (hashing two strings) for a run of them.
	if c.last != nil && c.last.opKey == k {
		return c.last
	}
	st, ok := c.ops[k]
	if !ok {
		st = &opState{opKey: k, phases: make([]*cell, len(c.phases)), writes: c.wlTrack(workload), request: !plan.Observed(op)}
		c.startLog(st)
		c.ops[k] = st
	}
	c.last = st
	return st
}

// phaseOf returns the index of the phase containing t, or -1.
func (c *Collector) phaseOf(t time.Duration) int {
	i := sort.Search(len(c.phases), func(i int) bool { return c.phases[i].End().D() > t })
	if i < len(c.phases) && c.phases[i].Start.D() <= t {
		return i
	}
	return -1
}

// seal fixes every second before upTo: percentiles computed, interval
// histograms logged and recycled, write times encoded. c.mu must be held.
func (c *Collector) seal(upTo int) {
	if upTo <= c.sealed {
		// Still re-encode late write times in sealed seconds.
		c.sealWrites(c.sealed)
		return
	}
	for _, st := range c.ops {
		for k := c.sealed; k < min(upTo, len(st.seconds)); k++ {
			row := &st.seconds[k]
			if row.corrected != nil {
				row.p50 = row.corrected.ValueAtQuantile(50)
				row.p99 = row.corrected.ValueAtQuantile(99)
				row.hasLatency = true
			}
			row.sealed = true
		}
		c.logSeconds(st, upTo)
	}
	c.sealed = upTo
	c.sealWrites(upTo)
}

func (c *Collector) sealWrites(upTo int) {
	c.writes.seal(upTo)
	for _, t := range c.wlWrites {
		t.seal(upTo)
	}
}

// wlTrack returns the write track of one workload, creating it.
func (c *Collector) wlTrack(workload string) *writeTrack {
	t, ok := c.wlWrites[workload]
	if !ok {
		t = newWriteTrack(c.phases)
		if c.spool != nil {
			t.log.spool = c.spool.writes
		}
		c.wlWrites[workload] = t
	}
	return t
}

// getHist returns an empty histogram, reusing sealed seconds' histograms:
// each is ~180 KB and a run seals several per second.
func (c *Collector) getHist() *hdr.Histogram {
	if n := len(c.pool); n > 0 {
		h := c.pool[n-1]
		c.pool = c.pool[:n-1]
		return h
	}
	return newHist()
}

func (c *Collector) putHist(h *hdr.Histogram) {
	if h != nil {
		h.Reset()
		c.pool = append(c.pool, h)
	}
}

// LastWriteBefore returns when the last successful write completed
// strictly before t; ok is false when none did.
func (c *Collector) LastWriteBefore(t time.Duration) (at time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.merge()
	return c.writes.log.lastBefore(t)
}

// FirstWriteFrom returns when the first successful write completed at or
// after t; ok is false when none did.
func (c *Collector) FirstWriteFrom(t time.Duration) (at time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.merge()
	return c.writes.log.firstFrom(t)
}

// Watch finds the first successful operations of a kind sent at or after
// an instant: the first write the cluster accepted from clients that asked
// after a fault took effect (a write already in flight at the fault may
// still complete just after it, and says nothing about recovery), or the
// first operation each of some members answered after they came back.
type Watch struct {
	c     *Collector
	from  time.Duration
	fixed bool // from is final: only first matters
	// key says which first an operation counts for, if any.
	key   func(s *Sample) (int, bool)
	spans []watched // before fixed: operations sent at or after from
	first map[int]time.Duration
}

type watched struct {
	key        int
	start, end time.Duration
}

// WatchWrites starts collecting the writes sent at or after t, from now
// on. Call it just before injecting a fault, and Fix once the fault's
// effective time is known; First then says when the first write completed.
//
// Samples not merged yet are seen when they are: the watch filters by send
// time, not by when it learns of a write.
func (c *Collector) WatchWrites(t time.Duration) *Watch {
	return c.watch(t, func(s *Sample) (int, bool) { return 0, s.Write })
}

// WatchServed starts collecting the operations sent at or after t that
// one of nodes answered, from now on. Call it just before undoing a fault,
// and Fix once it is undone; FirstServed then says when each node answered
// its first.
func (c *Collector) WatchServed(t time.Duration, nodes []int) *Watch {
	return c.watch(t, func(s *Sample) (int, bool) { return s.Node, s.Node > 0 && slices.Contains(nodes, s.Node) })
}

func (c *Collector) watch(t time.Duration, key func(*Sample) (int, bool)) *Watch {
	w := &Watch{c: c, from: t, key: key, first: map[int]time.Duration{}}
	for {
		old := c.watches.Load()
		var next []*Watch
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, w)
		if c.watches.CompareAndSwap(old, &next) {
			return w
		}
	}
}

// observe notes a successful operation. c.mu is held.
func (w *Watch) observe(s *Sample) {
	if k, ok := w.key(s); ok {
		w.note(watched{k, s.Start, s.End})
	}
}

func (w *Watch) note(x watched) {
	if x.start < w.from {
		return
	}
	if !w.fixed {
		w.spans = append(w.spans, x)
		return
	}
	if first, ok := w.first[x.key]; !ok || x.end < first {
		w.first[x.key] = x.end
	}
}

// Fix sets the instant the watch measures from (not before the one it was
// started with) and keeps only what it needs from then on.
func (w *Watch) Fix(t time.Duration) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.c.merge()
	w.from, w.fixed = max(t, w.from), true
	for _, x := range w.spans {
		w.note(x)
	}
	w.spans = nil
}

// First returns when the first successful write sent at or after the
// instant given to Fix completed; ok is false when none did, or when Fix
// was not called.
func (w *Watch) First() (end time.Duration, ok bool) {
	return w.FirstServed(0)
}

// FirstServed returns when node first answered an operation sent at or
// after the instant given to Fix; ok is false when it answered none, or
// when Fix was not called.
func (w *Watch) FirstServed(node int) (end time.Duration, ok bool) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.c.merge()
	end, ok = w.first[node]
	return end, ok
}

// Stop ends a watch that is no longer needed (its fault never took
// effect): until Fix, a watch keeps every operation it matches.
func (w *Watch) Stop() {
	c := w.c
	for {
		old := c.watches.Load()
		next := slices.DeleteFunc(slices.Clone(*old), func(x *Watch) bool { return x == w })
		if c.watches.CompareAndSwap(old, &next) {
			return
		}
	}
}

// ServedBefore reports whether node answered an operation that completed
// before t.
func (c *Collector) ServedBefore(node int, t time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.merge()
	first, ok := c.served[node]
	return ok && first < t
}

// LongestWriteGap returns the longest stretch between successive
// successful write completions in [from, to], counting from and to as
// completions.
func (c *Collector) LongestWriteGap(from, to time.Duration) (start, end time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.merge()
	return c.writes.log.longestGap(from, to)
}
