package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/checker"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
)

// holderWait is how much longer than twice the TTL a pause waits for a
// contender to hold the lock.
const holderWait = 5 * time.Second

// retryAcquire is how long a contender waits after a failed acquisition
// before it asks again.
const retryAcquire = 200 * time.Millisecond

// LockConfig is what a LockEngine needs besides its workload.
type LockConfig struct {
	Locker   stores.Locker
	Classify func(error) string
	Sink     metrics.Sink
	Base     time.Time
	End      time.Duration
	// Dial opens connections from the workload's region; nil dials
	// directly. Each contender's go through a Pauser of its own.
	Dial stores.DialFunc
	Log  *slog.Logger
}

// LockEngine is one lock workload: contenders that take turns holding a
// lock with the store's recipe, each believing it holds it from its
// acquisition's return until it lets go or learns its session is gone.
type LockEngine struct {
	spec plan.WorkloadSpec
	cfg  LockConfig
	rec  *recorder

	startOnce sync.Once
	stopOnce  sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	mu       sync.Mutex
	holds    []checker.Hold
	holder   *contender // the contender that believes it holds the lock
	released struct {
		sent, acked time.Duration
		ok          bool
	}
	pausedAt time.Duration // a pause of the holder awaiting a takeover
	waiting  bool
	report   LockReport
}

type contender struct {
	id     int
	pauser *stores.Pauser
	paused bool
}

// LockReport is what the lock workload measured besides its samples.
type LockReport struct {
	Contenders int               `json:"contenders"`
	Holds      int               `json:"holds"`
	Lost       int               `json:"lost"` // holds that ended by learning the session was gone
	Paused     int               `json:"paused"`
	Overlaps   []checker.Overlap `json:"overlaps"`
}

// NewLock returns the engine of spec, which must have a lock block.
func NewLock(spec plan.WorkloadSpec, cfg LockConfig) (*LockEngine, error) {
	switch {
	case spec.Lock == nil:
		return nil, fmt.Errorf("workload %q is not a lock workload", spec.Name)
	case cfg.Locker == nil || cfg.Sink == nil || cfg.Classify == nil:
		return nil, fmt.Errorf("lock workload %q: no locker, sink or classifier", spec.Name)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	e := &LockEngine{spec: spec, cfg: cfg, rec: newRecorder(spec.Name, cfg.End, cfg.Sink, cfg.Classify)}
	e.report.Contenders = spec.Lock.Contenders
	return e, nil
}

func (e *LockEngine) now() time.Duration { return time.Since(e.cfg.Base) }

// Run starts the contenders at the first load and stops them at the end
// of the last.
func (e *LockEngine) Run(ctx context.Context, l plan.LoadSpec, start time.Duration) (workload.Stats, error) {
	if err := sleepUntil(ctx, e.cfg.Base.Add(start)); err != nil {
		return workload.Stats{}, nil
	}
	e.startOnce.Do(func() {
		cctx, cancel := context.WithCancel(ctx)
		e.cancel = cancel
		for i := range e.spec.Lock.Contenders {
			c := &contender{id: i + 1, pauser: stores.NewPauser(e.cfg.Dial)}
			e.wg.Go(func() { e.contend(cctx, c) })
		}
	})
	end := start + l.Duration.D()
	_ = sleepUntil(ctx, e.cfg.Base.Add(end))
	if end >= e.cfg.End || ctx.Err() != nil {
		e.stopOnce.Do(func() {
			e.cancel()
			e.wg.Wait()
		})
	}
	return workload.Stats{}, nil
}

// contend is one contender's life: open a session, acquire, hold, release,
// again; a lost session is replaced by a new one.
func (e *LockEngine) contend(ctx context.Context, c *contender) {
	var lc stores.Contender
	defer func() {
		if lc != nil {
			lc.Close()
		}
	}()
	for ctx.Err() == nil {
		if lc == nil {
			var err error
			octx, cancel := context.WithTimeout(ctx, e.timeout())
			lc, err = e.cfg.Locker.Contender(octx, c.id, c.pauser.Dial)
			cancel()
			if err != nil {
				e.cfg.Log.Debug("contender session", "contender", c.id, "err", err)
				_ = sleepUntil(ctx, time.Now().Add(retryAcquire))
				continue
			}
		}
		asked := e.now()
		err := lc.Acquire(ctx)
		got := e.now()
		if ctx.Err() != nil {
			return
		}
		e.rec.request(plan.OpAcquire, asked, asked, got, err)
		if err != nil {
			lc.Close()
			lc = nil
			_ = sleepUntil(ctx, time.Now().Add(retryAcquire))
			continue
		}
		e.granted(c, got)
		lost := e.hold(ctx, c, lc)
		if lost {
			lc.Close()
			lc = nil
			continue
		}
		if ctx.Err() != nil {
			return
		}
		sent := e.now()
		e.letGo(c, sent, false)
		octx, cancel := context.WithTimeout(ctx, e.timeout())
		err = lc.Release(octx)
		cancel()
		acked := e.now()
		e.rec.request(plan.OpRelease, sent, sent, acked, err)
		e.mu.Lock()
		e.released.sent, e.released.acked, e.released.ok = sent, acked, err == nil
		e.mu.Unlock()
		if err != nil {
			lc.Close()
			lc = nil
		}
	}
}

// hold keeps the lock for the workload's hold time, and then for as long
// as the contender is paused: a paused process's own clock does not move
// it on. It reports whether the contender learned it lost the lock.
func (e *LockEngine) hold(ctx context.Context, c *contender, lc stores.Contender) bool {
	t := time.NewTimer(e.spec.Lock.Hold.D())
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		e.letGo(c, e.now(), false)
		return false
	case <-lc.Lost():
		e.letGo(c, e.now(), true)
		return true
	}
	for {
		e.mu.Lock()
		paused := c.paused
		e.mu.Unlock()
		if !paused {
			break
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			e.letGo(c, e.now(), false)
			return false
		}
	}
	// Awake again (or never paused): a careful holder looks at its
	// session before it goes on. Until now it could not.
	select {
	case <-lc.Lost():
		e.letGo(c, e.now(), true)
		return true
	default:
		return false
	}
}

// granted: c holds the lock from at.
func (e *LockEngine) granted(c *contender, at time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.holder = c
	e.holds = append(e.holds, checker.Hold{Contender: c.id, From: at, To: -1})
	e.report.Holds++
	if e.waiting {
		e.waiting = false
		e.rec.observe(plan.OpTakeover, e.pausedAt, e.pausedAt, at)
	} else if e.released.ok {
		e.rec.observe(plan.OpHandover, e.released.sent, e.released.acked, at)
	}
	e.released.ok = false
}

// letGo: c stops believing it holds the lock at at.
func (e *LockEngine) letGo(c *contender, at time.Duration, lost bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.holds) - 1; i >= 0; i-- {
		if h := &e.holds[i]; h.Contender == c.id && h.To < 0 {
			h.To, h.Lost = at, lost
			if lost {
				e.report.Lost++
			}
			break
		}
	}
	if e.holder == c {
		e.holder = nil
	}
}

// Pause freezes the contender that holds the lock: it sends and hears
// nothing, and still believes it holds the lock, until
// the fault ends.
func (e *LockEngine) Pause() (time.Time, func(context.Context) error, error) {
	// Between two holders nobody holds the lock: wait for the next.
	deadline := time.Now().Add(e.spec.Lock.TTL.D()*2 + holderWait)
	e.mu.Lock()
	for e.holder == nil && time.Now().Before(deadline) {
		e.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		e.mu.Lock()
	}
	c := e.holder
	if c == nil {
		e.mu.Unlock()
		return time.Time{}, nil, fmt.Errorf("lock workload %q: no contender held the lock to pause", e.spec.Name)
	}
	c.paused = true
	c.pauser.Freeze()
	e.pausedAt, e.waiting = e.now(), true
	e.released.ok = false
	e.report.Paused++
	e.mu.Unlock()
	e.cfg.Log.Info("lock holder paused", "workload", e.spec.Name, "contender", c.id)
	return time.Now(), func(context.Context) error {
		e.mu.Lock()
		c.paused = false
		e.mu.Unlock()
		c.pauser.Thaw()
		return nil
	}, nil
}

// Report returns what the workload measured, with the mutual-exclusion
// checker's verdict over every hold; complete after the last load.
func (e *LockEngine) Report() LockReport {
	e.mu.Lock()
	defer e.mu.Unlock()
	holds := make([]checker.Hold, 0, len(e.holds))
	for _, h := range e.holds {
		if h.To < 0 {
			h.To = e.cfg.End
		}
		holds = append(holds, h)
	}
	r := e.report
	r.Overlaps = checker.CheckMutex(holds)
	return r
}

func (e *LockEngine) timeout() time.Duration {
	if t := e.spec.Timeout.D(); t > 0 {
		return t
	}
	return workload.DefaultTimeout
}
