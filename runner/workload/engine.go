package workload

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/coordlab/scenario/internal/hrsleep"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/stores"
)

// DefaultTimeout is the per-operation timeout of a workload that sets none.
const DefaultTimeout = 5 * time.Second

// DefaultLateThreshold is how far after its due time an open-loop request may
// be sent before it counts as a late start. Timer wake-ups on a busy machine
// are routinely a few hundred microseconds late; that is not the store's
// doing and should not trip a late_starts gate. The collector counts late
// starts by the same threshold.
const DefaultLateThreshold = metrics.LateStart

// HistoryOp is one operation as a history checker sees it: who sent what,
// when it was invoked and when it returned (offsets from the engine's base),
// and how it ended. Value is the value written (put, txn) or read (get).
type HistoryOp struct {
	ClientID int    // generator id; Preload's writers are PreloadClientBase+i
	Op       string // plan.OpPut, ...
	Key      string
	Value    []byte
	Found    bool // get: the key existed
	Call     time.Duration
	Return   time.Duration
	Class    string // "" on success, else one of plan.ErrorClasses
}

// PreloadClientBase is the first history client id of Preload's writers,
// above every generator id so the two never share a client.
const PreloadClientBase = MaxWriters

// Stats describes what one Run did.
type Stats struct {
	Sent       int64 // operations handed to the store
	Failed     int64 // of those, how many came back with an error
	LateStarts int64 // open loop: sent more than the late threshold after their due time
	LateQueued int64 // of those, how many waited for a client: every worker was busy when they came due
	MaxQueue   int64 // open loop: most due requests waiting at once for a busy worker
	Expired    int64 // open loop: still queued at the drain cutoff; recorded as timeouts, never sent
	Dropped    int64 // open loop: due but unsent when ctx was cancelled; not recorded
	Workers    int   // workers started
}

func (s *Stats) add(o Stats) {
	s.Sent += o.Sent
	s.Failed += o.Failed
	s.LateStarts += o.LateStarts
	s.LateQueued += o.LateQueued
	s.Expired += o.Expired
}

// Option configures an Engine.
type Option func(*options)

type options struct {
	firstID  int
	history  func(HistoryOp)
	progress func(done, total int64)
	late     time.Duration
	busyPoll time.Duration
	log      *slog.Logger
}

// WithHistory calls fn for every operation sent, Preload's included, once it
// returns. fn is called from many goroutines at once and must be safe for
// that; it runs on the worker's path, so it should be quick.
func WithHistory(fn func(HistoryOp)) Option { return func(o *options) { o.history = fn } }

// WithProgress calls fn as Preload advances, with the keys written so far
// (increasing, ending with total). Calls are serialised.
func WithProgress(fn func(done, total int64)) Option { return func(o *options) { o.progress = fn } }

// WithLateThreshold sets how late an open-loop send may be before it counts
// as a late start (default DefaultLateThreshold).
func WithLateThreshold(d time.Duration) Option { return func(o *options) { o.late = d } }

// WithFirstID makes the engine's generator ids start at id, so that
// engines of one workload on several machines never share a writer id
// (value tags) or a history client id. Such engines start at multiples of
// IDStride.
func WithFirstID(id int) Option { return func(o *options) { o.firstID = id } }

// IDStride spaces the generator ids of the engines of one workload on
// several machines: the k-th starts at k*IDStride.
const IDStride = 1 << 17

// WithBusyPoll has the open loop's dispatcher, and a closed loop's steps,
// spin through the last d before each due time instead of sleeping
// through it (hrsleep.NewSpinning): on time where a sleeping thread's
// vCPU is woken late, at the cost of up to a core while arrivals are
// closer together than d. 0, the default, sleeps.
func WithBusyPoll(d time.Duration) Option { return func(o *options) { o.busyPoll = d } }

// WithLogger sets where the engine logs; by default it is silent.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Engine drives one workload's load against one cluster client, phase by
// phase. Its generators live as long as the engine, so value sequence
// numbers never repeat across phases and a phase continues the random
// streams of the one before.
type Engine struct {
	spec    plan.WorkloadSpec
	client  stores.Client
	base    time.Time
	timeout time.Duration
	cfg     *genConfig
	opts    options
	slots   slotPool
}

// New returns an engine for spec that sends through client. Each worker
// records into its own sink from newSink. Sinks, like generators, belong to
// worker slots that outlive a Run, so newSink is called only as many times as
// the most workers ever running at once (concurrently only if Runs overlap).
// All times are offsets from base, which must carry a monotonic clock reading
// (time.Now does).
func New(spec plan.WorkloadSpec, client stores.Client, newSink func() metrics.Sink, base time.Time, opts ...Option) (*Engine, error) {
	switch {
	case client == nil:
		return nil, fmt.Errorf("workload %q: no store client", spec.Name)
	case newSink == nil:
		return nil, fmt.Errorf("workload %q: no metrics sink", spec.Name)
	case base.IsZero() || base == base.Round(0):
		// Round(0) strips the monotonic reading: equal means there was none,
		// and wall-clock offsets would jump with NTP steps.
		return nil, fmt.Errorf("workload %q: base time has no monotonic clock reading; take it from time.Now()", spec.Name)
	case spec.Clients < 1:
		return nil, fmt.Errorf("workload %q: clients must be at least 1, got %d", spec.Name, spec.Clients)
	case spec.Timeout < 0:
		return nil, fmt.Errorf("workload %q: negative timeout %v", spec.Name, spec.Timeout)
	}
	cfg, err := newGenConfig(spec)
	if err != nil {
		return nil, err
	}
	e := &Engine{spec: spec, client: client, base: base, timeout: spec.Timeout.D(), cfg: cfg,
		opts: options{late: DefaultLateThreshold}}
	e.slots.cfg, e.slots.newSink = cfg, newSink
	if e.timeout == 0 {
		e.timeout = DefaultTimeout
	}
	for _, o := range opts {
		o(&e.opts)
	}
	if e.opts.log == nil {
		e.opts.log = slog.New(slog.DiscardHandler)
	}
	if e.opts.firstID < 0 || e.opts.firstID+spec.Clients >= PreloadWriter {
		return nil, fmt.Errorf("workload %q: first generator id %d out of range", spec.Name, e.opts.firstID)
	}
	e.slots.next = e.opts.firstID
	if cfg.dist == distSequential {
		// Engines of one workload on several machines (load-worker pods)
		// each walk the keyspace in order; starting points spread over it
		// by golden-ratio spacing keep their ops in flight off each
		// other's keys, however many engines there are.
		k := uint64(e.opts.firstID / IDStride)
		cfg.next.Store(int64(mulHi(k*0x9E3779B97F4A7C15, uint64(cfg.keys.n))))
	}
	return e, nil
}

// now is the monotonic offset from base.
func (e *Engine) now() time.Duration { return time.Since(e.base) }

// Run drives one phase's load: it waits until offset start from base, runs
// the load for l.Duration and returns once every operation it sent has come
// back. Closed loop: ClientSteps workers, each sending its next operation
// when the last one returned. Open loop: requests due on the Arrivals
// schedule, sent by at most spec.Clients workers, queued when all are busy,
// with latency counted from the due time.
//
// When ctx is cancelled, Run stops sending; operations in flight keep their
// own timeout (cancelling them would misclassify them), then Run returns
// ctx's error. No goroutine outlives Run. Runs of one engine may overlap.
func (e *Engine) Run(ctx context.Context, l plan.LoadSpec, start time.Duration) (Stats, error) {
	if err := e.checkLoad(l); err != nil {
		return Stats{}, err
	}
	// One precise sleeper serves the whole Run: its start, a closed loop's
	// steps and an open loop's arrivals. NewDual (unless it spins), since
	// the engine's own process is often busy: a timerfd alone waited up to
	// 10 ms then.
	sl := hrsleep.NewSpinning(ctx, e.opts.busyPoll)
	defer sl.Close()
	if err := e.sleepOn(ctx, sl, start); err != nil {
		return Stats{}, fmt.Errorf("workload %q: waiting for the load to start: %w", e.spec.Name, err)
	}
	var (
		st  Stats
		err error
	)
	if l.Mode == plan.LoadClosed {
		st, err = e.runClosed(ctx, sl, l, start)
	} else {
		st, err = e.runOpen(ctx, sl, l, start)
	}
	e.opts.log.Debug("load done", "workload", e.spec.Name, "mode", l.Mode, "sent", st.Sent, "failed", st.Failed,
		"late_starts", st.LateStarts, "late_queued", st.LateQueued, "max_queue", st.MaxQueue, "workers", st.Workers)
	if st.Expired > 0 {
		e.opts.log.Warn("requests still queued at the drain cutoff were recorded as timeouts",
			"workload", e.spec.Name, "expired", st.Expired)
	}
	if err != nil {
		return st, fmt.Errorf("workload %q: %w", e.spec.Name, err)
	}
	return st, nil
}

// checkLoad rejects a load this engine cannot run, before anything waits.
func (e *Engine) checkLoad(l plan.LoadSpec) error {
	switch {
	case l.Workload != "" && l.Workload != e.spec.Name:
		return fmt.Errorf("workload %q: given the load of workload %q", e.spec.Name, l.Workload)
	case l.Duration <= 0:
		return fmt.Errorf("workload %q: load duration must be positive, got %v", e.spec.Name, l.Duration)
	case l.Mode == plan.LoadClosed:
		if l.ClientsFrom < 0 || l.ClientsTo < 0 {
			return fmt.Errorf("workload %q: negative client count %d..%d", e.spec.Name, l.ClientsFrom, l.ClientsTo)
		}
	case l.Mode == plan.LoadOpen:
		if !(l.RateFrom >= 0 && l.RateTo >= 0) || math.IsInf(l.RateFrom, 0) || math.IsInf(l.RateTo, 0) {
			return fmt.Errorf("workload %q: invalid rate %v..%v", e.spec.Name, l.RateFrom, l.RateTo)
		}
	default:
		return fmt.Errorf("workload %q: unknown load mode %q (want %q or %q)", e.spec.Name, l.Mode, plan.LoadClosed, plan.LoadOpen)
	}
	return nil
}

// sleepOn waits on sl until offset at from base, or until ctx is done. The
// sleeper is precise (hrsleep): the open loop's dispatcher wakes on it for
// every arrival, and a runtime timer would wake it up to about a
// millisecond late, which at a 1 ms late-start threshold made a quarter of
// the requests late even at 100/s.
func (e *Engine) sleepOn(ctx context.Context, sl hrsleep.Sleeper, at time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d := at - e.now(); d > 0 && !sl.Sleep(int64(d)) {
		return ctx.Err()
	}
	return nil
}

// worker is one client of a Run: its own generator, sink and tallies, so the
// hot path shares nothing with other workers.
type worker struct {
	e     *Engine
	gen   *Generator
	sink  metrics.Sink
	timer *opTimer // each op gets only its timeout, never the Run's cancellation
	st    Stats
}

// newWorker starts a worker whose ops the watchdog wd times out. opCtx is
// never cancelled.
func (e *Engine) newWorker(opCtx context.Context, wd *watchdog) *worker {
	sl := e.slots.get()
	w := &worker{e: e, gen: sl.gen, sink: sl.sink, timer: newOpTimer(opCtx)}
	wd.add(w.timer)
	return w
}

// send draws the next op, sends it and records it, and returns when it
// returned. intended < 0 means closed loop: the op was due when it was
// sent. queued says it waited for a client (metrics.Sample.Queued).
func (w *worker) send(intended time.Duration, queued bool) time.Duration {
	e := w.e
	op := w.gen.NextOp()
	op.Client = w.gen.id
	start := e.now()
	res := e.client.Do(w.timer.begin(start+e.timeout), op)
	end := e.now()
	class := errClass(res, w.timer.end())
	if intended < 0 {
		intended = start
	} else if start-intended > e.opts.late {
		w.st.LateStarts++
		if queued {
			w.st.LateQueued++
		}
	}
	w.st.Sent++
	if class != "" {
		w.st.Failed++
	}
	write := isWrite(op.Kind)
	w.sink.Record(metrics.Sample{Workload: e.spec.Name, Op: op.Kind, Intended: intended, Start: start, End: end, Class: class, Write: write, Node: res.Node, Queued: queued})
	if h := e.opts.history; h != nil {
		v := op.Value
		if op.Kind == plan.OpGet {
			v = res.Value
		}
		h(HistoryOp{ClientID: w.gen.id, Op: op.Kind, Key: op.Key, Value: v, Found: res.Found, Call: start, Return: end, Class: class})
	}
	return end
}

// opBase is what every op's context derives from: not the Run's context,
// whose cancellation must not cut an op short (ops end by their own timeout,
// so that a stopped load records no false errors) and whose values no store
// client reads. A store client looks values up in its op's context many
// times a request (gRPC's metadata, peer, stats and call info, clientv3's
// own), and a lookup that misses walks the whole chain: every context the
// command, the runner and the phase wrapped the Run's in, instead of two.
func opBase() context.Context { return context.Background() }

// expire records a request that was never sent because it was still queued
// at the drain cutoff. To its user it timed out; its op is still drawn so the
// loss is attributed to the right operation.
func (w *worker) expire(intended time.Duration) {
	op := w.gen.NextOp()
	now := w.e.now()
	w.st.Expired++
	w.sink.Record(metrics.Sample{Workload: w.e.spec.Name, Op: op.Kind, Intended: intended, Start: now, End: now,
		Class: plan.ErrTimeout, Write: isWrite(op.Kind)})
}

// runClosed walks ClientSteps, starting and stopping workers; each worker
// sends back to back until told to stop or the load's end.
func (e *Engine) runClosed(ctx context.Context, sl hrsleep.Sleeper, l plan.LoadSpec, start time.Duration) (Stats, error) {
	if l.ClientsFrom == 0 && l.ClientsTo == 0 {
		l.ClientsFrom, l.ClientsTo = e.spec.Clients, e.spec.Clients
	}
	end := start + l.Duration.D()
	opCtx := opBase()
	wd := startWatchdog(e.timeout, e.now)
	defer wd.close()
	var (
		wg     sync.WaitGroup
		all    []*worker
		active []chan struct{}
		err    error
	)
	for _, step := range ClientSteps(l) {
		if err = e.sleepOn(ctx, sl, start+step.At); err != nil {
			break
		}
		for len(active) < step.Clients {
			w, stop := e.newWorker(opCtx, wd), make(chan struct{})
			all, active = append(all, w), append(active, stop)
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if e.now() >= end {
						return
					}
					w.send(-1, false)
				}
			})
		}
		// Ramping down lets the newest workers finish their op, like k6's
		// graceful ramp-down: cutting an op short would record a false error.
		for len(active) > step.Clients {
			close(active[len(active)-1])
			active = active[:len(active)-1]
		}
	}
	if err == nil {
		err = e.sleepOn(ctx, sl, end)
	}
	for _, stop := range active {
		close(stop)
	}
	wg.Wait()
	return e.finish(all, Stats{}), err
}

// finish sums the workers' tallies and returns their slots to the pool.
func (e *Engine) finish(ws []*worker, st Stats) Stats {
	slots := make([]slot, len(ws))
	for i, w := range ws {
		w.timer.close()
		st.add(w.st)
		slots[i] = slot{gen: w.gen, sink: w.sink}
	}
	st.Workers = len(ws)
	e.slots.putAll(slots)
	return st
}

// runOpen is the dispatcher: it walks the schedule, sleeping on one timer
// until the next arrival is due, then releases every arrival due by now in
// one step. It starts workers lazily, up to spec.Clients, only when an
// arrival finds none free, like k6's maxVUs.
func (e *Engine) runOpen(ctx context.Context, sl hrsleep.Sleeper, l plan.LoadSpec, start time.Duration) (Stats, error) {
	sched := Arrivals(l)
	table := sched // workers' own copy: Next mutates sched
	end := start + l.Duration.D()
	opCtx := opBase()
	wd := startWatchdog(e.timeout, e.now)
	defer wd.close()
	q := newBacklog(e.spec.Clients)
	next, more := sched.Next()
	var (
		wg  sync.WaitGroup
		all []*worker
		st  Stats
		err error
	)
	spawn := func() {
		w := e.newWorker(opCtx, wd)
		all = append(all, w)
		wg.Go(func() {
			var lastEnd time.Duration // when this worker's previous op returned
			for {
				k, expired, parked, ok := q.take()
				if !ok {
					return
				}
				due, _ := table.At(k)
				due += start
				if expired {
					w.expire(due)
					continue
				}
				// Taken straight after an op that returned after it came
				// due: it waited in the queue while this worker, and every
				// other (an idle one would have been woken for it), was busy.
				lastEnd = w.send(due, !parked && lastEnd > due)
			}
		})
	}
	for more {
		if err = e.sleepOn(ctx, sl, start+next); err != nil {
			break
		}
		now := e.now() - start
		n := int64(0)
		for more && next <= now {
			n++
			next, more = sched.Next()
		}
		for range q.release(n, e.spec.Clients-len(all)) {
			spawn()
		}
	}
	if err != nil {
		st.Dropped = q.close(true)
		wg.Wait()
		st.MaxQueue = q.depth()
		return e.finish(all, st), err
	}

	// Everything is released. Workers drain the queue; what is still queued
	// when the last op sent could have timed out is expired rather than sent
	// after the phase, where it would hammer the next phase with stale load.
	q.close(false)
	// The cutoff waits beside done, which a blocking sleeper cannot; its
	// precision does not matter.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	timer := time.NewTimer(max(end+e.timeout-e.now(), 0))
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		q.expireRest()
		<-done
	case <-ctx.Done():
		err = ctx.Err()
		st.Dropped = q.close(true)
		<-done
	}
	if err == nil {
		err = e.sleepOn(ctx, sl, end)
	}
	st.MaxQueue = q.depth()
	return e.finish(all, st), err
}

// slot is what a worker keeps between Runs: its generator, so sequence
// numbers and random streams continue, and its sink, so a long run with many
// phases does not leave the collector one sink per worker per phase.
type slot struct {
	gen  *Generator
	sink metrics.Sink
}

// slotPool lends slots to workers. The lowest free id goes first, so when
// Runs do not overlap, worker i gets slot i in every phase.
type slotPool struct {
	mu      sync.Mutex
	cfg     *genConfig
	newSink func() metrics.Sink
	free    []slot // sorted by generator id, highest first
	next    int
}

func (p *slotPool) get() slot {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		sl := p.free[n-1]
		p.free = p.free[:n-1]
		return sl
	}
	if p.next >= PreloadWriter {
		// 16M concurrent workers is far beyond what the DSL allows (100000).
		panic("workload: generator ids exhausted")
	}
	sl := slot{gen: newGenerator(p.cfg, p.next), sink: p.newSink()}
	p.next++
	return sl
}

func (p *slotPool) putAll(slots []slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, slots...)
	slices.SortFunc(p.free, func(a, b slot) int { return b.gen.id - a.gen.id })
}
