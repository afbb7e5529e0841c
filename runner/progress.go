package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/coordlab/scenario/runner/metrics"
)

// progress reports the run as it goes: one line redrawn every second on a
// terminal, a plain line every plainEvery otherwise.
func (x *execution) progress(ctx context.Context) {
	const plainEvery = 5 * time.Second
	every := plainEvery
	if x.opts.Live {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		elapsed := time.Since(x.base)
		var now metrics.Progress
		for _, c := range x.clusters {
			p := c.coll.Progress(int(elapsed/time.Second) - 2) // the last sealed second
			now.Ops += p.Ops
			now.Errors += p.Errors
			now.P99MS = max(now.P99MS, p.P99MS)
		}
		line := progressLine(now, x.currentPhase(), elapsed, x.plan.Duration.D())
		if x.opts.Live {
			fmt.Fprintf(x.opts.Progress, "\r\033[K%s", line)
		} else {
			fmt.Fprintln(x.opts.Progress, line)
		}
	}
}

// endProgress ends the live line so the summary starts on a fresh one.
func (x *execution) endProgress() {
	if x.opts.Live {
		fmt.Fprint(x.opts.Progress, "\r\033[K")
	}
}

// progressLine renders one second's progress: throughput, worst p99 over
// the requests, and errors so far.
func progressLine(p metrics.Progress, phase string, elapsed, total time.Duration) string {
	return fmt.Sprintf("[%s] %s/%s  %d ops/s  p99 %.1fms  errors %d",
		phase, elapsed.Truncate(time.Second), total, p.Ops, p.P99MS, p.Errors)
}
