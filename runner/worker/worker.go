// Package worker runs a share of a workload's load away from the runner
// (in a pod of the kubernetes provider) and brings its outcomes back. The
// runner and a worker speak JSON lines over one stream each way (an exec
// of `scenario worker` in the pod): the runner sends the workload, then
// each phase's load with its start on the timeline; the worker sends every
// operation's sample and history entry, and each load's stats.
//
// Times never cross clocks unmeasured. Every latency is an end minus a
// start on the worker's own monotonic clock. Placing a worker's samples
// on the runner's timeline uses the offset between the two clocks, found
// by ping exchanges (the one with the shortest round trip wins); history
// entries are widened by half that round trip on each side, so the
// linearizability check may miss a violation within that margin but never
// reports one that did not happen.
package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/metrics"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/registry"
)

// Endpoint is a member's addresses as a worker dials them.
type Endpoint struct {
	Node       int      `json:"node"`
	ClientAddr string   `json:"client"`
	PeerAddr   string   `json:"peer"`
	Extra      []string `json:"extra,omitempty"`
}

// Setup is the first message: what the worker runs.
type Setup struct {
	Store     string            `json:"store"`
	Workload  plan.WorkloadSpec `json:"workload"`
	Endpoints []Endpoint        `json:"endpoints"`
	// FirstID is the worker's first generator id: workers of a workload
	// never share a writer id.
	FirstID int `json:"first_id"`
	// Now is the runner's timeline offset when it sent Setup; the worker
	// starts its own clock there, give or take the message's transit.
	Now time.Duration `json:"now"`
	// BusyPoll is the engine's busy-poll window (workload.WithBusyPoll).
	BusyPoll time.Duration `json:"busy_poll,omitempty"`
}

// Load asks for one phase's load, starting at Start on the worker's clock.
type Load struct {
	ID    int           `json:"id"`
	Load  plan.LoadSpec `json:"load"`
	Start time.Duration `json:"start"`
}

// In is a message to a worker.
type In struct {
	Setup  *Setup         `json:"setup,omitempty"`
	Load   *Load          `json:"load,omitempty"`
	Cancel int            `json:"cancel,omitempty"` // a Load's ID
	Ping   *time.Duration `json:"ping,omitempty"`   // the runner's clock, echoed back
}

// Pong answers a Ping with the worker's clock when it read it.
type Pong struct {
	Echo   time.Duration `json:"echo"`
	Worker time.Duration `json:"worker"`
}

// Done ends a Load.
type Done struct {
	ID    int            `json:"id"`
	Stats workload.Stats `json:"stats"`
	Err   string         `json:"err,omitempty"`
}

// Out is a message from a worker.
type Out struct {
	Ready   bool                `json:"ready,omitempty"`
	Err     string              `json:"err,omitempty"` // setup failed
	Pong    *Pong               `json:"pong,omitempty"`
	Sample  *metrics.Sample     `json:"s,omitempty"`
	History *workload.HistoryOp `json:"h,omitempty"`
	Done    *Done               `json:"done,omitempty"`
}

// writer serialises messages onto one stream, batching samples and
// flushing control messages at once.
type writer struct {
	mu  sync.Mutex
	buf *bufio.Writer
	enc *json.Encoder
	err error
}

func newWriter(w io.Writer) *writer {
	b := bufio.NewWriterSize(w, 64<<10)
	return &writer{buf: b, enc: json.NewEncoder(b)}
}

func (w *writer) send(m Out, flush bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if w.err = w.enc.Encode(m); w.err == nil && flush {
		w.err = w.buf.Flush()
	}
}

func (w *writer) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.buf.Flush()
	}
}

// sink sends a worker goroutine's samples.
type sink struct{ w *writer }

func (s sink) Record(x metrics.Sample) { s.w.send(Out{Sample: &x}, false) }

// Serve is the worker: it reads Setup and then requests from in, runs
// them, and writes outcomes to out, until in ends or ctx does.
func Serve(ctx context.Context, in io.Reader, out io.Writer, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := newWriter(out)
	dec := json.NewDecoder(bufio.NewReader(in))
	var first In
	if err := dec.Decode(&first); err != nil || first.Setup == nil {
		return fmt.Errorf("worker: first message is not a setup: %v", err)
	}
	s := first.Setup
	base := time.Now().Add(-s.Now)
	eng, closeClient, err := setup(ctx, s, w, base, log)
	if err != nil {
		w.send(Out{Err: err.Error()}, true)
		return err
	}
	defer closeClient()
	w.send(Out{Ready: true}, true)
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				w.flush()
			}
		}
	}()
	var mu sync.Mutex
	running := map[int]context.CancelFunc{}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		var m In
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("worker: read request: %w", err)
		}
		switch {
		case m.Ping != nil:
			w.send(Out{Pong: &Pong{Echo: *m.Ping, Worker: time.Since(base)}}, true)
		case m.Cancel != 0:
			mu.Lock()
			if c, ok := running[m.Cancel]; ok {
				c()
			}
			mu.Unlock()
		case m.Load != nil:
			l := *m.Load
			lctx, lcancel := context.WithCancel(ctx)
			mu.Lock()
			running[l.ID] = lcancel
			mu.Unlock()
			wg.Go(func() {
				st, err := eng.Run(lctx, l.Load, l.Start)
				d := &Done{ID: l.ID, Stats: st}
				if err != nil {
					d.Err = err.Error()
				}
				w.flush()
				w.send(Out{Done: d}, true)
				mu.Lock()
				delete(running, l.ID)
				mu.Unlock()
				lcancel()
			})
		}
	}
}

func setup(ctx context.Context, s *Setup, w *writer, base time.Time, log *slog.Logger) (*workload.Engine, func(), error) {
	d, ok := registry.Lookup(s.Store)
	if !ok {
		return nil, nil, fmt.Errorf("unknown store %q", s.Store)
	}
	eps := make([]stores.Endpoint, len(s.Endpoints))
	for i, e := range s.Endpoints {
		eps[i] = stores.Endpoint{Node: e.Node, ClientAddr: e.ClientAddr, PeerAddr: e.PeerAddr, Extra: e.Extra}
	}
	wl := s.Workload
	cl, err := d.NewClient(ctx, stores.ClientOptions{Endpoints: eps, Conns: wl.Conns, Consistency: wl.Consistency, Timeout: wl.Timeout.D(), Workload: wl})
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", s.Store, err)
	}
	eng, err := workload.New(wl, cl, func() metrics.Sink { return sink{w} }, base,
		workload.WithFirstID(s.FirstID), workload.WithLogger(log), workload.WithBusyPoll(s.BusyPoll),
		workload.WithHistory(func(op workload.HistoryOp) { w.send(Out{History: &op}, false) }))
	if err != nil {
		cl.Close()
		return nil, nil, err
	}
	return eng, func() { cl.Close() }, nil
}
