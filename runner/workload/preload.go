package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// ErrPreload marks a preload in which some writes failed.
var ErrPreload = errors.New("preload incomplete")

// Preload writes every key of the keyspace once, with n writers at a time,
// when the workload asks for it (spec.Preload); otherwise it does nothing.
// Key i gets the value tagged (PreloadWriter, i), so a checker knows every
// initial value. Writes are not recorded as samples, but they do go to the
// history hook, every attempt. A write that fails in a way that may pass
// (see retryable) is tried again, up to preloadAttempts in all: the
// preload sets the stage and is not measured, and one write timing out
// while a fresh cluster settles should not fail the run. A key that still
// fails does not stop the others: Preload carries on and then returns an
// error wrapping ErrPreload and the first failure.
func (e *Engine) Preload(ctx context.Context, n int) error {
	if !e.spec.Preload {
		return nil
	}
	total := e.cfg.keys.Len()
	n = int(min(int64(max(n, 1)), total))
	// Progress every 1% keeps the callback cheap on big keyspaces.
	step := max(total/100, 1)
	var (
		next, done, failed atomic.Int64
		mu                 sync.Mutex // serialises progress calls and firstErr
		reported           int64
		firstErr           error
		wg                 sync.WaitGroup
	)
	// Timed out as the load's ops are (see opTimer): no deadline, so no
	// runtime timer and no grpc-timeout header per write.
	wd := startWatchdog(e.timeout, e.now)
	defer wd.close()
	for w := range n {
		timer := newOpTimer(ctx)
		wd.add(timer)
		wg.Go(func() {
			defer timer.close()
			size := max(e.cfg.valueSize, ValueTagSize)
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= total {
					return
				}
				key := e.cfg.keys.Key(i)
				val := AppendValue(make([]byte, 0, size), size, PreloadWriter, uint64(i))
				for attempt := 1; ; attempt++ {
					call := e.now()
					res := e.client.Do(timer.begin(call+e.timeout), stores.Op{Kind: plan.OpPut, Key: key, Value: val})
					ret := e.now()
					class := errClass(res, timer.end())
					if h := e.opts.history; h != nil {
						h(HistoryOp{ClientID: PreloadClientBase + w, Op: plan.OpPut, Key: key, Value: val, Call: call, Return: ret, Class: class})
					}
					if class == "" {
						break
					}
					if attempt < preloadAttempts && retryable(class) && sleepCtx(ctx, preloadRetryPause<<(attempt-1)) {
						continue
					}
					if failed.Add(1) == 1 {
						mu.Lock()
						firstErr = fmt.Errorf("put %q: %s after %d attempts: %w", key, class, attempt, res.Err)
						mu.Unlock()
					}
					break
				}
				if d := done.Add(1); e.opts.progress != nil && (d%step == 0 || d == total) {
					mu.Lock()
					if d > reported {
						reported = d
						e.opts.progress(d, total)
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("workload %q: preload stopped after %d of %d keys: %w", e.spec.Name, done.Load(), total, err)
	}
	if f := failed.Load(); f > 0 {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("workload %q: %w: %d of %d writes failed, first: %w", e.spec.Name, ErrPreload, f, total, firstErr)
	}
	return nil
}

// A preload write is tried up to preloadAttempts times, pausing
// preloadRetryPause before the second attempt and twice that before the
// third: long enough for an election on the default timings to end.
const (
	preloadAttempts   = 3
	preloadRetryPause = 250 * time.Millisecond
)

// retryable says whether a write that failed so may pass if tried again:
// one that timed out or was refused for want of a leader or a quorum, or
// lost its connection. A timed-out write may still have been applied; it
// is written again with the same value, and the history shows both.
func retryable(class string) bool {
	switch class {
	case plan.ErrTimeout, plan.ErrUnavailable, plan.ErrConnection:
		return true
	}
	return false
}

// sleepCtx waits d, or less if ctx ends first, and says whether ctx is
// still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
