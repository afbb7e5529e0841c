package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/report"
)

func newReportCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report RESULTS.json",
		Short: "Draw the HTML report of a saved run",
		Long: `Draw report.html from a saved results.json: charts of latency, throughput,
errors, the leader and each node's resources over time, the latency
percentile spectrum of each phase, the checks, the correctness verdict and
the notes, in one page that opens offline.

The spectrum is computed from the interval logs in hlog/ next to the JSON;
without them it is drawn from the percentiles in results.json. RESULTS.json
may also be a run's output directory. The page goes to --out, by default
report.html next to the JSON (where the run wrote its own).

--out never replaces RESULTS.json or any other results file.

Exits 0 when the page was written, 2 when the results cannot be read or --out
would destroy them, 3 when the page cannot be written.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return writeReport(cmd.OutOrStdout(), args[0], out)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "where to write the page (default report.html next to RESULTS.json)")
	return cmd
}

func writeReport(stdout io.Writer, path, out string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, results.FileName)
	}
	r, agg, err := results.ReadAny(path)
	if err != nil {
		return &exitError{code: exitInvalid, err: err}
	}
	dir := filepath.Dir(path)
	if agg != nil {
		// Each repetition drew its own report.html when it ran.
		return &exitError{code: exitInvalid, err: fmt.Errorf("%s is the aggregate of %d repetitions, which has no page of its own: each repetition has its report.html (scenario report %s), comparison.txt sets them side by side, and scenario noise %s reads their spread",
			path, len(agg.Repetitions), filepath.Join(dir, agg.Repetitions[0].Dir), dir)}
	}
	if out == "" {
		out = filepath.Join(dir, report.FileName)
	}
	if err := results.GuardOutput(out, path); err != nil {
		return &exitError{code: exitInvalid, err: fmt.Errorf("--out %s: %w", out, err)}
	}
	if err := report.WriteFile(out, r, filepath.Join(dir, "hlog")); err != nil {
		return &exitError{code: exitInfra, err: err}
	}
	fmt.Fprintf(stdout, "report: %s\n", out)
	return nil
}

// writeSweepReport writes sweep.html next to comparison.txt. Like a run's
// report.html, it is a convenience: a failure is printed, and the sweep's
// exit code stays what its checks made it.
func writeSweepReport(stdout io.Writer, out string, runs []*results.Results) {
	path := filepath.Join(out, report.SweepFileName)
	if err := report.WriteSweepFile(path, runs); err != nil {
		fmt.Fprintf(stdout, "sweep report not written: %v\n", err)
		return
	}
	fmt.Fprintf(stdout, "sweep report: %s\n", path)
}
