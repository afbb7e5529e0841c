package etcd

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/coordlab/scenario/stores"
)

// keyWatcher is the configuration consumer's recipe on etcd: a prefix
// watch from the revision of a listing, resumed from the next revision
// after a broken connection and listed anew after a compaction. It is the
// registry's watch with values, and no instances.
type keyWatcher struct{ *registry }

// NewKeyWatcher opens one connection for Read; each watcher gets its own
// when it starts watching.
func NewKeyWatcher(ctx context.Context, opts stores.ClientOptions) (stores.KeyWatcher, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("etcd key watcher: no endpoints")
	}
	r := &registry{
		urls: clientURLs(opts.Endpoints), dial: opts.DialFunc(), client: opts.Workload.Client,
		timeout: opts.Timeout, watchers: map[int]*clientv3.Client{}, values: true,
	}
	if r.timeout <= 0 {
		r.timeout = DefaultOpTimeout
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("etcd key watcher: %w", err)
	}
	cli, err := r.dialRotated(0)
	if err != nil {
		return nil, fmt.Errorf("etcd key watcher: %w", err)
	}
	r.conns = append(r.conns, cli)
	return keyWatcher{r}, nil
}

func (w keyWatcher) Read(ctx context.Context, prefix string) (map[string][]byte, error) {
	ls, err := w.list(ctx, w.conns[0], prefix)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(ls.Keys))
	for i, k := range ls.Keys {
		out[k] = ls.Values[i]
	}
	return out, nil
}
