package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/checker"
	"github.com/coordlab/scenario/runner/workload"
	"github.com/coordlab/scenario/stores"
)

const (
	// sampleKeys is about how many distinct keys, drawn evenly from the
	// workloads' keyspaces, the history keeps every operation of. Checking
	// cost grows with operations per key, not keys.
	sampleKeys = 200
	// maxHistoryOps bounds the history a run keeps in memory (about
	// 400 bytes an operation with 256-byte values, so about 40 MB): past
	// it, keys leave the sample whole (checker.Recorder.Bound), and a
	// long run checks fewer keys rather than growing without end.
	maxHistoryOps = 100_000
	// linearizabilityTimeout bounds the checker; past it the verdict is
	// unknown, never a pass.
	linearizabilityTimeout = time.Minute
	// recoveryTimeout bounds the wait for a whole, healthy cluster before
	// acknowledged writes are read back.
	recoveryTimeout = time.Minute
	// readBackTimeout bounds one read of the lost-write check.
	readBackTimeout = 5 * time.Second
	// readBackBackoff paces the retries of a read-back the store refused
	// for now; the wait grows by this much per attempt, up to a second.
	readBackBackoff = 100 * time.Millisecond
)

// newRecorder returns the history recorder of a run. Reads of workloads
// with a weaker consistency than the store's strongest may be stale by
// design, so only their writes are kept.
func (c *clusterRun) newRecorder() *checker.Recorder {
	var keyspace int64
	for _, w := range c.plan.Workloads {
		keyspace += w.Keyspace
	}
	rec := checker.NewSampledRecorder(sampleKeys, keyspace)
	rec.Bound(maxHistoryOps)
	for _, w := range c.plan.Workloads {
		if w.Consistency != "" && w.Consistency != c.drv.StrongRead {
			rec.Exclude(w.Name)
		}
	}
	return rec
}

// recordHistory returns a workload.WithHistory option that records the
// workload's operations, its engine's clock starting at base. Every
// engine's times are moved onto one clock, the run's epoch, so that preload
// writes and timeline operations order correctly.
func (c *clusterRun) recordHistory(w string, base time.Time) workload.Option {
	return workload.WithHistory(c.historyFunc(w, base))
}

// historyFunc records workload w's operations whose times are offsets
// from base.
func (c *clusterRun) historyFunc(w string, base time.Time) func(workload.HistoryOp) {
	shift := base.Sub(c.x.epoch)
	return func(op workload.HistoryOp) {
		op.Call += shift
		op.Return += shift
		c.rec.Record(w, op)
	}
}

// checkCorrectness waits for the cluster to be whole again, then checks the
// recorded history for linearizability and reads back every acknowledged
// write of it. It fills res.Correctness and writes the evidence of a
// failure next to the results. An error means the checks could not run.
func (c *clusterRun) checkCorrectness(ctx context.Context, res *results.Results) error {
	h := c.rec.History()
	res.Correctness = &results.Correctness{}
	if len(h) == 0 {
		res.Correctness.Detail = "no operation on a sampled key was recorded."
		return nil
	}

	if p := c.x.outPath(""); p != "" {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("correctness evidence: %w", err)
		}
	}
	lin, err := checker.CheckLinearizable(ctx, h, linearizabilityTimeout, c.outPath("linearizability.html"))
	if err != nil {
		return fmt.Errorf("linearizability check: %w", err)
	}
	if lin.Verdict == checker.Violation {
		if err := c.writeJSON("linearizability-offending.json", lin.Offending); err != nil {
			return err
		}
	}

	rctx, cancel := context.WithTimeout(ctx, recoveryTimeout)
	defer cancel()
	if err := c.drv.WaitReady(rctx, c.eps, recoveryTimeout); err != nil {
		return fmt.Errorf("cluster not healthy after the run, so acknowledged writes cannot be read back: %w", err)
	}
	cl, err := c.drv.NewClient(rctx, stores.ClientOptions{
		Endpoints: c.eps, Conns: 1, Consistency: c.drv.StrongRead, Timeout: readBackTimeout,
		Workload: c.plan.Workloads[0],
	})
	if err != nil {
		return fmt.Errorf("read back acknowledged writes: connect: %w", err)
	}
	defer cl.Close()
	lost, err := checker.CheckLostWrites(rctx, h, func(ctx context.Context, key string) ([]byte, bool, error) {
		return readBack(ctx, cl, key)
	})
	if err != nil {
		return fmt.Errorf("read back acknowledged writes: %w", err)
	}
	if lost.Lost > 0 {
		if err := c.writeJSON("lost-writes.json", lost.Keys); err != nil {
			return err
		}
	}
	checker.Fill(res.Correctness, &lin, &lost)
	if res.Correctness.Visualization != "" {
		res.Correctness.Visualization = filepath.Base(res.Correctness.Visualization)
	}
	if keys, ops := c.rec.Shed(); keys > 0 {
		res.Correctness.Detail += fmt.Sprintf(" The history is bounded at %d operations: %d sampled keys (%d operations) left it as it filled, so the keys checked are those that stayed, each whole.", maxHistoryOps, keys, ops)
	}
	if n := c.rec.Skipped(); n > 0 {
		res.Correctness.Detail += fmt.Sprintf(" %d operations on sampled keys were not checked (ranges, and reads of workloads with weaker consistency than %s).", n, c.drv.StrongRead)
	}
	return nil
}

// readBack reads key with the store's strong read, again and again while
// the store answers that it cannot serve now: a cluster whose tuning keeps
// it electing leaders (the point of some experiments) still gets its
// acknowledged writes checked once it holds still long enough. A read
// changes nothing, so repeating it is safe. It gives up when ctx ends or the
// store refuses the read for good (class "other").
func readBack(ctx context.Context, cl stores.Client, key string) ([]byte, bool, error) {
	for attempt := 1; ; attempt++ {
		r := cl.Do(ctx, stores.Op{Kind: plan.OpGet, Key: key})
		if r.Err == nil || r.Class == plan.ErrOther {
			return r.Value, r.Found, r.Err
		}
		select {
		case <-ctx.Done():
			return nil, false, fmt.Errorf("%w (after %d attempts)", r.Err, attempt)
		case <-time.After(min(time.Duration(attempt)*readBackBackoff, time.Second)):
		}
	}
}

// outPath is a file in OutDir, or "" when there is no output directory.
func (x *execution) outPath(name string) string {
	if x.opts.OutDir == "" {
		return ""
	}
	return filepath.Join(x.opts.OutDir, name)
}

// outPath is the cluster's evidence file name in OutDir: the name itself
// with one cluster, prefixed by the cluster's name with several.
func (c *clusterRun) outPath(name string) string {
	if len(c.x.clusters) > 1 {
		name = c.spec.Name + "-" + name
	}
	return c.x.outPath(name)
}

func (c *clusterRun) writeJSON(name string, v any) error {
	p := c.outPath(name)
	if p == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
