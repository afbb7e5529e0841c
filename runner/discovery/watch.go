package discovery

import (
	"context"
	"slices"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/checker"
	"github.com/coordlab/scenario/stores"
)

// watchRetry is how long a watch that failed outright waits before it is
// started again.
const watchRetry = 200 * time.Millisecond

// watch runs one consumer until ctx ends, restarting its watch if the
// store's recipe gives up.
func (e *Engine) watch(ctx context.Context, w *watcher) {
	first := true
	for ctx.Err() == nil {
		err := e.reg.Watch(ctx, w.idx, e.spec.KeyPrefix, func(ev stores.WatchEvent) {
			e.told(w, ev, e.now())
			if first && ev.Kind == stores.WatchList {
				first = false
				close(w.listed)
			}
		})
		if err != nil && ctx.Err() == nil {
			e.cfg.Log.Debug("watch failed; starting it again", "watcher", w.idx, "err", err)
			e.mu.Lock()
			w.errs++
			e.mu.Unlock()
			_ = sleepUntil(ctx, time.Now().Add(watchRetry))
		}
	}
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
