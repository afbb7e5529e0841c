package discovery

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/checker"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
)

// pushSettle bounds how long the end of a watched workload waits for every
// watcher to agree with the store before the watches are judged.
const pushSettle = 30 * time.Second

// Loader plays one load of a key-value workload: its workload engine.
type Loader interface {
	Run(ctx context.Context, l plan.LoadSpec, start time.Duration) (workload.Stats, error)
}

// PushConfig is what a PushEngine measures the timeline with (Begin).
type PushConfig struct {
	// Load is the workload's own engine, whose writes are watched; its
	// history must reach Written.
	Load Loader
	Sink metrics.Sink
	// Base is the run's base time; End is when the workload's last load
	// ends, both as for Config.
	Base time.Time
	End  time.Duration
	// Preloaded are the writes made before the timeline (a preload), on
	// the base's clock: the watchers list their values.
	Preloaded []workload.HistoryOp
}

// PushEngine is a key-value workload whose keys consumers watch, as
// configuration pushed through the store is watched: its watchers list
// the workload's keys before the timeline (List), as its clients connect
// before it, and follow them through every load; each write told to a watcher is timed (notify), and so is
// the time until every watcher was told it or a newer value of its key
// (fanout). At the end of the workload's last load the watches are judged
// against the writes (checker.CheckValueWatches).
type PushEngine struct {
	spec    plan.WorkloadSpec
	watcher stores.KeyWatcher
	log     *slog.Logger
	cfg     PushConfig
	rec     *recorder // nil until Begin

	listOnce sync.Once
	listErr  error
	stopOnce sync.Once
	stopErr  error
	bgCancel context.CancelFunc
	bg       sync.WaitGroup

	mu       sync.Mutex
	watchers []*pushWatcher
	writes   map[string]*checker.Write // by value name
	order    []*checker.Write
	early    map[string][]earlyTell // value -> watchers told it before its write returned
	fan      map[string]*keyFanout  // by key
	listedAt time.Time              // when the last watcher first listed
	ready    bool                   // every watcher has listed
	// held is what the watchers were told before Begin gave the clock.
	held   []heldTell
	report PushReport
}

// heldTell is a watch event that came before Begin.
type heldTell struct {
	w  *pushWatcher
	ev stores.WatchEvent
	at time.Time
}

// earlyTell is a watcher told a value before its write returned.
type earlyTell struct {
	watcher int
	at      time.Duration
}

// pushWatcher is one consumer.
type pushWatcher struct {
	idx    int
	view   map[string]string // key -> value name
	log    checker.WatchLog
	listed chan struct{} // closed when the watcher first listed
	told   bool          // listed is closed
	first  bool          // its first listing is still to be judged
	errs   int
}

// PushReport is what a watched workload measured besides its samples.
type PushReport struct {
	Watchers int
	// Writes counts writes to the watched keys acknowledged during the
	// timeline; FannedOut those every watcher was told (it or a newer
	// value of its key), in fanout's samples.
	Writes, FannedOut int
	WatchErrors       int
	Model             string
	Watch             checker.WatchResult
}

// NewPush returns the push engine of key-value workload spec, which must
// have watchers, watching through watcher. It measures nothing until
// Begin.
func NewPush(spec plan.WorkloadSpec, watcher stores.KeyWatcher, log *slog.Logger) (*PushEngine, error) {
	switch {
	case spec.Watchers <= 0:
		return nil, fmt.Errorf("workload %q has no watchers", spec.Name)
	case watcher == nil:
		return nil, fmt.Errorf("workload %q: no key watcher", spec.Name)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &PushEngine{spec: spec, watcher: watcher, log: log, writes: map[string]*checker.Write{}, early: map[string][]earlyTell{}, fan: map[string]*keyFanout{}}
	for i := range spec.Watchers {
		e.watchers = append(e.watchers, &pushWatcher{idx: i + 1, view: map[string]string{}, first: true,
			log: checker.WatchLog{Watcher: i + 1, Seen: []checker.Seen{}}, listed: make(chan struct{})})
	}
	e.report.Watchers, e.report.Model = spec.Watchers, string(watcher.Semantics())
	return e, nil
}

// Begin gives the engine the timeline's clock, the workload's engine and
// the sink its samples go to. What the watchers were told before it (the
// listings of List) is judged from now on, on the base's clock.
func (e *PushEngine) Begin(cfg PushConfig) error {
	if cfg.Load == nil || cfg.Sink == nil {
		return fmt.Errorf("workload %q: no engine or sink", e.spec.Name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rec != nil {
		return fmt.Errorf("workload %q: the push engine began already", e.spec.Name)
	}
	e.cfg = cfg
	e.rec = newRecorder(e.spec.Name, cfg.End, cfg.Sink, func(error) string { return plan.ErrOther })
	for _, op := range cfg.Preloaded {
		e.written(op)
	}
	for _, h := range e.held {
		e.tell(h.w, h.ev, h.at.Sub(cfg.Base))
	}
	e.held = nil
	return nil
}

// ValueName names a written value by the writer and sequence number every
// value a workload writes is tagged with; an untagged value is named by
// its first bytes.
func ValueName(v []byte) string {
	if w, seq, ok := workload.ParseValue(v); ok {
		return fmt.Sprintf("w%d#%d", w, seq)
	}
	return "?" + hex.EncodeToString(v[:min(len(v), workload.ValueTagSize)])
}

// Written takes one operation of the workload as its engine reports it
// (workload.WithHistory), its times offsets from the run's base: the
// writes to watched keys are what the watchers are judged against.
func (e *PushEngine) Written(op workload.HistoryOp) {
	if !strings.HasPrefix(op.Key, e.spec.KeyPrefix) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rec == nil {
		return // before Begin: no write of the timeline yet
	}
	e.written(op)
}

// written is Written with e.mu held, after Begin.
func (e *PushEngine) written(op workload.HistoryOp) {
	w := checker.Write{Key: op.Key, Call: op.Call, Return: op.Return, Acked: op.Class == ""}
	switch op.Op {
	case plan.OpPut, plan.OpTxn:
		w.Value = ValueName(op.Value)
	case plan.OpDelete:
	default:
		return
	}
	e.order = append(e.order, &w)
	if w.Value == "" {
		return
	}
	e.writes[w.Value] = &w
	for _, told := range e.early[w.Value] {
		if w.Acked {
			e.rec.observe(plan.OpNotify, w.Call, w.Return, told.at)
		}
		e.fanTold(told.watcher, w.Key, w.Call, told.at)
	}
	delete(e.early, w.Value)
	if w.Acked && e.ready && w.Call >= e.listedAt.Sub(e.cfg.Base) {
		e.fanWrite(&w)
	}
}

// Run plays the load with the workload's engine (listing first if List
// was not called) and, at the end of the workload's last load, judges
// the watches. Begin must come first.
func (e *PushEngine) Run(ctx context.Context, l plan.LoadSpec, start time.Duration) (workload.Stats, error) {
	e.mu.Lock()
	begun := e.rec != nil
	e.mu.Unlock()
	if !begun {
		return workload.Stats{}, fmt.Errorf("workload %q: the push engine has not begun", e.spec.Name)
	}
	if err := e.List(ctx); err != nil {
		e.abandon()
		return workload.Stats{}, err
	}
	st, err := e.cfg.Load.Run(ctx, l, start)
	if ctx.Err() != nil {
		e.abandon()
		return st, err
	}
	if start+l.Duration.D() >= e.cfg.End {
		e.stopOnce.Do(func() { e.stopErr = e.stop(ctx) })
		if e.stopErr != nil && err == nil {
			err = fmt.Errorf("watchers of %q: %w", e.spec.Name, e.stopErr)
		}
	}
	return st, err
}

// List starts every watcher and waits for each one's first listing of
// the workload's keys; only the first call does. The runner calls it
// before the timeline, so that a listing's time (seconds for hundreds of
// keys on a busy store) is not taken from the workload's first load.
// The watchers run until the workload's last load ends, or Close.
func (e *PushEngine) List(ctx context.Context) error {
	e.listOnce.Do(func() {
		if err := e.list(ctx); err != nil {
			e.listErr = fmt.Errorf("watchers of %q: %w", e.spec.Name, err)
		}
	})
	return e.listErr
}

// Close stops the watchers if the workload's last load has not: the run
// ended before it.
func (e *PushEngine) Close() { e.abandon() }

func (e *PushEngine) list(ctx context.Context) error {
	t0 := time.Now()
	bgCtx, cancel := context.WithCancel(ctx)
	e.mu.Lock()
	e.bgCancel = cancel
	e.mu.Unlock()
	listed := make([]chan struct{}, len(e.watchers))
	for i, w := range e.watchers {
		listed[i] = w.listed
		e.bg.Go(func() { e.watch(bgCtx, w) })
	}
	if err := awaitListed(ctx, e.spec.KeyPrefix, listed); err != nil {
		return err
	}
	e.mu.Lock()
	e.listedAt, e.ready = time.Now(), true
	e.mu.Unlock()
	e.log.Info("watchers listed", "workload", e.spec.Name, "watchers", len(e.watchers), "took", time.Since(t0).Round(time.Millisecond))
	return nil
}

// watch runs one consumer until ctx ends.
func (e *PushEngine) watch(ctx context.Context, w *pushWatcher) {
	keepWatching(ctx, e.log, e.watcher.Watch, w.idx, e.spec.KeyPrefix, func(ev stores.WatchEvent) { e.told(w, ev, time.Now()) }, func() {
		e.mu.Lock()
		w.errs++
		e.mu.Unlock()
	})
}

// told takes what watcher w learned at at: held until Begin gives the
// clock, judged from then on.
func (e *PushEngine) told(w *pushWatcher, ev stores.WatchEvent, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rec == nil {
		e.held = append(e.held, heldTell{w, ev, at})
	} else {
		e.tell(w, ev, at.Sub(e.cfg.Base))
	}
	if !w.told && ev.Err == nil && ev.Kind == stores.WatchList {
		w.told = true
		close(w.listed)
	}
}

// tell takes what watcher w learned at at, on the base's clock. e.mu
// must be held.
func (e *PushEngine) tell(w *pushWatcher, ev stores.WatchEvent, at time.Duration) {
	if ev.Err != nil {
		w.errs++
		return
	}
	seen := checker.Seen{At: at, Kind: ev.Kind, Key: ev.Key, Revision: ev.Revision}
	switch ev.Kind {
	case stores.WatchList:
		seen.Keys, seen.Revisions = slices.Clone(ev.Keys), slices.Clone(ev.Revisions)
		next := make(map[string]string, len(ev.Keys))
		for i, k := range ev.Keys {
			var v string
			if i < len(ev.Values) {
				v = ValueName(ev.Values[i])
			}
			seen.Values = append(seen.Values, v)
			next[k] = v
			if !w.first {
				e.changed(w, k, v, at)
			}
		}
		w.view = next
	case stores.WatchPut:
		seen.Value = ValueName(ev.Value)
		e.changed(w, ev.Key, seen.Value, at)
		w.view[ev.Key] = seen.Value
	case stores.WatchDelete:
		delete(w.view, ev.Key)
	}
	w.log.Seen = append(w.log.Seen, seen)
	if ev.Kind == stores.WatchList {
		w.first = false
	}
}

// changed: watcher w was told key holds v. A value it already held is no
// news (a listing repeats what has not changed). e.mu must be held.
func (e *PushEngine) changed(w *pushWatcher, key, v string, at time.Duration) {
	if w.view[key] == v {
		return
	}
	wr := e.writes[v]
	if wr == nil {
		e.early[v] = append(e.early[v], earlyTell{w.idx, at})
		return
	}
	if wr.Acked {
		e.rec.observe(plan.OpNotify, wr.Call, wr.Return, at)
	}
	e.fanTold(w.idx, key, wr.Call, at)
}

// abandon stops the watchers without judging them: the run was cancelled
// or never started.
func (e *PushEngine) abandon() {
	e.stopOnce.Do(func() {
		e.mu.Lock()
		cancel := e.bgCancel
		e.mu.Unlock()
		if cancel != nil {
			cancel()
			e.bg.Wait()
		}
	})
}

// stop waits for every watcher to agree with the store, stops them, and
// judges what they saw.
func (e *PushEngine) stop(ctx context.Context) error {
	final, err := e.settle(ctx)
	e.bgCancel()
	e.bg.Wait()
	if err != nil {
		return fmt.Errorf("read the watched keys after the run: %w", err)
	}
	e.judge(final)
	return nil
}

// settle waits, up to pushSettle, until every watcher's view is the
// store's, and returns the store's.
func (e *PushEngine) settle(ctx context.Context) (map[string]string, error) {
	deadline := time.Now().Add(pushSettle)
	for {
		rctx, cancel := context.WithTimeout(ctx, e.timeout())
		vals, err := e.watcher.Read(rctx, e.spec.KeyPrefix)
		cancel()
		final := make(map[string]string, len(vals))
		for k, v := range vals {
			final[k] = ValueName(v)
		}
		if err == nil && e.agree(final) || time.Now().After(deadline) {
			return final, err
		}
		if sleepUntil(ctx, time.Now().Add(200*time.Millisecond)) != nil {
			return final, ctx.Err()
		}
	}
}

func (e *PushEngine) timeout() time.Duration {
	if t := e.spec.Timeout.D(); t > 0 {
		return t
	}
	return workload.DefaultTimeout
}

func (e *PushEngine) agree(final map[string]string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range e.watchers {
		if !maps.Equal(w.view, final) {
			return false
		}
	}
	return true
}

func (e *PushEngine) judge(final map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	writes := make([]checker.Write, len(e.order))
	for i, w := range e.order {
		writes[i] = *w
	}
	logs := make([]checker.WatchLog, len(e.watchers))
	for i, w := range e.watchers {
		logs[i] = w.log
		e.report.WatchErrors += w.errs
	}
	model := checker.WatchSnapshots
	if e.watcher.Semantics() == stores.WatchEvents {
		model = checker.WatchEvents
	}
	e.report.Watch = checker.CheckValueWatches(model, writes, logs, final)
}

// keyFanout follows how far every watcher of one key has got: a write is
// fanned out once each watcher was told its value or a value of the key
// sent after it (a consumer told a newer value needs the older no more).
type keyFanout struct {
	// covered is, per watcher, the latest send of any value of the key
	// it was told.
	covered []time.Duration
	// steps are when the least of covered rose, and to what: a write
	// acknowledged after the watchers were told is fanned out at the
	// first step that reaches its send.
	steps []fanStep
	// pending are acknowledged writes not fanned out yet, by send.
	pending []*checker.Write
}

type fanStep struct{ at, upTo time.Duration }

// fanKey returns key's fan-out state. e.mu must be held.
func (e *PushEngine) fanKey(key string) *keyFanout {
	f := e.fan[key]
	if f == nil {
		f = &keyFanout{covered: make([]time.Duration, len(e.watchers))}
		for i := range f.covered {
			f.covered[i] = -1 << 62
		}
		e.fan[key] = f
	}
	return f
}

// fanTold: watcher w (1-based) was told at at a value of key whose write
// was sent at call. e.mu must be held.
func (e *PushEngine) fanTold(w int, key string, call, at time.Duration) {
	f := e.fanKey(key)
	if call <= f.covered[w-1] {
		return
	}
	f.covered[w-1] = call
	least := slices.Min(f.covered)
	if n := len(f.steps); n > 0 && f.steps[n-1].upTo >= least {
		return
	}
	f.steps = append(f.steps, fanStep{at, least})
	i := 0
	for ; i < len(f.pending) && f.pending[i].Call <= least; i++ {
		e.fannedOut(f.pending[i], at)
	}
	f.pending = f.pending[i:]
}

// fanWrite takes an acknowledged write sent after the watchers listed:
// fanned out already if the watchers got there first, else pending. e.mu
// must be held.
func (e *PushEngine) fanWrite(w *checker.Write) {
	e.report.Writes++
	f := e.fanKey(w.Key)
	if i := sort.Search(len(f.steps), func(i int) bool { return f.steps[i].upTo >= w.Call }); i < len(f.steps) {
		e.fannedOut(w, f.steps[i].at)
		return
	}
	i := sort.Search(len(f.pending), func(i int) bool { return f.pending[i].Call > w.Call })
	f.pending = slices.Insert(f.pending, i, w)
}

func (e *PushEngine) fannedOut(w *checker.Write, at time.Duration) {
	e.report.FannedOut++
	e.rec.observe(plan.OpFanout, w.Call, w.Return, at)
}

// Report returns what the watchers measured; complete once the workload's
// last load returned.
func (e *PushEngine) Report() PushReport {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.report
}
