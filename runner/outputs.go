package runner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/coordlab/scenario/runner/results"
)

// JUnitFile is the name of the JUnit report in the output directory.
const JUnitFile = "junit.xml"

// writeOutputs writes results.json, junit.xml and the per-op HdrHistogram
// interval logs (hlog/<workload>.<op>.hlog) into OutDir.
func (x *execution) writeOutputs(res *results.Results) error {
	dir := x.opts.OutDir
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	if err := x.coll.WriteIntervalLogs(filepath.Join(dir, "hlog")); err != nil {
		return fmt.Errorf("write interval logs: %w", err)
	}
	if err := results.Write(dir, res); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, JUnitFile))
	if err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	if err := results.WriteJUnit(f, res); err != nil {
		f.Close()
		return fmt.Errorf("write JUnit report: %w", err)
	}
	return f.Close()
}
