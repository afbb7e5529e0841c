package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/coordlab/scenario/internal/gcbudget"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

var (
	breakdown = flag.Bool("breakdown", false,
		"also run the breakdown contenders (engine with a plain clientv3 client, plain loops) that show where our overhead lies")
	gcDefault = flag.Bool("gc-default", false,
		"also run scenario with Go's default GC percent instead of the runner's GC headroom (internal/gcbudget), to show what the headroom buys")
	disableTHP = flag.Bool("disablethp", false,
		"also run scenario with GODEBUG=disablethp=1, which keeps the GC headroom off transparent huge pages (internal/gcbudget), to show what they buy; needs -fresh-process")
	headroomMiB = flag.Int("headroom-mib", 0,
		"also run scenario with this cap on the GC headroom in MiB instead of the runner's (internal/gcbudget.DefaultHeadroom), to weigh collections against fresh pages; needs -fresh-process")
	toolSymbols = flag.Bool("tool-symbols", false,
		"run etcd's tool built with its symbol table (cached apart from the stripped build), so that a profile of the benchmark (perf record -g -a) names the tool's functions as it does ours")
	fixedRate = flag.Int("rate", 0,
		"also run the 1000-client case with both tools held to this many puts a second (etcd's tool's --rate, our open loop), below what the cluster reaches, to compare the clients' CPU a request at equal throughput (not with -breakdown, whose loop,pinned runs only at full speed)")
	freshProcess = flag.Bool("fresh-process", true,
		"run each of our contenders in a fresh process of this test binary, as etcd's tool runs in one of its own, and count that whole process's CPU and page faults; false runs them in this process after handing its heap back to the OS, counting the run alone, so that one -cpuprofile splits by contender")
)

// rounds is the fewest runs of each contender per case. Runs alternate
// within a round (theirs, ours, ...; then again) and each ratio pairs the
// runs of one round, so drift over the run falls on both sides of every
// ratio alike. Eight is the fewest whose paired 95% interval cuts more than
// the extreme rounds (compare.SignedRank: 6 is the fewest bounded at all).
// Per-round ratios that spread by ±15%, as on the machine of the README's
// figures, gave ±8% and ±12% from eight, so rounds go on past it (see
// moreRounds) until the throughput interval is within ±width or maxRounds
// have run.
var (
	rounds    = flag.Int("rounds", 8, "fewest runs of each contender per case, alternating")
	maxRounds = flag.Int("max-rounds", 20, "most runs of each contender per case: rounds go on past -rounds until the throughput ratio's 95% interval is within ±width")
	width     = flag.Float64("width", 0.10, "the throughput ratio's 95% interval half-width, relative to its median, at which rounds stop once -rounds have run")
)

// putCases are issue 3's two load points. Totals are sized so that one run
// takes well under a minute on a 2-core machine.
var putCases = []putCase{
	{name: "clients=1", clients: 1, conns: 1, total: 10_000, keySize: 8, valueSize: 256, keyspace: 100_000},
	{name: "clients=1000,conns=100", clients: 1000, conns: 100, total: 100_000, keySize: 8, valueSize: 256, keyspace: 100_000},
}

// casesToRun are putCases and, with -rate, the 1000-client case held to
// that rate. At full speed the client and the cluster share two saturated
// cores, so each process's CPU a second hardly moves and a client's CPU a
// request follows the throughput the cluster reaches; held to one rate
// both tools answer the same requests, and the CPU a request is the
// client's own.
func casesToRun(rate int) []putCase {
	cs := slices.Clone(putCases)
	if rate > 0 {
		c := putCases[1]
		c.name += ",rate=" + strconv.Itoa(rate)
		c.rate = rate
		c.total = 10 * rate // ten seconds, as the others take
		cs = append(cs, c)
	}
	return cs
}

// runTimeout bounds one run of any contender: far beyond what a healthy run
// takes, short enough that a wedged cluster does not eat the whole -timeout.
const runTimeout = 5 * time.Minute

// contender is one way of generating a case's load against the leader. d is
// how long etcd's tool just took for the case's request count, for
// contenders that run for a duration rather than a count.
type contender struct {
	name string
	run  func(ctx context.Context, leader stores.Endpoint, c putCase, d time.Duration) (measurement, error)
	// gcBudget runs the contender with the GC headroom the scenario
	// command gives its whole process (internal/gcbudget); the others run
	// at Go's default, as etcd's tool does.
	gcBudget bool
	// external is a contender that is a program of its own (etcd's tool),
	// measured by its process. The others are this package's code, run in
	// a fresh process of this test binary (runFresh) unless
	// -fresh-process=false.
	external bool
	// with is the flag that adds the contender to the benchmark, "" for
	// one that always runs.
	with string
	// env is added to the environment of the contender's fresh process
	// (a GODEBUG setting, which the runtime reads as it starts).
	env []string
}

// ours is the contender whose ratio is reported as the benchmark's metric:
// a scenario at every client default, which sends the RPCs etcd's tool
// sends.
const ours = "scenario"

// tool runs etcd's benchmark tool at bin.
func tool(bin string) func(ctx context.Context, leader stores.Endpoint, c putCase, _ time.Duration) (measurement, error) {
	return func(ctx context.Context, leader stores.Endpoint, c putCase, _ time.Duration) (measurement, error) {
		return runTheirs(ctx, bin, leader.ClientAddr, c)
	}
}

// allContenders is every contender, whichever flags add it.
func allContenders(bins binaries) []contender {
	return []contender{
		{name: "etcd benchmark", run: tool(bins.benchmark), external: true},
		{name: ours, run: runOurs(plan.ClientSpec{}), gcBudget: true},
		{name: "scenario,GOGC=100", run: runOurs(plan.ClientSpec{}), with: "gc-default"},
		{name: "scenario,GODEBUG=disablethp=1", run: runOurs(plan.ClientSpec{}), gcBudget: true, with: "disablethp", env: []string{"GODEBUG=disablethp=1"}},
		{name: "scenario,-headroom-mib", run: runOurs(plan.ClientSpec{}), gcBudget: true, with: "headroom", env: []string{fmt.Sprintf("%s=%d", headroomEnv, *headroomMiB<<20)}},
		// What a scenario pays for client { require_leader = true }.
		{name: "scenario,require_leader=true", run: runOurs(plan.ClientSpec{RequireLeader: new(true)}), gcBudget: true, with: "breakdown"},
		{name: "engine+deadline", run: runEnginePlain(true, false), gcBudget: true, with: "breakdown"},
		{name: "engine+leader", run: runEnginePlain(false, true), gcBudget: true, with: "breakdown"},
		{name: "engine+plain", run: runEnginePlain(false, false), gcBudget: true, with: "breakdown"},
		{name: "loop,pinned", run: runLoop, with: "breakdown"},
		// etcd's tool as released, but linking our versions of gRPC,
		// x/net and protobuf: what the libraries alone change.
		{name: "etcd benchmark,our libraries", run: tool(bins.benchmarkOurLibs), external: true, with: "breakdown"},
	}
}

// contenders is the contenders the flags ask for, etcd's tool first.
func contenders(bins binaries) []contender {
	added := map[string]bool{"": true, "gc-default": *gcDefault, "breakdown": *breakdown, "disablethp": *disableTHP, "headroom": *headroomMiB > 0}
	return slices.DeleteFunc(allContenders(bins), func(ct contender) bool { return !added[ct.with] })
}

// caseResult holds every run of one case: runs[i][r] is contender i's run
// in round r. Contender 0 is etcd's tool, the reference of every ratio.
type caseResult struct {
	c     putCase
	names []string
	runs  [][]measurement
}

// each is one figure of a contender's rounds.
func each(ms []measurement, figure func(measurement) float64) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = figure(m)
	}
	return out
}

func rate(m measurement) float64 { return m.rps }
func p99(m measurement) float64  { return msf(m.p99) }

// BenchmarkEtcdPut starts one 3-node etcd cluster and, for each case, runs
// etcd's `benchmark put` and the workload engine's equivalent closed loop
// against its leader, then prints every contender's rate and latencies and
// its ratio to etcd's tool. Client and cluster share the machine's cores,
// for every contender alike.
func BenchmarkEtcdPut(b *testing.B) {
	ctx := b.Context()
	bins, err := installBinaries(ctx, b)
	if err != nil {
		b.Skipf("cannot build what the comparison needs: %v", err)
	}
	cl, err := startCluster(ctx, bins.server)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := cl.close(); err != nil {
			b.Errorf("stop cluster: %v", err)
		}
	}()

	cs := contenders(bins)
	var all []caseResult
	for _, c := range casesToRun(*fixedRate) {
		b.Run(c.name, func(b *testing.B) {
			var r caseResult
			for b.Loop() {
				var err error
				if r, err = compare(b.Context(), b, cl, cs, c); err != nil {
					b.Fatal(err)
				}
			}
			t, o := r.runs[0], r.runs[slices.Index(r.names, ours)]
			ratioOf(each(t, rate), each(o, rate)).report(b, "ratio_rps")
			ratioOf(each(t, cpuPerReq), each(o, cpuPerReq)).report(b, "ratio_cpu/req")
			ratioOf(each(t, clusterCPUPerReq), each(o, clusterCPUPerReq)).report(b, "ratio_cluster_cpu/req")
			b.ReportMetric(results.Median(each(o, rate)), "ours_rps")
			b.ReportMetric(results.Median(each(t, rate)), "theirs_rps")
			b.ReportMetric(results.Median(each(o, p99)), "ours_p99_ms")
			b.ReportMetric(results.Median(each(t, p99)), "theirs_p99_ms")
			b.ReportMetric(results.Median(each(o, cpuPerReq)), "ours_cpu_µs/req")
			b.ReportMetric(results.Median(each(t, cpuPerReq)), "theirs_cpu_µs/req")
			all = append(all, r)
		})
	}
	printTable(os.Stdout, all)
}

// compare runs every contender rounds times, in turn, etcd's tool first in
// each round so that duration-based contenders can run for as long as it
// just took. Before every run the cluster is compacted and defragmented
// and its leader looked up again, so that every run starts from the same
// state.
func compare(ctx context.Context, b *testing.B, cl *cluster, cs []contender, c putCase) (caseResult, error) {
	r := caseResult{c: c, runs: make([][]measurement, len(cs))}
	for _, ct := range cs {
		r.names = append(r.names, ct.name)
	}
	// A fresh cluster, or one that has just been idle, answers its first
	// run measurably faster than every later one, however it is reset. The
	// first contender, etcd's tool, would get that advantage in every case,
	// so a run of it goes first unmeasured.
	if err := warmUp(ctx, cl, cs[0], c); err != nil {
		return r, fmt.Errorf("%s warm-up: %w", c.name, err)
	}
	oursAt := slices.Index(r.names, ours)
	for round := 0; moreRounds(round, *rounds, *maxRounds, *width, each(r.runs[0], rate), each(r.runs[oursAt], rate)); round++ {
		var theirs time.Duration
		for i, ct := range cs {
			if err := cl.reset(ctx); err != nil {
				return r, fmt.Errorf("%s round %d, before %s: %w", c.name, round+1, ct.name, err)
			}
			leader, err := cl.leader(ctx)
			if err != nil {
				return r, fmt.Errorf("%s round %d, %s: %w", c.name, round+1, ct.name, err)
			}
			use0, err := cl.use()
			if err != nil {
				return r, fmt.Errorf("%s round %d, %s: %w", c.name, round+1, ct.name, err)
			}
			rctx, cancel := context.WithTimeout(ctx, runTimeout)
			m, err := runOnce(rctx, ct, c, leader, theirs)
			cancel()
			if err != nil {
				return r, fmt.Errorf("%s round %d, %s: %w", c.name, round+1, ct.name, err)
			}
			use1, err := cl.use()
			if err != nil {
				return r, fmt.Errorf("%s round %d, after %s: %w", c.name, round+1, ct.name, err)
			}
			m.cluster = use1.since(use0)
			if i == 0 {
				theirs = m.elapsed
			}
			b.Logf("round %d %-14s (leader n%d): %s", round+1, ct.name, leader.Node, m)
			r.runs[i] = append(r.runs[i], m)
		}
	}
	return r, nil
}

// runOnce runs ct once: in a process of its own, as etcd's tool runs, or
// with -fresh-process=false in this one.
func runOnce(ctx context.Context, ct contender, c putCase, leader stores.Endpoint, d time.Duration) (measurement, error) {
	if ct.external {
		return ct.run(ctx, leader, c, d)
	}
	if *freshProcess {
		return runFresh(ctx, ct, c, leader, d)
	}
	if len(ct.env) > 0 {
		return measurement{}, fmt.Errorf("%s sets its environment (%s), which needs a fresh process: drop -fresh-process=false", ct.name, strings.Join(ct.env, " "))
	}
	// Every run in this process starts from a heap returned to the OS:
	// otherwise a contender that runs after another of ours reuses the
	// pages that one faulted in, and the first after etcd's tool pays for
	// them all (at 1 client, 4% of its CPU per request).
	debug.FreeOSMemory()
	return withGCBudget(ctx, ct.gcBudget, func() (measurement, error) { return labelled(ctx, ct, c, leader, d) })
}

// labelled runs ct with a profiler label naming it and the case, which the
// goroutines it starts inherit (its workers, gRPC's connection goroutines),
// so that a -cpuprofile of the benchmark splits by contender:
// `go tool pprof -tags`, or -tagfocus 'contender=^scenario$' for one.
func labelled(ctx context.Context, ct contender, c putCase, leader stores.Endpoint, d time.Duration) (m measurement, err error) {
	pprof.Do(ctx, pprof.Labels("contender", ct.name, "case", c.name), func(ctx context.Context) {
		m, err = ct.run(ctx, leader, c, d)
	})
	return m, err
}

// withGCBudget runs fn with the scenario command's GC headroom in force
// when on, and at the GC percent in force otherwise (Go's default).
func withGCBudget(ctx context.Context, on bool, fn func() (measurement, error)) (measurement, error) {
	if !on {
		return fn()
	}
	defer startGCBudget(ctx)()
	return fn()
}

// headroomEnv, in a fresh process's environment, is the GC headroom's cap
// in bytes for the contender -headroom-mib adds.
const headroomEnv = "SCENARIO_BENCH_HEADROOM"

// startGCBudget puts the scenario command's GC headroom in force until
// the returned stop is called, which restores the percent it found.
func startGCBudget(ctx context.Context) (stop func()) {
	gctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	headroom := uint64(gcbudget.DefaultHeadroom)
	if n, err := strconv.ParseUint(os.Getenv(headroomEnv), 10, 64); err == nil && n > 0 {
		headroom = n
	}
	wg.Go(func() { gcbudget.Run(gctx, headroom, time.Second) })
	return func() {
		cancel()
		wg.Wait()
	}
}

func warmUp(ctx context.Context, cl *cluster, ct contender, c putCase) error {
	if err := cl.reset(ctx); err != nil {
		return err
	}
	leader, err := cl.leader(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	_, err = runOnce(ctx, ct, c, leader, 0)
	return err
}

func (m measurement) String() string {
	s := fmt.Sprintf("%d ok, %d failed in %s: %.0f req/s, p50 %.3f ms, p99 %.3f ms, client CPU %s (%.1f µs/req, GC %.1f, system %.0f%%), %.2f page faults/req, %.2f context switches/req",
		m.requests, m.failed, m.elapsed.Round(time.Millisecond), m.rps, msf(m.p50), msf(m.p99), m.cpu.Round(time.Millisecond), cpuPerReq(m), gcPerReq(m), sysPercent(m), faultsPerReq(m), switchesPerReq(m))
	s += fmt.Sprintf("; the cluster's CPU %.1f µs/req, its wait for a CPU %.1f µs/req, its reads %.2f and writes %.2f a request",
		clusterCPUPerReq(m), clusterWaitPerReq(m), perReq(m, float64(m.cluster.reads)), perReq(m, float64(m.cluster.writes)))
	if m.runCPU > 0 {
		s += fmt.Sprintf("; the run alone %.1f µs/req, %.2f faults/req", runCPUPerReq(m), perReq(m, float64(m.runFaults)))
	}
	return s
}

// perReq is a run's total divided among its requests; 0 for a run that
// made none.
func perReq(m measurement, total float64) float64 {
	if m.requests == 0 {
		return 0
	}
	return total / float64(m.requests)
}

// faultsPerReq is the client's minor page faults per request.
func faultsPerReq(m measurement) float64 { return perReq(m, float64(m.faults)) }

// switchesPerReq is the client's context switches per request.
func switchesPerReq(m measurement) float64 { return perReq(m, float64(m.switches)) }

// sysPercent is the kernel's share of the client's CPU, in percent.
func sysPercent(m measurement) float64 {
	if m.cpu <= 0 {
		return 0
	}
	return 100 * float64(m.sys) / float64(m.cpu)
}

// cpuPerReq is the client's CPU cost of one request, in microseconds.
func cpuPerReq(m measurement) float64 { return perReq(m, us(m.cpu)) }

// runCPUPerReq is cpuPerReq of the run alone, for ours in a fresh process.
func runCPUPerReq(m measurement) float64 { return perReq(m, us(m.runCPU)) }

// clusterCPUPerReq is the members' CPU over the run, per request.
func clusterCPUPerReq(m measurement) float64 { return perReq(m, us(m.cluster.cpu)) }

// clusterWaitPerReq is the time the members' threads waited for a CPU over
// the run, per request.
func clusterWaitPerReq(m measurement) float64 { return perReq(m, us(m.cluster.wait)) }

// us is d in microseconds.
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// printTable writes one line per run, each with its rate relative to etcd's
// tool in the same round, then per contender and case the medians and
// the ratios of rate and of client CPU per request with their 95%
// intervals.
func printTable(w io.Writer, all []caseResult) {
	if len(all) == 0 {
		return
	}
	fmt.Fprintf(w, "\netcd %s put, 3 nodes on loopback, all requests to the leader, key %d B, value %d B, 2 cores shared by client and cluster;\n"+
		"runs alternate between tools, rounds %s; ratio = over etcd benchmark's in the same round; median lines: the median of those ratios\n"+
		"and its %.0f%% interval (compare's paired Wilcoxon signed-rank interval on the logarithms); GC: the Go runtime's estimate of its collector's part of the CPU;\n"+
		"faults: minor page faults, each a page touched for the first time (BenchmarkFreshPages says what one costs on this machine);\n"+
		"sys: the kernel's share of the client's CPU; switches: its threads' context switches (each a sleep and a wake-up);\n"+
		"cluster: the three members' CPU over the run (from the client's start to its exit), and the time their threads waited for a CPU while runnable\n",
		etcdVersion, all[0].c.keySize, all[0].c.valueSize, roundsPerCase(all), 100*(1-ratioAlpha))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\ttool\trun\trequests\tfailed\tsecs\treq/s\tp50 ms\tp99 ms\tclient CPU µs/req\tGC µs/req\tsys %\tfaults/req\tswitches/req\tcluster CPU µs/req\tcluster wait µs/req\tratio\t")
	for _, r := range all {
		for round := range r.runs[0] {
			for i, name := range r.names {
				m, ref := r.runs[i][round], r.runs[0][round]
				ratio := ""
				if i > 0 {
					ratio = fmt.Sprintf("%.3f", m.rps/ref.rps)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.2f\t%.0f\t%.3f\t%.3f\t%.1f\t%.1f\t%.0f\t%.2f\t%.2f\t%.1f\t%.1f\t%s\t\n",
					r.c.name, name, round+1, m.requests, m.failed, m.elapsed.Seconds(), m.rps, msf(m.p50), msf(m.p99), cpuPerReq(m), gcPerReq(m), sysPercent(m), faultsPerReq(m), switchesPerReq(m), clusterCPUPerReq(m), clusterWaitPerReq(m), ratio)
			}
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\ttool\tmedian req/s\tmedian p99 ms\tmedian CPU µs/req\tmedian GC µs/req\tmedian sys %\tmedian faults/req\tmedian switches/req\treq/s ratio [95%]\tCPU/req ratio [95%]\tthe run alone: CPU µs/req\tmedian cluster CPU µs/req\tcluster CPU/req ratio [95%]\t")
	for _, r := range all {
		for i, name := range r.names {
			rateRatio, cpuRatio, runCPU, clusterRatio := "", "", "", ""
			if i > 0 {
				rateRatio = ratioOf(each(r.runs[0], rate), each(r.runs[i], rate)).String()
				cpuRatio = ratioOf(each(r.runs[0], cpuPerReq), each(r.runs[i], cpuPerReq)).String()
				clusterRatio = ratioOf(each(r.runs[0], clusterCPUPerReq), each(r.runs[i], clusterCPUPerReq)).String()
			}
			if runs := r.runs[i]; len(runs) > 0 && runs[0].runCPU > 0 {
				runCPU = fmt.Sprintf("%.1f", results.Median(each(runs, runCPUPerReq)))
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.3f\t%.1f\t%.1f\t%.0f\t%.2f\t%.2f\t%s\t%s\t%s\t%.1f\t%s\t\n", r.c.name, name,
				results.Median(each(r.runs[i], rate)), results.Median(each(r.runs[i], p99)), results.Median(each(r.runs[i], cpuPerReq)),
				results.Median(each(r.runs[i], gcPerReq)), results.Median(each(r.runs[i], sysPercent)), results.Median(each(r.runs[i], faultsPerReq)),
				results.Median(each(r.runs[i], switchesPerReq)), rateRatio, cpuRatio, runCPU, results.Median(each(r.runs[i], clusterCPUPerReq)), clusterRatio)
		}
	}
	tw.Flush()
	printHeapTable(w, all)
}

// printHeapTable prints, for the contenders that ran as processes of their
// own, what their gctrace said: how many collections, what the last one
// marked live, the most stack scanned, and what was allocated a request
// (start and dial included, as in their CPU).
func printHeapTable(w io.Writer, all []caseResult) {
	traced := func(runs []measurement) bool {
		return slices.ContainsFunc(runs, func(m measurement) bool { return m.heap.cycles > 0 })
	}
	if !slices.ContainsFunc(all, func(r caseResult) bool { return slices.ContainsFunc(r.runs, traced) }) {
		return
	}
	fmt.Fprintln(w, "\nthe collector's work, from each process's GODEBUG=gctrace=1 (MiB rounded down by the trace; medians of the rounds):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\ttool\tcollections\tlive MiB (the last marked)\tstacks MiB (most scanned)\tKiB allocated/req\t")
	for _, r := range all {
		for i, name := range r.names {
			if !traced(r.runs[i]) {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.0f\t%.2f\t\n", r.c.name, name,
				results.Median(each(r.runs[i], func(m measurement) float64 { return float64(m.heap.cycles) })),
				results.Median(each(r.runs[i], func(m measurement) float64 { return float64(m.heap.liveMB) })),
				results.Median(each(r.runs[i], func(m measurement) float64 { return float64(m.heap.stacksMB) })),
				results.Median(each(r.runs[i], allocKiBPerReq)))
		}
	}
	tw.Flush()
}

// allocKiBPerReq is what the process allocated a request, by its gctrace.
func allocKiBPerReq(m measurement) float64 { return perReq(m, float64(m.heap.allocMB)*1024) }

// roundsPerCase says how many rounds each case ran, as "case: n, ...":
// rounds go on until the interval is narrow, so cases differ.
func roundsPerCase(all []caseResult) string {
	parts := make([]string, len(all))
	for i, r := range all {
		parts[i] = fmt.Sprintf("%s: %d", r.c.name, len(r.runs[0]))
	}
	return strings.Join(parts, ", ")
}

func TestCasesToRun(t *testing.T) {
	tests := []struct {
		rate      int
		wantNames []string
	}{
		{0, []string{"clients=1", "clients=1000,conns=100"}},
		{6000, []string{"clients=1", "clients=1000,conns=100", "clients=1000,conns=100,rate=6000"}},
	}
	for _, tt := range tests {
		cs := casesToRun(tt.rate)
		var names []string
		for _, c := range cs {
			names = append(names, c.name)
		}
		if !slices.Equal(names, tt.wantNames) {
			t.Errorf("casesToRun(%d) = %q, want %q", tt.rate, names, tt.wantNames)
			continue
		}
		for _, c := range cs[:2] {
			if c.rate != 0 {
				t.Errorf("casesToRun(%d): %s has rate %d, want the full-speed case", tt.rate, c.name, c.rate)
			}
		}
		if tt.rate == 0 {
			continue
		}
		// A fresh child finds the case by name among casesToRun(its Rate).
		held, base := cs[2], cs[1]
		if held.rate != tt.rate || held.total != 10*tt.rate || held.clients != base.clients || held.conns != base.conns || held.keyspace != base.keyspace {
			t.Errorf("casesToRun(%d): held case %+v, want %+v with rate %d and %d puts", tt.rate, held, base, tt.rate, 10*tt.rate)
		}
	}
	if putCases[1].rate != 0 || len(putCases) != 2 {
		t.Errorf("casesToRun changed putCases: %+v", putCases)
	}
}
