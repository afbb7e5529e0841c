package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
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
		line := progressLine(x.snapshot(), x.currentPhase(), time.Since(x.base), x.plan.Duration.D())
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

// progressLine renders the last complete second of snap: throughput,
// worst p99 over the requests, and errors so far.
func progressLine(snap *results.Results, phase string, elapsed, total time.Duration) string {
	var ops, errs int64
	var p99 float64
	sec := int(elapsed/time.Second) - 2 // the last sealed second
	for _, s := range snap.Series {
		if plan.Observed(s.Op) {
			continue // notifications and the like are not requests
		}
		for _, p := range s.Points {
			errs += p.Errors
			if int(p.AtMS/1000) != sec {
				continue
			}
			ops += p.Ops
			if p.P99MS != nil {
				p99 = max(p99, *p.P99MS)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s/%s  %d ops/s  p99 %.1fms  errors %d",
		phase, elapsed.Truncate(time.Second), total, ops, p99, errs)
	return b.String()
}
