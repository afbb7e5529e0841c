// Package discovery plays a service-registry workload: instances that
// register under a lease or session, heartbeat it, churn, and vanish when
// a fault says so, and consumers that watch the list. It times what a
// registry's users feel (registration, heartbeat, how soon a consumer is
// told of a change, how soon a dead instance disappears) as samples of the
// run's collector, and keeps what every watcher saw for the watch checker.
package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/checker"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
)

const (
	// listTimeout bounds how long a watcher may take to list for the
	// first time before the registry gives up on the run.
	listTimeout = 30 * time.Second
	// settleSlack is added to how long the end waits for every watcher to
	// agree with the store: a vanished instance's TTL, and the store's
	// grace on it (Consul takes up to twice the TTL).
	settleSlack = 10 * time.Second
)

// Config is what an Engine needs besides its workload.
type Config struct {
	Registry stores.Registry
	// Classify names the class of a failed request (plan.ErrorClasses).
	Classify func(error) string
	Sink     metrics.Sink
	// Base is the run's base time; every sample is an offset from it.
	Base time.Time
	// End is when the workload's last load ends, from Base: the registry
	// says goodbye then.
	End time.Duration
	// Seed picks churned and vanishing instances.
	Seed int64
	// Baseline, if set, is called once the watchers listed and before the
	// first registration: the runner samples the members' memory there,
	// which the registry's growth is measured from.
	Baseline func()
	Log      *slog.Logger
}

// Engine is one registry workload. Its Run plays one load (a phase in
// which the registry lives); the first starts it, the one that ends at
// Config.End stops it and judges the watches.
type Engine struct {
	spec plan.WorkloadSpec
	reg  stores.Registry
	cfg  Config
	rec  *recorder

	startOnce sync.Once
	startErr  error
	stopOnce  sync.Once
	stopErr   error
	bgCancel  context.CancelFunc
	bg        sync.WaitGroup // heartbeats, churn, watchers
	ops       sync.WaitGroup // churn and revival in flight

	mu       sync.Mutex
	slots    []*slot
	lives    map[string]*life
	order    []*life // registration order, for the checker
	watchers []*watcher
	rnd      *rand.Rand
	closed   bool
	report   Report
}

// slot is one instance index; each registration of it is a generation.
type slot struct {
	idx, gen int
	inst     stores.Instance
	life     *life
	stopBeat context.CancelFunc
	busy     bool // churning, vanished or reviving
	lastAck  time.Duration
}

// life is one registration: one key, from its registration to its end.
type life struct {
	checker.KeyLife
	regAck, deregAck time.Duration
	acked, deregDone bool
	final            bool // removed by the run's own cleanup: not measured
	told             int  // watchers told of its creation
	lastTold         time.Duration
	early            []time.Duration // told before its registration's ack
	earlyGone        []time.Duration // told gone before its goodbye's ack
	vanished         bool
	vanishedAt       time.Duration
	lastBeat         time.Duration
	detected         bool
	expired          bool // the store dropped it while it heartbeat
}

// watcher is one consumer's view.
type watcher struct {
	idx    int
	view   map[string]bool
	log    checker.WatchLog
	listed chan struct{}
	errs   int
}

// Report is what the registry measured beyond its samples.
type Report struct {
	Instances int `json:"instances"`
	Watchers  int `json:"watchers"`
	// RegistrationsPerS is the first registration of every instance,
	// sent spec.Clients at a time: instances over the time from the
	// first send to the last acknowledgement.
	RegistrationsPerS float64 `json:"registrations_per_s"`
	// Registered counts instances that registered in that first round.
	Registered int `json:"registered"`
	// Vanished counts instances a vanish fault silenced; Detected how
	// many of those a watcher was told were gone.
	Vanished int `json:"vanished"`
	Detected int `json:"detected"`
	// Expired counts instances the store dropped while they were
	// heartbeating (a false failure detection: a paused or cut-off
	// member, a heartbeat slower than the TTL).
	Expired int `json:"expired"`
	// WatchErrors counts failures the watches reported (each restarted).
	WatchErrors int `json:"watch_errors"`
	// Watch is the watch checker's verdict.
	Model string              `json:"model"`
	Watch checker.WatchResult `json:"watch"`
	// Final is how many keys the store listed after the goodbye.
	Final int `json:"final"`
	// Started is when the first registration was sent, Up when the last
	// of the first round was acknowledged (offsets from the base).
	Started, Up time.Duration `json:"-"`
}

// New returns the engine of spec, which must have a registry block.
func New(spec plan.WorkloadSpec, cfg Config) (*Engine, error) {
	switch {
	case spec.Registry == nil:
		return nil, fmt.Errorf("workload %q is not a registry", spec.Name)
	case cfg.Registry == nil || cfg.Sink == nil || cfg.Classify == nil:
		return nil, fmt.Errorf("registry %q: no store registry, sink or classifier", spec.Name)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	classify := func(err error) string {
		if errors.Is(err, errExpired) {
			return plan.ErrOther
		}
		return cfg.Classify(err)
	}
	e := &Engine{spec: spec, reg: cfg.Registry, cfg: cfg, rec: newRecorder(spec.Name, cfg.End, cfg.Sink, classify),
		lives: map[string]*life{}, rnd: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5e6157e7))}
	for i := range spec.Registry.Instances {
		e.slots = append(e.slots, &slot{idx: i})
	}
	for i := range spec.Registry.Watchers {
		e.watchers = append(e.watchers, &watcher{idx: i + 1, view: map[string]bool{},
			log: checker.WatchLog{Watcher: i + 1, Seen: []checker.Seen{}}, listed: make(chan struct{})})
	}
	e.report.Instances, e.report.Watchers = spec.Registry.Instances, spec.Registry.Watchers
	e.report.Model = string(cfg.Registry.Semantics())
	return e, nil
}

func (e *Engine) now() time.Duration { return time.Since(e.cfg.Base) }

// Run waits for the load's start, starts the registry the first time,
// lives through the load and, at the workload's last load's end, says
// goodbye and judges the watches.
func (e *Engine) Run(ctx context.Context, l plan.LoadSpec, start time.Duration) (workload.Stats, error) {
	if err := sleepUntil(ctx, e.cfg.Base.Add(start)); err != nil {
		e.abandon()
		return workload.Stats{}, nil
	}
	e.startOnce.Do(func() { e.startErr = e.start(ctx) })
	if e.startErr != nil {
		return workload.Stats{}, fmt.Errorf("registry %q: %w", e.spec.Name, e.startErr)
	}
	end := start + l.Duration.D()
	if err := sleepUntil(ctx, e.cfg.Base.Add(end)); err != nil {
		e.abandon()
		return workload.Stats{}, nil
	}
	if end >= e.cfg.End {
		e.stopOnce.Do(func() { e.stopErr = e.stop(ctx, true) })
		if e.stopErr != nil {
			return workload.Stats{}, fmt.Errorf("registry %q: %w", e.spec.Name, e.stopErr)
		}
	}
	return workload.Stats{}, nil
}

// abandon stops the registry without judging it: the run was cancelled.
func (e *Engine) abandon() {
	e.stopOnce.Do(func() { e.stopErr = e.stop(context.Background(), false) })
}

// start lists with every watcher, then registers every instance, then
// heartbeats and churns in the background.
func (e *Engine) start(ctx context.Context) error {
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

	if e.cfg.Baseline != nil {
		e.cfg.Baseline()
	}
	first := e.now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(e.spec.Clients, 1))
	var ok int
	var okMu sync.Mutex
	var last time.Duration
	for _, s := range e.slots {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if e.registerRetrying(bgCtx, s) {
				okMu.Lock()
				ok++
				last = max(last, e.now())
				okMu.Unlock()
			}
		})
	}
	wg.Wait()
	var rate float64
	if ok > 0 && last > first {
		rate = float64(ok) / (last - first).Seconds()
	}
	e.mu.Lock()
	e.report.Registered, e.report.Started, e.report.Up, e.report.RegistrationsPerS = ok, first, last, rate
	e.mu.Unlock()
	e.cfg.Log.Info("registry up", "workload", e.spec.Name, "instances", ok, "of", len(e.slots),
		"registrations_per_s", fmt.Sprintf("%.0f", rate))
	if ok == 0 {
		return errors.New("no instance could register")
	}
	if r := e.spec.Registry.Churn; r > 0 {
		e.bg.Go(func() { e.churn(bgCtx, r) })
	}
	return nil
}

// firstTries is how many times an instance tries its first registration,
// as a service's start-up retries: a store under load may refuse one for a
// moment.
const firstTries = 3

func (e *Engine) registerRetrying(ctx context.Context, s *slot) bool {
	for try := 1; ; try++ {
		if e.register(ctx, s) {
			return true
		}
		if try == firstTries || sleepUntil(ctx, time.Now().Add(time.Duration(try)*retryRegister)) != nil {
			return false
		}
	}
}

// retryRegister is the backoff step between first registration tries.
const retryRegister = 250 * time.Millisecond

// key names generation gen of instance idx: unique per registration, as
// registries that name instances by a fresh id do, so that a watcher's
// every sighting points at one registration.
func (e *Engine) key(idx, gen int) string {
	return fmt.Sprintf("%si%05d-g%d", e.spec.KeyPrefix, idx, gen)
}

// value is what an instance registers: an address, padded to value_size.
func (e *Engine) value(key string, idx int) []byte {
	v := fmt.Sprintf(`{"id":%q,"addr":"10.%d.%d.%d:8080"}`, key[len(e.spec.KeyPrefix):], idx>>16&255, idx>>8&255, idx&255)
	if n := e.spec.ValueSize - len(v); n > 0 {
		v += strings.Repeat(" ", n)
	}
	return []byte(v)
}

// register makes the next generation of s, times it and starts its
// heartbeat. It reports whether it registered.
func (e *Engine) register(ctx context.Context, s *slot) bool {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return false
	}
	s.gen++
	key := e.key(s.idx, s.gen)
	sent := e.now()
	l := &life{KeyLife: checker.KeyLife{Key: key, RegSent: sent}}
	e.lives[key] = l
	e.order = append(e.order, l)
	e.mu.Unlock()

	octx, cancel := context.WithTimeout(ctx, e.timeout())
	inst, err := e.reg.Register(octx, key, e.value(key, s.idx))
	cancel()
	end := e.now()
	e.rec.request(plan.OpRegister, sent, sent, end, err)
	if err != nil {
		e.cfg.Log.Debug("register", "key", key, "err", err)
		return false
	}
	e.mu.Lock()
	l.RegAcked, l.acked, l.regAck = true, true, end
	for _, at := range l.early {
		e.notify(l.RegSent, end, at)
	}
	l.early = nil
	e.fanout(l)
	s.inst, s.life, s.lastAck = inst, l, end
	bctx, stop := context.WithCancel(ctx)
	s.stopBeat = stop
	if e.closed {
		// Registered as the run ended, perhaps after the goodbyes went
		// out: say its own.
		e.mu.Unlock()
		e.deregister(ctx, s, true)
		return false
	}
	e.mu.Unlock()
	e.bg.Go(func() { e.beat(bctx, s, inst, l) })
	return true
}

func (e *Engine) timeout() time.Duration {
	if t := e.spec.Timeout.D(); t > 0 {
		return t
	}
	return workload.DefaultTimeout
}

// beat heartbeats one generation every heartbeat interval, from a random
// phase so that instances do not beat in step, until ctx ends. A beat
// slower than the interval delays the next instead of piling up, as a
// client's keepalive loop does.
func (e *Engine) beat(ctx context.Context, s *slot, inst stores.Instance, l *life) {
	every := e.spec.Registry.Heartbeat.D()
	e.mu.Lock()
	next := e.now() + time.Duration(e.rnd.Int64N(int64(every)))
	e.mu.Unlock()
	for {
		if next >= e.cfg.End || sleepUntil(ctx, e.cfg.Base.Add(next)) != nil {
			return // the registry's life ends: no beat is due after it
		}
		sent := e.now()
		octx, cancel := context.WithTimeout(ctx, e.timeout())
		expired, err := inst.KeepAlive(octx)
		cancel()
		end := e.now()
		if ctx.Err() != nil {
			// Stopped mid-beat (goodbye, vanish, the end): what came back
			// is about a generation that is over.
			return
		}
		if expired && err == nil {
			err = errExpired
		}
		e.rec.request(plan.OpKeepalive, next, sent, end, err)
		if !expired && err == nil {
			e.mu.Lock()
			l.lastBeat, s.lastAck = end, end
			e.mu.Unlock()
		}
		if expired {
			e.expired(ctx, s, l)
			return
		}
		next += every
		if now := e.now(); next < now {
			next += (now - next + every - 1) / every * every
		}
	}
}

var errExpired = errors.New("the store no longer holds the instance")

// expired handles a store that dropped a live instance: the instance
// registers again, as a client library does after a lost lease or session.
func (e *Engine) expired(ctx context.Context, s *slot, l *life) {
	e.mu.Lock()
	if s.life != l {
		e.mu.Unlock()
		return // a later generation holds the slot
	}
	l.expired = true
	e.report.Expired++
	if s.busy || e.closed {
		e.mu.Unlock()
		return
	}
	s.busy = true
	inst := s.inst
	e.mu.Unlock()
	e.cfg.Log.Info("instance expired while alive; registering again", "key", l.Key)
	inst.Close()
	e.register(ctx, s)
	e.mu.Lock()
	s.busy = false
	e.mu.Unlock()
}

// churn says goodbye to a random instance and registers it again, rate
// times a second.
func (e *Engine) churn(ctx context.Context, rate float64) {
	every := time.Duration(float64(time.Second) / rate)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s := e.pick(); s != nil {
			go e.rejoin(ctx, s)
		}
	}
}

// pick takes a random registered instance that nothing else is doing
// something to, marking it busy and counting the churn in e.ops under the
// lock that stop closes the registry with, so that stop waits for every
// churn it did not prevent; nil if there is none.
func (e *Engine) pick() *slot {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := len(e.slots)
	if n == 0 || e.closed {
		return nil
	}
	first := e.rnd.IntN(n)
	for k := range n {
		s := e.slots[(first+k)%n]
		if !s.busy && s.inst != nil {
			s.busy = true
			e.ops.Add(1)
			return s
		}
	}
	return nil
}

// rejoin is one churn: goodbye, then a new registration.
func (e *Engine) rejoin(ctx context.Context, s *slot) {
	defer e.ops.Done()
	e.deregister(ctx, s, false)
	e.register(ctx, s)
	e.mu.Lock()
	s.busy = false
	e.mu.Unlock()
}

// deregister says goodbye for s's current generation. final marks the
// run's own cleanup, which is checked but not measured.
func (e *Engine) deregister(ctx context.Context, s *slot, final bool) {
	e.mu.Lock()
	inst, l := s.inst, s.life
	if inst == nil {
		e.mu.Unlock()
		return
	}
	s.stopBeat()
	s.inst, s.life = nil, nil
	sent := e.now()
	l.DeregSent, l.final = sent, final
	e.mu.Unlock()
	octx, cancel := context.WithTimeout(ctx, e.timeout())
	err := inst.Deregister(octx)
	cancel()
	end := e.now()
	inst.Close()
	if !final {
		e.rec.request(plan.OpDeregister, sent, sent, end, err)
	}
	if err != nil {
		return
	}
	e.mu.Lock()
	l.DeregAcked, l.deregDone, l.deregAck = true, true, end
	if !final {
		for _, at := range l.earlyGone {
			e.notify(l.DeregSent, end, at)
		}
	}
	l.earlyGone = nil
	e.mu.Unlock()
}

// Vanish silences v's share of the registered instances: no heartbeat,
// nothing closed. It returns when that took effect and how to bring them
// back (each registers anew, as a restarted process would).
func (e *Engine) Vanish(v plan.VanishSpec) (time.Time, func(context.Context) error, error) {
	e.mu.Lock()
	var live []*slot
	for _, s := range e.slots {
		if !s.busy && s.inst != nil {
			live = append(live, s)
		}
	}
	if len(live) == 0 {
		e.mu.Unlock()
		return time.Time{}, nil, fmt.Errorf("registry %q: no registered instance to vanish", e.spec.Name)
	}
	e.rnd.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	gone := live[:v.Of(len(live))]
	at := e.now()
	var insts []stores.Instance
	for _, s := range gone {
		s.busy = true
		s.stopBeat()
		s.inst.Vanish()
		s.life.vanished, s.life.vanishedAt = true, at
		if s.life.lastBeat == 0 {
			s.life.lastBeat = s.life.regAck
		}
		insts = append(insts, s.inst)
		s.inst, s.life = nil, nil
	}
	e.report.Vanished += len(gone)
	e.mu.Unlock()
	applied := time.Now()
	e.cfg.Log.Info("instances vanished", "workload", e.spec.Name, "count", len(gone))
	undo := func(ctx context.Context) error {
		var wg sync.WaitGroup
		for i, s := range gone {
			wg.Go(func() {
				insts[i].Close()
				e.register(ctx, s)
				e.mu.Lock()
				s.busy = false
				e.mu.Unlock()
			})
		}
		wg.Wait()
		return nil
	}
	return applied, undo, nil
}

// stop ends the registry. With judge, it says goodbye for every instance,
// waits for every watcher to agree with the store, and runs the watch
// checker; without (the run was cancelled), it only stops.
func (e *Engine) stop(ctx context.Context, judge bool) error {
	e.mu.Lock()
	started := e.bgCancel != nil
	e.closed = true
	e.mu.Unlock()
	if !started {
		return nil
	}
	// Churn and revivals in flight finish (a registration that completes
	// now is closed at once), so that every key has its last word.
	e.ops.Wait()
	if !judge {
		e.bgCancel()
		e.bg.Wait()
		e.closeAll()
		return nil
	}
	// Heartbeats stop first: the timeline is over, and a beat sent now
	// would be measured outside every phase.
	e.mu.Lock()
	for _, s := range e.slots {
		if s.inst != nil {
			s.stopBeat()
		}
	}
	e.mu.Unlock()
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(e.spec.Clients, 1))
	for _, s := range e.slots {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			e.deregister(ctx, s, true)
		})
	}
	wg.Wait()

	settle := e.spec.Registry.TTL.D()*2 + settleSlack
	final, err := e.settle(ctx, settle)
	e.bgCancel()
	e.bg.Wait()
	e.closeAll()
	if err != nil {
		return fmt.Errorf("list the registry after the run: %w", err)
	}
	e.judge(final)
	return nil
}

// settle waits, up to within, until every watcher's view is the store's
// listing, and returns that listing.
func (e *Engine) settle(ctx context.Context, within time.Duration) ([]string, error) {
	deadline := time.Now().Add(within)
	for {
		lctx, cancel := context.WithTimeout(ctx, e.timeout())
		final, err := e.reg.List(lctx, e.spec.KeyPrefix)
		cancel()
		if err == nil && e.agree(final) || time.Now().After(deadline) {
			return final, err
		}
		if sleepUntil(ctx, time.Now().Add(200*time.Millisecond)) != nil {
			return final, ctx.Err()
		}
	}
}

func (e *Engine) agree(keys []string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range e.watchers {
		if len(w.view) != len(keys) {
			return false
		}
		for _, k := range keys {
			if !w.view[k] {
				return false
			}
		}
	}
	return true
}

func (e *Engine) closeAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.slots {
		if s.inst != nil {
			s.stopBeat()
			s.inst.Close()
			s.inst = nil
		}
	}
}

func (e *Engine) judge(final []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]checker.KeyLife, len(e.order))
	for i, l := range e.order {
		keys[i] = l.KeyLife
		if l.vanished && l.detected {
			e.report.Detected++
		}
	}
	logs := make([]checker.WatchLog, len(e.watchers))
	for i, w := range e.watchers {
		logs[i] = w.log
		e.report.WatchErrors += w.errs
	}
	model := checker.WatchSnapshots
	switch e.reg.Semantics() {
	case stores.WatchEvents:
		model = checker.WatchEvents
	case stores.WatchHealth:
		model = checker.WatchHealth
	}
	e.report.Watch = checker.CheckWatches(model, keys, logs, final)
	e.report.Final = len(final)
}

// Report returns what the registry measured; complete once the run's last
// load returned.
func (e *Engine) Report() Report {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.report
}

func (e *Engine) notify(sent, acked, at time.Duration) { e.rec.observe(plan.OpNotify, sent, acked, at) }

// fanout records l's fan-out once every watcher has been told and its
// registration acknowledged. e.mu must be held.
func (e *Engine) fanout(l *life) {
	if l.acked && l.told == len(e.watchers) && l.told > 0 {
		e.rec.observe(plan.OpFanout, l.RegSent, l.regAck, l.lastTold)
	}
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
