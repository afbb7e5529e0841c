package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/coordlab/scenario/compare"
	"github.com/coordlab/scenario/internal/results"
)

type compareFlags struct {
	tolerances []string
	only       []string
	json       bool
	strict     bool
	all        bool
	allowDiff  bool
	alpha      float64
}

func newCompareCommand() *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare BASE.json NEW.json",
		Short: "Compare a run's results.json with a baseline's; exit 1 on a regression",
		Long: `Compare two results.json files (or results directories) metric by metric, over
the metric paths checks read, and print the metrics that moved beyond their
tolerance: metric, base, new, change, tolerance, verdict (REGRESSION or improved).
Checks compare as check.<name>: one that passed in BASE and does not in NEW
regresses. Metrics missing from NEW are listed as a warning.

Default tolerances (a tolerance allows the larger of its share and its floor):
  *.p50 *.p90                       +25%,2ms     may rise 25%, or 2 ms
  *.p99                             +50%,5ms     may rise 50%, or 5 ms
  *.p999 *.max                      ignore       one request decides them
  *.throughput                      -20%         may drop 20%
  *.availability                    -0.5pt       may drop 0.5 percentage points
  *.time_availability               -0.5pt       the same, for time-based availability
  *.failover_time *.leader_elected  +60%,250ms   may rise 60%, or 250 ms
  *.max_gap                         +60%,250ms
  *.rejoin_time                     +60%,1s      clients reconnect after a jittered backoff
  *.error_rate                      +0.5pt       may rise 0.5 percentage points
These sit above the noise between identical runs on a shared 2-core machine;
tighten them with --tolerance where runs are quieter.
  *.elections *.lost_writes         +0           may not rise
  *.linearizable check.*                        must stay true, must keep passing
  *.raw.*                           ignore       checks read corrected latencies
  *.server.*                        ignore       the store's own metrics explain, they do not gate,
  *.server.*.p99                    +100%,5ms    except their durations, loosely
  *.server.*.mean                   +100%,2ms
Other metrics (counts, errors, min, mean...) are not gated unless a rule names
them; nor are a single workload's, which equal its phase's.

Repetitions: when BASE or NEW is the aggregate results.json of a repeated run
(scenario run --repeat N), each metric is judged on the medians, and a change
beyond its tolerance regresses only when it is also significant: a two-sided
Mann-Whitney U test gives p <= --alpha (default 0.05). Each row shows the
repetitions per side (n), the median change, its confidence interval and p.
The test cannot reach p below 2/C(n1+n2, n1): 0.1 with 3 a side, 0.029 with 4,
0.008 with 5. With too few repetitions for alpha (one run against several,
3 against 3 at 0.05) metrics are judged by their tolerance on the medians
alone, and the output says so. A boolean or a check must hold in every
repetition. One run a side compares as above.

PATTERN is a glob over metric paths: '*' matches any characters, dots included
(phase.*.put.p99, *.p99). SPEC is ignore, or a sign and amounts: +10% (may rise
10%), -10% (may drop 10%), -0.1pt (percentage points), +20%,100ms (20% or 100 ms,
whichever is larger), +0. Without a sign, the metric's own bad direction. A
tolerance is how much worse a metric may get: a sign against the metric's bad
direction (*.p99=-10%) is refused, and so is a drop of more than 100%.

Exit codes:
  0  nothing regressed
  1  a metric regressed (or, with --strict, one is missing from NEW)
  2  a file is unreadable or not a results.json, the runs are of different
     scenario files (without --allow-different-scenarios), or a flag is wrong`,
		Example: `  scenario compare baseline/results.json results/new/results.json
  scenario compare baseline/ results/new/ --alpha 0.01     # aggregates of scenario run --repeat 5
  scenario compare base.json new.json --tolerance 'phase.failover.*.max=ignore' --tolerance '*.p99=+20%,2ms'
  scenario compare base.json new.json --only 'phase.steady.*' --json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd, args[0], args[1], &f)
		},
	}
	fl := cmd.Flags()
	// StringArray, not StringSlice: a SPEC such as +20%,100ms has a comma.
	fl.StringArrayVar(&f.tolerances, "tolerance", nil, "PATTERN=SPEC: tolerance for the metrics matching PATTERN (repeatable; later wins)")
	fl.StringArrayVar(&f.only, "only", nil, "compare only metrics matching this glob (repeatable)")
	fl.BoolVar(&f.json, "json", false, "print the diff as JSON (every compared metric, with its verdict)")
	fl.BoolVar(&f.strict, "strict", false, "also fail (exit 1) when a metric of BASE is missing from NEW")
	fl.BoolVar(&f.all, "all", false, "list every compared metric, not only those beyond their tolerance")
	fl.BoolVar(&f.allowDiff, "allow-different-scenarios", false, "compare runs of different scenario files (refused otherwise)")
	fl.Float64Var(&f.alpha, "alpha", compare.DefaultAlpha, "with repetitions: a change beyond its tolerance regresses only when the Mann-Whitney test gives p <= alpha")
	return cmd
}

func runCompare(cmd *cobra.Command, basePath, newPath string, f *compareFlags) error {
	if !(f.alpha > 0 && f.alpha < 1) {
		return &exitError{code: exitInvalid, err: fmt.Errorf("--alpha %v: write a significance level between 0 and 1, such as 0.05", f.alpha)}
	}
	opts := compare.Options{Only: f.only, AllowDifferentScenarios: f.allowDiff, Alpha: f.alpha}
	for _, s := range f.tolerances {
		rule, err := compare.ParseRule(s)
		if err != nil {
			return &exitError{code: exitInvalid, err: fmt.Errorf("--tolerance %s: %w", s, err)}
		}
		opts.Rules = append(opts.Rules, rule)
	}
	base, basePath, err := readSide(basePath)
	if err != nil {
		return err
	}
	next, newPath, err := readSide(newPath)
	if err != nil {
		return err
	}
	diff, err := compare.CompareSides(base, next, opts)
	if err != nil {
		return &exitError{code: exitInvalid, err: err}
	}
	diff.Base.File, diff.New.File = basePath, newPath

	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.json {
		if err := diff.WriteJSON(stdout); err != nil {
			return err
		}
		// stdout is for the tool; the CI log still gets the warnings.
		for _, w := range diff.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	} else if err := diff.WriteText(stdout, f.all); err != nil {
		return err
	}

	regressed, missing := diff.Count(compare.Regression), diff.Count(compare.Missing)
	switch {
	case regressed > 0:
		return &exitError{code: exitCheckFailed, err: fmt.Errorf("%d metric(s) regressed against the baseline %s", regressed, basePath)}
	case f.strict && missing > 0:
		return &exitError{code: exitCheckFailed, err: fmt.Errorf("%d metric(s) of the baseline are missing from %s (--strict)", missing, newPath)}
	}
	return nil
}

// readSide reads a results.json, or the one in a results directory: a
// run's, or the aggregate of a repeated run's. It returns the file it
// read. Any failure is bad input (exit 2): a gate that cannot read its
// baseline must not pass.
func readSide(path string) (*compare.Side, string, error) {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		path = filepath.Join(path, results.FileName)
	}
	r, a, err := results.ReadAny(path)
	if err != nil {
		return nil, path, &exitError{code: exitInvalid, err: err}
	}
	if a != nil {
		return compare.FromAggregate(a), path, nil
	}
	return compare.FromResults(r), path, nil
}
