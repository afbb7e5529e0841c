package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/internal/hrsleep"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/internal/safefile"
	"github.com/coordlab/scenario/plan"
)

type runFlags struct {
	vars                                                 varFlags
	out                                                  string
	keep                                                 bool
	abortOnFail, realtime, pollIdle                      bool
	stateDir                                             string
	cacheDir                                             string
	provider                                             string
	kubeconfig, kubeContext, agentImage, kubeRegionLabel string
	kubeAllowNonTest                                     bool
	kubeNetwork                                          string
	verbose                                              bool
	overwrite                                            bool
	network                                              string
	repeat                                               int
	busyPoll                                             time.Duration
	profiles                                             profiles
}

// kubeClusterFlags declares the flags that choose a Kubernetes cluster and
// let a non-test one be used, for the named use.
func kubeClusterFlags(fl *pflag.FlagSet, kubeconfig, kubeContext *string, allowNonTest *bool, use string) {
	fl.StringVar(kubeconfig, "kubeconfig", "", "kubeconfig for "+use+" (default $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(kubeContext, "kube-context", "", "kubeconfig context for "+use+" (default the current one, which must look like a test cluster)")
	fl.BoolVar(allowNonTest, "kube-allow-nontest", false, "let --kube-context name a cluster that does not look like a test cluster")
}

func newRunCommand() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a scenario: bring the cluster up, play the timeline, measure, check, tear down",
		Long: `Run a scenario: bring the cluster up, play the timeline of load and faults,
measure, evaluate the checks, print a summary and write results, then tear
everything down (also on failure and on Ctrl-C).

Results go to --out (default results/<scenario>-<time>): results.json,
report.html (charts and tables, self-contained), junit.xml (one test case per
check), hlog/<workload>.<op>.hlog (HdrHistogram interval logs, microseconds)
and logs/<node>.log. A sweep runs every point in turn, each into its own
numbered subdirectory, then prints the points side by side and writes
comparison.txt and sweep.html.

--repeat N (or repeat = N in the file; the flag wins) runs the scenario N
times, each time on a fresh cluster: repetition k goes to rep-k/, and
results.json beside them is the aggregate that 'scenario compare' tests
changes against (every repetition's value of each metric, and their
median). A sweep repeats per point, interleaving the points (A B C A B C
...), into <point>/rep-k/ with an aggregate per point. The run fails (exit
1) when any repetition fails a check.

` + exitCodesHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			holdResources(cmd.Context())
			_, err := runScenario(cmd, args[0], &f, cmd.OutOrStdout(), 1, 1)
			return err
		},
	}
	f.register(cmd)
	return cmd
}

// register declares the flags of run, which noise shares.
func (f *runFlags) register(cmd *cobra.Command) {
	f.vars.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "", "directory for results (default results/<scenario>-<time>)")
	fl.BoolVar(&f.keep, "keep", false, "keep node data directories and logs in the state directory after the run")
	fl.BoolVar(&f.abortOnFail, "abort-on-fail", false, "stop at the end of the first phase after which a check marked abort_on_fail fails")
	fl.BoolVar(&f.realtime, "realtime", false, "run the runner's own threads (the shaper, the load generator) at real-time priority during the timeline, so that other work on a busy machine delays neither packets nor sends; the stores keep normal priority (Linux, needs CAP_SYS_NICE). For light loads: under a heavy one (a thousand closed-loop clients) it takes the cores from the stores")
	fl.BoolVar(&f.pollIdle, "poll-idle", false, "hold every CPU's wake-up latency at 0 during the timeline (/dev/cpu_dma_latency, as cyclictest does; Linux, needs root): idle CPUs poll rather than halt, so that a thread woken on one, the runner's or a store's, runs at once rather than when the host wakes a halted vCPU, some tens of microseconds and at times over a millisecond later. The polling gives way to any work at once, but keeps the CPUs (a virtual machine's host cores) busy while the run lasts")
	fl.DurationVar(&f.busyPoll, "busy-poll", 0, fmt.Sprintf("spin through the last DURATION (e.g. 100us; at most %v) before each packet the shaper delays and each open-loop request is due, instead of sleeping through it: they then leave within a few microseconds of their time on a quiet machine rather than some tens late, at the cost of up to a core each while due times come closer together than DURATION. For machines with cores to spare: beside other busy work it does worse than sleeping, which --realtime is for", hrsleep.MaxBusyPoll))
	fl.StringVar(&f.stateDir, "state-dir", "", "where run workspaces live (default $XDG_RUNTIME_DIR/scenario or /tmp/scenario-<uid>)")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "where store binaries are kept (default $XDG_CACHE_HOME/scenario/stores)")
	fl.StringVar(&f.provider, "provider", "", "run every cluster as \"process\", \"docker\" or \"kubernetes\" whatever the file says (docker needs 'scenario images build' first where no registry is reachable; kubernetes needs KUBECONFIG and the agent image, see 'scenario images agent')")
	kubeClusterFlags(fl, &f.kubeconfig, &f.kubeContext, &f.kubeAllowNonTest, "the kubernetes provider")
	fl.StringVar(&f.agentImage, "agent-image", "", "the kubernetes provider's agent image (default "+images.AgentRepo+":<this version>, made by 'scenario images agent')")
	fl.StringVar(&f.kubeRegionLabel, "kube-region-label", "", "place each node's pod on a Kubernetes node whose label of this name is the node's region (e.g. topology.kubernetes.io/region); default anywhere")
	fl.StringVar(&f.kubeNetwork, "kube-network", "auto", "where the kubernetes provider's network faults act: \"fabric\" (the pods' namespaces joined to the network fabric: shaping and partitions, pods on this machine), \"pods\" (netfilter rules in each store pod: partitions only, any cluster) or \"auto\" (fabric when every pod is on this machine)")
	fl.BoolVar(&f.overwrite, "overwrite", false, "replace the results of an earlier run in --out (refused otherwise)")
	fl.StringVar(&f.network, "network", "shaper", "how hosts are joined when the scenario needs a network: \"shaper\" (pairs whose link shapes or cuts something through the userspace shaper, the others through the kernel), \"shaper-all\" (every pair through the shaper, whether or not the scenario shapes anything) or \"kernel\" (veth links and iptables: cuts only, the reference the shaper is checked against)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log what the runner does to stderr")
	fl.StringVar(&f.profiles.cpu, "cpuprofile", "", "write a Go CPU profile of the runner itself (load generation, shaping, measurement) to this file, for 'go tool pprof'")
	fl.StringVar(&f.profiles.mem, "memprofile", "", "write a Go heap profile of the runner itself, taken as the run ends, to this file, for 'go tool pprof'")
	fl.StringVar(&f.profiles.trace, "trace", "", "write a Go execution trace of the runner itself (goroutine scheduling, GC, system calls: where an open loop's late starts come from) to this file, for 'go tool trace'")
	fl.IntVar(&f.repeat, "repeat", 0, fmt.Sprintf("run the scenario N times (1 to %d), each on a fresh cluster, into rep-1 ... rep-N beside an aggregate results.json (default the file's repeat, else 1 for run and 5 for noise)", dsl.MaxRepeat))
}

// networkChoice is what --network and --kube-network ask for, checked and
// spelled as the flags spell them.
type networkChoice struct {
	network string // shaper, shaper-all or kernel
	kube    string // fabric, pods, or "" to choose by where the pods run
}

func (f *runFlags) networks() (networkChoice, error) {
	c := networkChoice{network: f.network, kube: f.kubeNetwork}
	switch f.network {
	case "shaper", "shaper-all", "kernel":
	default:
		return c, &exitError{code: exitInvalid, err: fmt.Errorf("--network %q: write shaper, shaper-all or kernel", f.network)}
	}
	switch f.kubeNetwork {
	case "auto":
		c.kube = ""
	case "fabric", "pods":
	default:
		return c, &exitError{code: exitInvalid, err: fmt.Errorf("--kube-network %q: write auto, fabric or pods", f.kubeNetwork)}
	}
	return c, nil
}

// playArgs is what one run of a plan takes besides the flags.
type playArgs struct {
	dir, path string // the run's results directory, the scenario file
	networks  networkChoice
	logger    *slog.Logger
	progress  io.Writer
}

// pointRuns is what one sweep point (or the scenario, outside a sweep)
// ran: one run, or its repetitions and their aggregate.
type pointRuns struct {
	// dir is the point's directory: --out, or its numbered subdirectory.
	dir string
	// runs are the repetitions in the order they ran; reps their
	// directories relative to dir ("." for a single run).
	runs []*results.Results
	reps []string
	// agg is the aggregate written in dir, for a repeated run.
	agg *results.Aggregate
}

// runScenario runs every sweep point, each as many times as --repeat (or
// the file's repeat, else defaultRepeat) says, and at least minRepeat,
// printing to stdout. It returns what ran, and an error carrying the exit
// code: a check that failed in any repetition gives exitCheckFailed, after
// everything ran.
func runScenario(cmd *cobra.Command, path string, f *runFlags, stdout io.Writer, defaultRepeat, minRepeat int) ([]*pointRuns, error) {
	// Everything that can be checked before a cluster starts is checked
	// first: a mistake found after the timeline has played costs minutes.
	switch f.provider {
	case "", plan.ProviderProcess, plan.ProviderDocker, plan.ProviderKubernetes:
	default:
		return nil, &exitError{code: exitInvalid, err: fmt.Errorf("--provider %q: unknown provider; write one of %s", f.provider, strings.Join(plan.Providers, ", "))}
	}
	nets, err := f.networks()
	if err != nil {
		return nil, err
	}
	if f.busyPoll < 0 || f.busyPoll > hrsleep.MaxBusyPoll {
		return nil, &exitError{code: exitInvalid, err: fmt.Errorf("--busy-poll %v: write a duration from 0 (sleep, the default) to %v, such as 100us", f.busyPoll, hrsleep.MaxBusyPoll)}
	}
	if cmd.Flags().Changed("repeat") && (f.repeat < 1 || f.repeat > dsl.MaxRepeat) {
		return nil, &exitError{code: exitInvalid, err: fmt.Errorf("--repeat %d: write a whole number from 1 to %d", f.repeat, dsl.MaxRepeat)}
	}
	build, err := loadScenario(cmd, path, &f.vars)
	if err != nil {
		return nil, err
	}
	if err := runnerBuilt(); err != nil {
		return nil, &exitError{code: exitInfra, err: err}
	}
	if f.profiles != (profiles{}) {
		stop, err := startProfiles(f.profiles)
		if err != nil {
			return nil, &exitError{code: exitInvalid, err: err}
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", err)
			}
		}()
	}
	reps := defaultRepeat
	switch {
	case cmd.Flags().Changed("repeat"):
		reps = f.repeat
	case build.File.Repeat > 0:
		reps = build.File.Repeat
	}
	if reps < minRepeat {
		return nil, &exitError{code: exitInvalid, err: fmt.Errorf("%d repetition(s): %s needs at least %d (--repeat N)", reps, cmd.Name(), minRepeat)}
	}
	stderr := cmd.ErrOrStderr()
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// client-go logs through klog, to stderr by default, errors included
	// for every exec stream that closes as it ends: only with --verbose.
	klogger := slog.New(slog.DiscardHandler)
	if f.verbose {
		klogger = logger
	}
	klog.SetSlogLogger(klogger)
	out := f.out
	if out == "" {
		name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		out = filepath.Join("results", name+"-"+time.Now().Format("20060102-150405"))
	}
	sweep := len(build.Plans) > 1
	if err := prepareOutDir(out, sweep || reps > 1, f.overwrite); err != nil {
		return nil, &exitError{code: exitInvalid, err: fmt.Errorf("--out %s: %w", out, err)}
	}
	for _, s := range build.Skipped {
		fmt.Fprintf(stderr, "sweep point skipped: %s\n", s)
	}

	points := make([]*pointRuns, len(build.Plans))
	for i := range points {
		points[i] = &pointRuns{dir: out}
		if sweep {
			points[i].dir = filepath.Join(out, fmt.Sprintf("%02d", i+1))
		}
	}
	var failed []string
	// Repetitions interleave the points (A B C A B C ...): a machine that
	// drifts slower over the hour slows every point alike.
repetitions:
	for rep := 1; rep <= reps; rep++ {
		for i, pl := range build.Plans {
			pr := points[i]
			dir, rel := pr.dir, "."
			switch {
			case reps > 1 && sweep:
				rel = fmt.Sprintf("rep-%d", rep)
				fmt.Fprintf(stdout, "\n== repetition %d/%d, sweep point %d/%d: %s\n", rep, reps, i+1, len(build.Plans), pointText(pl.Point))
			case reps > 1:
				rel = fmt.Sprintf("rep-%d", rep)
				fmt.Fprintf(stdout, "\n== repetition %d/%d\n", rep, reps)
			case sweep:
				fmt.Fprintf(stdout, "\n== sweep point %d/%d: %s\n", i+1, len(build.Plans), pointText(pl.Point))
			}
			dir = filepath.Join(dir, rel)
			res, err := f.play(cmd.Context(), pl, playArgs{dir: dir, path: path, networks: nets, logger: logger, progress: stderr})
			if res != nil {
				// Results exist even when a fault could not be applied: show
				// what was measured before saying why the run does not count.
				if err := results.WriteSummary(stdout, res, isTerminal(stdout)); err != nil {
					return nil, err
				}
				fmt.Fprintf(stdout, "results: %s\n", dir)
				pr.runs = append(pr.runs, res)
				pr.reps = append(pr.reps, rel)
			}
			if err != nil {
				return nil, runError(cmd.Context(), err)
			}
			if !res.Passed() {
				name, _ := filepath.Rel(out, dir)
				var checks []string
				for _, c := range res.Checks {
					if c.Status() != results.StatusPass {
						checks = append(checks, c.Name)
					}
				}
				failed = append(failed, fmt.Sprintf("%s (%s)", name, strings.Join(checks, ", ")))
				if f.abortOnFail && res.Notes["aborted"] != "" {
					break repetitions
				}
			}
		}
	}
	if reps > 1 {
		for _, pr := range points {
			if len(pr.runs) == 0 {
				continue
			}
			pr.agg = results.NewAggregate(pr.runs, pr.reps)
			if err := results.WriteAggregate(pr.dir, pr.agg); err != nil {
				return nil, &exitError{code: exitInfra, err: err}
			}
			if err := writeRepetitionsJUnit(pr); err != nil {
				return nil, &exitError{code: exitInfra, err: err}
			}
		}
	}
	var all []*results.Results
	for _, pr := range points {
		for k, r := range pr.runs {
			if reps > 1 {
				// Label each repetition in the table: a copy of the run
				// whose point names it.
				c := *r
				c.Point = append(slices.Clone(r.Point), results.SweepValue{Variable: "rep", Value: strconv.Itoa(k + 1)})
				r = &c
			}
			all = append(all, r)
		}
	}
	if sweep || reps > 1 {
		if err := writeComparison(stdout, out, all, sweep); err != nil {
			return nil, err
		}
	}
	for _, pr := range points {
		if pr.agg != nil {
			fmt.Fprintf(stdout, "aggregate of %d repetitions: %s\n", len(pr.runs), filepath.Join(pr.dir, results.FileName))
		}
	}
	if len(failed) > 0 {
		msg := fmt.Sprintf("%d of %d run(s) failed a check", len(failed), len(build.Plans)*reps)
		if reps > 1 {
			msg += ": " + strings.Join(failed, "; ")
		}
		return points, &exitError{code: exitCheckFailed, err: errors.New(msg)}
	}
	return points, nil
}

// prepareOutDir makes sure the run can write its results in out before
// anything starts: out is a directory (made now if missing) that this
// user can write, and it holds no earlier run's results unless overwrite.
// A sweep or a repeated run (nested) writes in subdirectories, and a
// repeated sweep in theirs: earlier results there count too.
func prepareOutDir(out string, nested, overwrite bool) error {
	if fi, err := os.Stat(out); err == nil && !fi.IsDir() {
		return fmt.Errorf("is %s; name a directory for the results", safefile.Kind(fi.Mode()))
	}
	if !overwrite {
		earlier := []string{filepath.Join(out, results.FileName)}
		if nested {
			more, _ := filepath.Glob(filepath.Join(out, "*", results.FileName))
			deeper, _ := filepath.Glob(filepath.Join(out, "*", "*", results.FileName))
			earlier = append(append(earlier, more...), deeper...)
		}
		for _, p := range earlier {
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("holds the results of an earlier run (%s); choose another directory, or pass --overwrite to replace them", p)
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	probe, err := os.CreateTemp(out, ".write-test-*")
	if err != nil {
		return fmt.Errorf("cannot write there: %w", err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// writeComparison shows the sweep's points (or the repetitions, each
// labelled rep=k) side by side, on stdout and in comparison.txt next to
// their directories; a sweep also gets sweep.html.
func writeComparison(stdout io.Writer, out string, runs []*results.Results, sweep bool) error {
	var table bytes.Buffer
	if err := results.WriteSideBySide(&table, runs); err != nil {
		return err
	}
	what := "sweep points"
	switch {
	case !sweep:
		what = "repetitions"
	case slices.ContainsFunc(runs, func(r *results.Results) bool { return slices.ContainsFunc(r.Point, isRep) }):
		what = "runs (sweep points and repetitions)"
	}
	fmt.Fprintf(stdout, "\n== %d %s side by side\n%s", len(runs), what, table.String())
	path := filepath.Join(out, "comparison.txt")
	if err := os.WriteFile(path, table.Bytes(), 0o644); err != nil {
		return &exitError{code: exitInfra, err: fmt.Errorf("write comparison: %w", err)}
	}
	fmt.Fprintf(stdout, "comparison: %s\n", path)
	if sweep {
		writeSweepReport(stdout, out, runs)
	}
	return nil
}

func isRep(v results.SweepValue) bool { return v.Variable == "rep" }

func pointText(point []plan.SweepValue) string {
	var parts []string
	for _, p := range point {
		parts = append(parts, p.Variable+"="+p.Value)
	}
	return strings.Join(parts, " ")
}

// writeRepetitionsJUnit writes junit.xml beside a repeated run's aggregate:
// every repetition's checks, a suite each.
func writeRepetitionsJUnit(pr *pointRuns) error {
	var buf bytes.Buffer
	if err := results.WriteJUnitRepetitions(&buf, pr.runs, pr.reps); err != nil {
		return err
	}
	if err := safefile.WriteAtomic(filepath.Join(pr.dir, results.JUnitFile), buf.Bytes(), 0o644, false); err != nil {
		return fmt.Errorf("write the repetitions' JUnit report: %w", err)
	}
	return nil
}

// profiles are the files --cpuprofile, --memprofile and --trace ask for;
// an empty path asks for nothing.
type profiles struct {
	cpu, mem, trace string
}

// startProfiles profiles the runner itself as p asks: the CPU and an
// execution trace from now until stop, the heap as stop is called.
func startProfiles(p profiles) (stop func() error, err error) {
	var cpu, tr *os.File
	if p.cpu != "" {
		if cpu, err = os.Create(p.cpu); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("--cpuprofile %s: %w", p.cpu, err)
		}
	}
	if p.trace != "" {
		if tr, err = os.Create(p.trace); err == nil {
			if err = trace.Start(tr); err != nil {
				tr.Close()
			}
		}
		if err != nil {
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
			return nil, fmt.Errorf("--trace: %w", err)
		}
	}
	return func() error {
		var errs []error
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				errs = append(errs, fmt.Errorf("--cpuprofile: %w", err))
			}
		}
		if tr != nil {
			trace.Stop()
			if err := tr.Close(); err != nil {
				errs = append(errs, fmt.Errorf("--trace: %w", err))
			}
		}
		if p.mem != "" {
			if err := writeHeapProfile(p.mem); err != nil {
				errs = append(errs, fmt.Errorf("--memprofile: %w", err))
			}
		}
		return errors.Join(errs...)
	}, nil
}

// writeHeapProfile writes the heap's live objects, and everything
// allocated since the start, to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC() // the live heap as of now, not as of the last collection
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
