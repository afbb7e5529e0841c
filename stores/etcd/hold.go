package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/coordlab/scenario/stores"
)

// watchHolder holds watches over opts.Conns clients (connections), each
// carrying some of the holder's watch streams.
type watchHolder struct {
	clis   []*clientv3.Client
	ctx    context.Context
	cancel context.CancelFunc
}

// NewWatchHolder opens max(opts.Conns, 1) clients, each starting on
// another member.
func NewWatchHolder(ctx context.Context, opts stores.ClientOptions) (stores.WatchHolder, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("etcd watches: no endpoints")
	}
	h := &watchHolder{}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if opts.Workload.Client.LeaderRequired() {
		// The member then ends the streams once it loses its leader,
		// as it refuses the workload's requests.
		h.ctx = clientv3.WithRequireLeader(h.ctx)
	}
	urls := clientURLs(opts.Endpoints)
	for i := range max(opts.Conns, 1) {
		rotated := append(append([]string(nil), urls[i%len(urls):]...), urls[:i%len(urls)]...)
		cli, err := clientv3.New(workloadConfig(rotated, opts.DialFunc(), opts.Workload.Client))
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("etcd watches: client %d: %w", i+1, err)
		}
		h.clis = append(h.clis, cli)
	}
	return h, nil
}

// Hold starts a watch per key and waits for etcd to confirm each
// (WithCreatedNotify). Nothing reads the watches afterwards: the keys are
// the holder's own, and the point is what holding them costs.
func (h *watchHolder) Hold(ctx context.Context, keys []string, concurrency int) error {
	// clientv3 creates a stream's watches one at a time, each waiting for
	// etcd's answer, and opens a stream per distinct outgoing metadata:
	// concurrency streams, spread over the clients, set that many at once.
	n := max(concurrency, 1)
	ctxs := make([]context.Context, n)
	for i := range ctxs {
		ctxs[i] = metadata.AppendToOutgoingContext(h.ctx, "scenario-watch-stream", strconv.Itoa(i))
	}
	chans := make([]clientv3.WatchChan, len(keys))
	for i, k := range keys {
		s := i % n
		chans[i] = h.clis[s%len(h.clis)].Watch(ctxs[s], k, clientv3.WithCreatedNotify())
	}
	for i, ch := range chans {
		select {
		case resp, ok := <-ch:
			if !ok || resp.Err() != nil {
				return fmt.Errorf("etcd watches: watch %s: %v", keys[i], resp.Err())
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (h *watchHolder) Close() error {
	h.cancel()
	var errs []error
	for _, c := range h.clis {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
