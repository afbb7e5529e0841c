package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/coordlab/scenario/stores"
)

// watchHolder holds exists watches over opts.Conns sessions: a watch on a
// key that does not exist is kept by the server like any data watch, and
// go-zookeeper sets every one of a session's watches again when it
// reconnects to another server (SetWatches), as the Java client does.
type watchHolder struct {
	conns []*zk.Conn
}

// NewWatchHolder opens max(opts.Conns, 1) sessions, each starting on
// another server.
func NewWatchHolder(ctx context.Context, opts stores.ClientOptions) (stores.WatchHolder, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("zookeeper watches: no endpoints")
	}
	addrs := make([]string, len(opts.Endpoints))
	for i, ep := range opts.Endpoints {
		addrs[i] = ep.ClientAddr
	}
	h := &watchHolder{}
	for i := range max(opts.Conns, 1) {
		if err := ctx.Err(); err != nil {
			h.Close()
			return nil, err
		}
		conn, _, err := connectRotated(addrs, uint64(i), workloadSessionTimeout(opts.Workload.Client), zkDialer(opts.DialFunc()), nil)
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("zookeeper watches: session %d: %w", i+1, err)
		}
		h.conns = append(h.conns, conn)
	}
	return h, nil
}

// Hold sets an exists watch on each key's znode.
func (h *watchHolder) Hold(ctx context.Context, keys []string, concurrency int) error {
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range max(concurrency, 1) {
		wg.Go(func() {
			for i := range work {
				conn := h.conns[i%len(h.conns)]
				if _, err := await(ctx, func() (bool, error) {
					ok, _, _, err := conn.ExistsW(keys[i])
					return ok, err
				}); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("zookeeper watches: watch %s: %w", keys[i], err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range keys {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

func (h *watchHolder) Close() error {
	var wg sync.WaitGroup
	for _, c := range h.conns {
		wg.Go(func() {
			done := make(chan struct{})
			go func() { c.Close(); close(done) }()
			select {
			case <-done:
			case <-time.After(closeTimeout):
			}
		})
	}
	wg.Wait()
	return nil
}
