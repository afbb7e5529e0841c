package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/internal/results"
)

// writeOutputs writes results.json, junit.xml, the per-op HdrHistogram
// interval logs (hlog/<workload>.<op>.hlog) and, with Options.Report, a
// report into OutDir.
func (x *execution) writeOutputs(res *results.Results) error {
	dir := x.opts.OutDir
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	hlogDir := filepath.Join(dir, "hlog")
	for _, c := range x.clusters {
		if err := c.coll.WriteIntervalLogs(hlogDir); err != nil {
			return fmt.Errorf("write interval logs: %w", err)
		}
	}
	return x.writeResults(res, hlogDir)
}

// writeResults draws the report (with Options.Report), then writes
// results.json and junit.xml into OutDir, which exists.
func (x *execution) writeResults(res *results.Results, hlogDir string) error {
	dir := x.opts.OutDir
	// The report is drawn before results.json is written so that a failure
	// to draw it is noted there; the report is a convenience, and never
	// fails a run whose numbers are sound.
	if x.opts.Report != nil {
		if err := x.opts.Report(dir, res, hlogDir); err != nil {
			x.log.Warn("report not written", "err", err)
			if res.Notes == nil {
				res.Notes = map[string]string{}
			}
			res.Notes["report"] = err.Error()
		}
	}
	if err := results.Write(dir, res); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, results.JUnitFile))
	if err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	if err := results.WriteJUnit(f, res); err != nil {
		f.Close()
		return fmt.Errorf("write JUnit report: %w", err)
	}
	return f.Close()
}

// noteReads adds the shaper's check of its own reads, which can only run
// once the shaper has stopped at teardown, to res and to the results.json,
// junit.xml and report written before it; nothing where it did not run or
// no results were written.
func (x *execution) noteReads(res *results.Results, rc fabric.ReadCheck) error {
	if res == nil || !rc.Checked || x.opts.OutDir == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(x.opts.OutDir, results.FileName)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if res.Notes == nil {
		res.Notes = map[string]string{}
	}
	res.Notes[results.NoteShaperReads] = readsNote(rc)
	if err := x.writeResults(res, filepath.Join(x.opts.OutDir, "hlog")); err != nil {
		return fmt.Errorf("write results with the shaper's check of its reads: %w", err)
	}
	return nil
}

// readsNote says what the shaper's check of its own reads found.
func readsNote(rc fabric.ReadCheck) string {
	if rc.Lost == 0 {
		return fmt.Sprintf("the shaper read all %d frames its devices handed it", rc.Frames)
	}
	return fmt.Sprintf("the shaper lost %d of the %d frames its devices handed it after reading them (a bug in scenario): TCP retransmitted them, and the latencies measured carry it", rc.Lost, rc.Frames)
}
