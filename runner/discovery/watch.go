package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/checker"
	"github.com/coordlab/scenario/stores"
)

// watchRetry is how long a watch that failed outright waits before it is
// started again.
const watchRetry = 200 * time.Millisecond

// watchFunc is a store's watch recipe: a registry's or a key watcher's
// Watch.
type watchFunc func(ctx context.Context, watcher int, prefix string, fn func(stores.WatchEvent)) error

// keepWatching runs watcher idx's watch of prefix until ctx ends, starting
// it again after failed is told that the store's recipe gave up.
func keepWatching(ctx context.Context, log *slog.Logger, watch watchFunc, idx int, prefix string, fn func(stores.WatchEvent), failed func()) {
	for ctx.Err() == nil {
		err := watch(ctx, idx, prefix, fn)
		if err != nil && ctx.Err() == nil {
			log.Debug("watch failed; starting it again", "watcher", idx, "prefix", prefix, "err", err)
			failed()
			_ = sleepUntil(ctx, time.Now().Add(watchRetry))
		}
	}
}

// awaitListed waits until every watcher's first listing closed listed[i]
// (watcher i+1's), up to listTimeout.
func awaitListed(ctx context.Context, prefix string, listed []chan struct{}) error {
	deadline := time.NewTimer(listTimeout)
	defer deadline.Stop()
	for i, ch := range listed {
		select {
		case <-ch:
		case <-deadline.C:
			return fmt.Errorf("watcher %d did not list %s within %v", i+1, prefix, listTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// watch runs one consumer until ctx ends.
func (e *Engine) watch(ctx context.Context, w *watcher) {
	first := true
	keepWatching(ctx, e.cfg.Log, e.reg.Watch, w.idx, e.spec.KeyPrefix, func(ev stores.WatchEvent) {
		e.told(w, ev, e.now())
		if first && ev.Kind == stores.WatchList {
			first = false
			close(w.listed)
		}
	}, func() {
		e.mu.Lock()
		w.errs++
		e.mu.Unlock()
	})
}

// told takes what watcher w learned at at: its log for the checker, its
// view, and the notification, fan-out and detection times it completes.
func (e *Engine) told(w *watcher, ev stores.WatchEvent, at time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev.Err != nil {
		w.errs++
		return
	}
	seen := checker.Seen{At: at, Kind: ev.Kind, Key: ev.Key, Revision: ev.Revision}
	switch ev.Kind {
	case stores.WatchList:
		seen.Keys = slices.Clone(ev.Keys)
		next := make(map[string]bool, len(ev.Keys))
		for _, k := range ev.Keys {
			next[k] = true
		}
		// The first listing is the state before the registry started:
		// nothing in it is news.
		if len(w.log.Seen) > 0 {
			for _, k := range ev.Keys {
				if !w.view[k] {
					e.appeared(k, at)
				}
			}
			for k := range w.view {
				if !next[k] {
					e.gone(k, at)
				}
			}
		}
		w.view = next
	case stores.WatchPut:
		if !w.view[ev.Key] {
			e.appeared(ev.Key, at)
		}
		w.view[ev.Key] = true
	case stores.WatchDelete:
		if w.view[ev.Key] {
			e.gone(ev.Key, at)
		}
		delete(w.view, ev.Key)
	}
	w.log.Seen = append(w.log.Seen, seen)
}

// appeared: a watcher was told key exists. e.mu must be held.
func (e *Engine) appeared(key string, at time.Duration) {
	l := e.lives[key]
	if l == nil {
		return // a phantom: the checker reports it
	}
	l.told++
	l.lastTold = max(l.lastTold, at)
	if !l.acked {
		l.early = append(l.early, at)
		return
	}
	e.notify(l.RegSent, l.regAck, at)
	e.fanout(l)
}

// gone: a watcher was told key no longer exists. e.mu must be held.
func (e *Engine) gone(key string, at time.Duration) {
	l := e.lives[key]
	switch {
	case l == nil || l.final:
	case l.vanished:
		// The first watcher to hear of it is when the registry's users
		// can first know the instance is dead.
		if !l.detected {
			l.detected = true
			e.rec.observe(plan.OpDetect, l.vanishedAt, min(l.lastBeat, l.vanishedAt), at)
		}
	case l.DeregSent > 0 && l.deregDone:
		e.notify(l.DeregSent, l.deregAck, at)
	case l.DeregSent > 0:
		l.earlyGone = append(l.earlyGone, at)
	}
}
