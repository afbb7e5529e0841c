package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coordlab/scenario/compare"
	"github.com/coordlab/scenario/internal/results"
)

// defaultNoiseRepeat is how many times noise runs a scenario unless told:
// the fewest with which a Mann-Whitney test of N against N reaches 0.01.
const defaultNoiseRepeat = 5

type noiseFlags struct {
	run        runFlags
	alpha      float64
	json       bool
	all        bool
	only       []string
	tolerances []string
}

func newNoiseCommand() *cobra.Command {
	var f noiseFlags
	cmd := &cobra.Command{
		Use:   "noise FILE | RESULTS",
		Short: "Run a scenario N times (A/A) and print each metric's spread and the smallest change N against N runs detect",
		Long: fmt.Sprintf(`Measure the noise a baseline gate has to see through: run the scenario N times
(--repeat, or the file's repeat, default %d), each time on a fresh cluster, as
'scenario run --repeat N' does (same flags, same rep-k directories and aggregate
results.json), then print per metric:

  n            repetitions that measured it
  median       the median over them
  IQR          the interquartile range
  min .. max   the range
  CV           the coefficient of variation: standard deviation / mean
  MDE          the minimum detectable effect: the smallest shift of every value
               that 'scenario compare' of these N runs against N others flags
               at --alpha (Mann-Whitney U), with the observed values as the
               noise. A shift of exactly the MDE is flagged about half the
               time, twice it about 87%% of the time (measured for normal
               noise and N = 5 or 8).
  tolerance    the tolerance compare applies (the defaults, or --tolerance)
  gate         the smallest change compare flags: the larger of the MDE and
               the tolerance

RESULTS instead of FILE (a results directory, or its results.json, of a run
with --repeat; or a sweep's directory) measures a run made earlier, without
running anything. With fewer than 4 repetitions no p-value reaches 0.05, and
the MDE is shown as '-'.

Exit codes: as run (1 when a repetition failed a check, after the table);
2 for a bad flag, or RESULTS that are not the aggregate of 2 or more repetitions.`, defaultNoiseRepeat),
		Example: `  scenario noise scenarios/etcd-leader-failover.hcl --repeat 5 --out results/aa
  scenario noise results/aa --alpha 0.01 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runNoise(cmd, args[0], &f)
		},
	}
	f.run.register(cmd)
	fl := cmd.Flags()
	fl.Float64Var(&f.alpha, "alpha", compare.DefaultAlpha, "the significance level compare will use")
	fl.BoolVar(&f.json, "json", false, "print the noise as JSON (the runs' own output goes to stderr)")
	fl.BoolVar(&f.all, "all", false, "list every numeric metric, not only those a tolerance gates")
	fl.StringArrayVar(&f.only, "only", nil, "show only metrics matching this glob (repeatable)")
	fl.StringArrayVar(&f.tolerances, "tolerance", nil, "PATTERN=SPEC: the tolerance compare will apply, as in compare (repeatable; later wins)")
	return cmd
}

func runNoise(cmd *cobra.Command, arg string, f *noiseFlags) error {
	if !(f.alpha > 0 && f.alpha < 1) {
		return &exitError{code: exitInvalid, err: fmt.Errorf("--alpha %v: write a significance level between 0 and 1, such as 0.05", f.alpha)}
	}
	opts := compare.NoiseOptions{Only: f.only, All: f.all, Alpha: f.alpha}
	for _, s := range f.tolerances {
		rule, err := compare.ParseRule(s)
		if err != nil {
			return &exitError{code: exitInvalid, err: fmt.Errorf("--tolerance %s: %w", s, err)}
		}
		opts.Rules = append(opts.Rules, rule)
	}
	stdout := cmd.OutOrStdout()
	var aggs []*results.Aggregate
	var files []string
	var runErr error
	if isResults(arg) {
		var err error
		if aggs, files, err = readAggregates(arg); err != nil {
			return err
		}
	} else {
		holdResources(cmd.Context())
		runOut := stdout
		if f.json {
			runOut = cmd.ErrOrStderr() // stdout is for the tool
		}
		points, err := runScenario(cmd, arg, &f.run, runOut, defaultNoiseRepeat, 2)
		if points == nil {
			return err
		}
		runErr = err
		for _, p := range points {
			if p.agg != nil {
				aggs = append(aggs, p.agg)
				files = append(files, filepath.Join(p.dir, results.FileName))
			}
		}
		if !f.json {
			fmt.Fprintln(stdout)
		}
	}
	var all []*compare.Noise
	for i, a := range aggs {
		z, err := compare.MeasureNoise(a, opts)
		if err != nil {
			return &exitError{code: exitInvalid, err: fmt.Errorf("%s: %w", files[i], err)}
		}
		z.Run.File = files[i]
		all = append(all, z)
	}
	if err := writeNoise(stdout, all, f.json); err != nil {
		return err
	}
	return runErr
}

func writeNoise(w io.Writer, all []*compare.Noise, asJSON bool) error {
	if asJSON {
		var v any = all
		if len(all) == 1 {
			v = all[0] // one point: one object; a sweep: an array
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	for i, z := range all {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := z.WriteText(w); err != nil {
			return err
		}
	}
	return nil
}

// isResults tells saved results (a directory, or a .json file) from a
// scenario file.
func isResults(arg string) bool {
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		return true
	}
	return strings.HasSuffix(arg, ".json")
}

// readAggregates reads the aggregate in a repeated run's directory (or
// the file named), or one per point of a repeated sweep's directory.
func readAggregates(arg string) ([]*results.Aggregate, []string, error) {
	paths := []string{arg}
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		paths = []string{filepath.Join(arg, results.FileName)}
		if _, err := os.Stat(paths[0]); err != nil {
			if more, _ := filepath.Glob(filepath.Join(arg, "*", results.FileName)); len(more) > 0 {
				paths = more // a sweep: one aggregate per point
			}
		}
	}
	var out []*results.Aggregate
	for _, p := range paths {
		r, a, err := results.ReadAny(p)
		switch {
		case err != nil:
			return nil, nil, &exitError{code: exitInvalid, err: err}
		case r != nil:
			return nil, nil, &exitError{code: exitInvalid, err: fmt.Errorf("%s is a single run: its noise is not measured; run the scenario with --repeat N (N >= 2), or 'scenario noise FILE'", p)}
		}
		out = append(out, a)
	}
	return out, paths, nil
}
