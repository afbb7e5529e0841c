package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/workload"
)

// syncPings is how many ping exchanges estimate a worker's clock offset.
const syncPings = 7

// Remote is the runner's end of one worker.
type Remote struct {
	name    string
	in      io.WriteCloser
	mu      sync.Mutex
	enc     *json.Encoder
	sink    metrics.Sink
	history func(workload.HistoryOp)
	now     func() time.Duration // the runner's timeline clock

	// offset is worker clock minus runner clock; margin is the bound on
	// its error (half the best round trip). Set while connecting, read by
	// the reader goroutine, which nothing orders with the setter but the
	// worker's own replies over the network: hence atomics.
	offset, margin atomic.Int64

	pongs   chan Pong
	ready   chan error
	pending map[int]chan Done
	nextID  int
	closed  chan struct{} // the worker's stream ended
	readErr error
}

// RemoteOptions wire a Remote into the runner.
type RemoteOptions struct {
	Name string
	// Sink receives the worker's samples, on the runner's timeline; it is
	// used from one goroutine.
	Sink metrics.Sink
	// History receives the worker's operations, on the runner's timeline
	// and widened by the clock offset's margin; nil drops them.
	History func(workload.HistoryOp)
	// Now is the runner's timeline clock.
	Now func() time.Duration
}

// Connect sends setup over in, reads the worker's answers from out, waits
// until it is ready and measures its clock. Close in to end the worker.
func Connect(ctx context.Context, in io.WriteCloser, out io.Reader, setup Setup, opts RemoteOptions) (*Remote, error) {
	r := &Remote{name: opts.Name, in: in, enc: json.NewEncoder(in), sink: opts.Sink, history: opts.History, now: opts.Now,
		pongs: make(chan Pong, syncPings), ready: make(chan error, 1), pending: map[int]chan Done{}, closed: make(chan struct{})}
	go r.read(out)
	setup.Now = r.now()
	if err := r.send(In{Setup: &setup}); err != nil {
		return nil, fmt.Errorf("worker %s: send setup: %w", r.name, err)
	}
	select {
	case err := <-r.ready:
		if err != nil {
			return nil, fmt.Errorf("worker %s: %w", r.name, err)
		}
	case <-r.closed:
		return nil, fmt.Errorf("worker %s ended before it was ready: %v", r.name, r.readErr)
	case <-ctx.Done():
		return nil, fmt.Errorf("worker %s not ready: %w", r.name, ctx.Err())
	}
	if err := r.syncClock(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Offset is the worker's clock minus the runner's, and the bound on that
// figure's error.
func (r *Remote) Offset() (offset, margin time.Duration) {
	return time.Duration(r.offset.Load()), time.Duration(r.margin.Load())
}

func (r *Remote) send(m In) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.enc.Encode(m)
}

// syncClock takes the offset from the ping with the shortest round trip:
// the worker read its clock somewhere within that round trip.
func (r *Remote) syncClock(ctx context.Context) error {
	best := time.Duration(-1)
	for range syncPings {
		t0 := r.now()
		if err := r.send(In{Ping: &t0}); err != nil {
			return fmt.Errorf("worker %s: ping: %w", r.name, err)
		}
		select {
		case p := <-r.pongs:
			t1 := r.now()
			rtt := t1 - p.Echo
			if best < 0 || rtt < best {
				best = rtt
				r.offset.Store(int64(p.Worker - (p.Echo + rtt/2)))
				r.margin.Store(int64(rtt/2 + time.Millisecond))
			}
		case <-r.closed:
			return fmt.Errorf("worker %s ended during clock sync: %v", r.name, r.readErr)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (r *Remote) read(out io.Reader) {
	defer close(r.closed)
	dec := json.NewDecoder(bufio.NewReaderSize(out, 64<<10))
	for {
		var m Out
		if err := dec.Decode(&m); err != nil {
			if !errors.Is(err, io.EOF) {
				r.readErr = err
			} else {
				r.readErr = io.ErrUnexpectedEOF
			}
			return
		}
		switch {
		case m.Ready:
			r.ready <- nil
		case m.Err != "":
			r.ready <- errors.New(m.Err)
		case m.Pong != nil:
			r.pongs <- *m.Pong
		case m.Sample != nil:
			off := time.Duration(r.offset.Load())
			s := *m.Sample
			s.Intended -= off
			s.Start -= off
			s.End -= off
			r.sink.Record(s)
		case m.History != nil && r.history != nil:
			off, margin := r.Offset()
			h := *m.History
			h.Call -= off + margin
			h.Return += margin - off
			r.history(h)
		case m.Done != nil:
			r.mu.Lock()
			ch := r.pending[m.Done.ID]
			delete(r.pending, m.Done.ID)
			r.mu.Unlock()
			if ch != nil {
				ch <- *m.Done
			}
		}
	}
}

// Run runs l on the worker from start on the runner's timeline, and
// returns its stats once the worker has sent every outcome of it.
func (r *Remote) Run(ctx context.Context, l plan.LoadSpec, start time.Duration) (workload.Stats, error) {
	ch := make(chan Done, 1)
	r.mu.Lock()
	r.nextID++
	id := r.nextID
	r.pending[id] = ch
	r.mu.Unlock()
	if err := r.send(In{Load: &Load{ID: id, Load: l, Start: start + time.Duration(r.offset.Load())}}); err != nil {
		return workload.Stats{}, fmt.Errorf("worker %s: %w", r.name, err)
	}
	cancelled := ctx.Done()
	for {
		select {
		case d := <-ch:
			if d.Err != "" {
				return d.Stats, fmt.Errorf("worker %s: %s", r.name, d.Err)
			}
			return d.Stats, nil
		case <-cancelled:
			_ = r.send(In{Cancel: id})
			cancelled = nil // wait for its Done: its last outcomes come first
		case <-r.closed:
			return workload.Stats{}, fmt.Errorf("worker %s ended: %v", r.name, r.readErr)
		}
	}
}

// Close ends the worker's input, which ends the worker.
func (r *Remote) Close() error { return r.in.Close() }

// Split is worker i's share (of n) of a load: the clients and the rate
// divided evenly, the first workers taking one more client when they do
// not divide. A share may have no clients at all (ClientsTo 0).
func Split(l plan.LoadSpec, i, n int) plan.LoadSpec {
	share := func(c int) int {
		s := c / n
		if i < c%n {
			s++
		}
		return s
	}
	out := l
	out.ClientsFrom, out.ClientsTo = share(l.ClientsFrom), share(l.ClientsTo)
	out.RateFrom, out.RateTo = l.RateFrom/float64(n), l.RateTo/float64(n)
	return out
}

// SplitWorkload is worker i's copy of a workload: its share of the
// clients (at least one).
func SplitWorkload(w plan.WorkloadSpec, i, n int) plan.WorkloadSpec {
	c := w.Clients / n
	if i < w.Clients%n {
		c++
	}
	w.Clients = max(c, 1)
	return w
}
