package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/coordlab/scenario/plan"
)

const (
	// maxFileBytes bounds each writer's file: past it the writer starts
	// over at offset 0, so a long disk fault cannot fill the disk.
	maxFileBytes = 256 << 20
	// maxLag is how far behind its rate a writer may fall before it stops
	// catching up: a disk that stalled should not get a burst afterwards.
	maxLag = time.Second
	// Fsync latencies are recorded in microseconds up to a minute; slower
	// ones are recorded as a minute.
	histMax = int64(time.Minute / time.Microsecond)
)

// DiskStats sums a disk fault's writers.
type DiskStats struct {
	Writes int64 // blocks written
	Bytes  int64
	// Fsync latency percentiles; zero when the fault does not fsync.
	FsyncP50, FsyncP99, FsyncMax time.Duration
	// ThrottleBPS is the write limit put on the nodes, 0 if none.
	ThrottleBPS int64
	// ThrottledBytes is what the nodes wrote to their device through the
	// throttle. Zero while they kept writing means the throttle was not
	// effective: cgroup v1 charges only writes a process submits itself
	// (direct or synced I/O), not page-cache writeback done later for it.
	ThrottledBytes int64
}

// ContentionDir is where a disk fault's writers put their files for n: next
// to the data directory, so on the same filesystem, but outside it, so the
// store never sees them.
func ContentionDir(n Node) string {
	return filepath.Join(filepath.Dir(n.DataDir()), "disk-contention-"+n.Name())
}

// DiskContender is a node whose data is not on this machine (a pod): it
// runs a disk fault's writers itself, beside its data, and reports what
// they did when stopped.
type DiskContender interface {
	StartDiskLoad(ctx context.Context, spec plan.DiskSpec) (DiskPart, error)
}

// DiskPart is the writers of a disk fault on one node.
type DiskPart interface {
	// Stop ends the writers and removes their files.
	Stop(ctx context.Context) error
	// Err reports writers that failed before they were asked to stop.
	Err() error
	// Totals is what the writers did so far (for a remote node: once
	// stopped).
	Totals() DiskTotals
}

// DiskTotals is what some writers did.
type DiskTotals struct {
	Writes int64 `json:"writes"`
	Bytes  int64 `json:"bytes"`
	// Fsync latencies in microseconds; nil when the writers do not fsync.
	Fsync *hdrhistogram.Snapshot `json:"fsync,omitempty"`
}

// diskLoad is the writers of one disk fault, a part per node.
type diskLoad struct {
	parts []DiskPart
}

// startDisk starts spec.Parallelism writers for each node. On error it
// leaves nothing behind.
func startDisk(ctx context.Context, spec *plan.DiskSpec, nodes []Node, log *slog.Logger) (*diskLoad, error) {
	if err := checkDiskSpec(spec); err != nil {
		return nil, err
	}
	d := &diskLoad{}
	for _, n := range nodes {
		var p DiskPart
		var err error
		if c, ok := n.(DiskContender); ok {
			p, err = c.StartDiskLoad(ctx, *spec)
		} else {
			p, err = StartDiskWriters(ctx, *spec, ContentionDir(n), n.Name(), log)
		}
		if err != nil {
			_ = d.stop(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("disk fault on node %s: %w", n.Name(), err)
		}
		d.parts = append(d.parts, p)
	}
	return d, nil
}

func checkDiskSpec(spec *plan.DiskSpec) error {
	switch {
	case spec == nil:
		return errors.New("disk fault without disk settings")
	case spec.BlockSize <= 0:
		return fmt.Errorf("disk block size %d is not positive", spec.BlockSize)
	case spec.Parallelism < 1:
		return fmt.Errorf("disk parallelism %d is below 1", spec.Parallelism)
	case spec.Rate < 0:
		return fmt.Errorf("disk rate %d is negative", spec.Rate)
	}
	return nil
}

// stop ends every node's writers.
func (d *diskLoad) stop(ctx context.Context) error {
	var errs []error
	for _, p := range d.parts {
		errs = append(errs, p.Stop(ctx))
	}
	return errors.Join(errs...)
}

// err reports the writers that failed before they were asked to stop.
func (d *diskLoad) err() error {
	var errs []error
	for _, p := range d.parts {
		errs = append(errs, p.Err())
	}
	return errors.Join(errs...)
}

func (d *diskLoad) stats() DiskStats {
	var s DiskStats
	h := hdrhistogram.New(1, histMax, 3)
	for _, p := range d.parts {
		t := p.Totals()
		s.Writes += t.Writes
		s.Bytes += t.Bytes
		if t.Fsync != nil {
			h.Merge(hdrhistogram.Import(t.Fsync))
		}
	}
	if h.TotalCount() > 0 {
		s.FsyncP50 = time.Duration(h.ValueAtQuantile(50)) * time.Microsecond
		s.FsyncP99 = time.Duration(h.ValueAtQuantile(99)) * time.Microsecond
		s.FsyncMax = time.Duration(h.Max()) * time.Microsecond
	}
	return s
}

// DiskWriters are a disk fault's writers in one directory on this
// machine: the runner's for a local node, a pod agent's for its pod.
type DiskWriters struct {
	dir     string
	writers []*diskWriter
	cancel  context.CancelFunc
	done    chan struct{} // closed when every writer has returned

	mu   sync.Mutex
	errs []error // writers that failed
}

// StartDiskWriters starts spec.Parallelism writers in dir, which it
// creates and Stop removes. node names them in logs and errors.
func StartDiskWriters(ctx context.Context, spec plan.DiskSpec, dir, node string, log *slog.Logger) (*DiskWriters, error) {
	if err := checkDiskSpec(&spec); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	d := &DiskWriters{dir: dir, done: make(chan struct{})}
	for i := range spec.Parallelism {
		d.writers = append(d.writers, &diskWriter{
			node:  node,
			path:  filepath.Join(dir, fmt.Sprintf("writer-%d", i)),
			block: spec.BlockSize,
			// Rate is the node's total, shared by its writers.
			rate:  float64(spec.Rate) / float64(spec.Parallelism),
			fsync: spec.Fsync,
			seed:  uint64(i),
			hist:  hdrhistogram.New(1, histMax, 3),
		})
	}
	ctx, d.cancel = context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range d.writers {
		wg.Go(func() {
			if err := w.run(ctx); err != nil {
				log.Warn("disk writer stopped", "node", w.node, "err", err)
				d.mu.Lock()
				d.errs = append(d.errs, err)
				d.mu.Unlock()
			}
		})
	}
	go func() {
		wg.Wait()
		close(d.done)
	}()
	return d, nil
}

// Stop ends the writers and removes their files.
func (d *DiskWriters) Stop(ctx context.Context) error {
	d.cancel()
	select {
	case <-d.done:
	case <-ctx.Done():
		// A write or fsync on a slow disk cannot be interrupted; the
		// files stay until a later stop finds the writers gone.
		return fmt.Errorf("wait for disk writers: %w", ctx.Err())
	}
	if err := os.RemoveAll(d.dir); err != nil {
		return fmt.Errorf("remove disk contention files: %w", err)
	}
	return nil
}

// Err reports the writers that failed before they were asked to stop.
func (d *DiskWriters) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return errors.Join(d.errs...)
}

// Totals sums the writers.
func (d *DiskWriters) Totals() DiskTotals {
	var t DiskTotals
	h := hdrhistogram.New(1, histMax, 3)
	for _, w := range d.writers {
		w.mu.Lock()
		t.Writes += w.writes
		t.Bytes += w.bytes
		h.Merge(w.hist)
		w.mu.Unlock()
	}
	if h.TotalCount() > 0 {
		t.Fsync = h.Export()
	}
	return t
}

// diskWriter writes blocks to one file as fast as rate allows.
type diskWriter struct {
	node  string
	path  string
	block int64
	rate  float64 // bytes per second; 0 unlimited
	fsync bool
	seed  uint64

	mu     sync.Mutex // guards what stats reads
	writes int64
	bytes  int64
	hist   *hdrhistogram.Histogram // fsync latency, µs
}

func (w *diskWriter) run(ctx context.Context) error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	// Random bytes, so that a compressing filesystem cannot shrink the load.
	buf := make([]byte, w.block)
	var seed [32]byte
	seed[0] = byte(w.seed)
	_, _ = rand.NewChaCha8(seed).Read(buf)

	var interval time.Duration
	if w.rate > 0 {
		interval = time.Duration(float64(w.block) / w.rate * float64(time.Second))
	}
	next := time.Now()
	var off int64
	for {
		if interval > 0 {
			if err := sleepUntil(ctx, next); err != nil {
				return nil
			}
			if now := time.Now(); next.Before(now.Add(-maxLag)) {
				next = now
			}
			next = next.Add(interval)
		} else if ctx.Err() != nil {
			return nil
		}
		if off+w.block > maxFileBytes {
			off = 0
		}
		if _, err := f.WriteAt(buf, off); err != nil {
			return fmt.Errorf("write %s: %w", w.path, err)
		}
		off += w.block
		var took time.Duration
		if w.fsync {
			start := time.Now()
			if err := f.Sync(); err != nil {
				return fmt.Errorf("fsync %s: %w", w.path, err)
			}
			took = time.Since(start)
		}
		w.record(took)
	}
}

func (w *diskWriter) record(fsync time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	w.bytes += w.block
	if w.fsync {
		// At least 1µs: the histogram's lowest value, and no fsync is free.
		us := min(max(fsync.Microseconds(), 1), histMax)
		_ = w.hist.RecordValue(us)
	}
}

// sleepUntil waits until t or until ctx ends, whichever is first.
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
