package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner"
)

// fabricScenario is a closed-loop put load on a 3-node etcd with no
// network shaping: the runner puts it on loopback unless told otherwise.
const fabricScenario = `
cluster "main" {
  store = "etcd"
  nodes = 3
}

workload "put" {
  mix        = { put = 1 }
  key_prefix = "k"
  key_size   = 8
  value_size = 256
  keyspace   = 100000
  clients    = 1000
  conns      = 100
  preload    = false
}

phase "load" {
  duration = "10s"
  load "put" {}
}
`

// BenchmarkFabricOverhead runs the same etcd put load several ways in one
// process: on loopback, the reference, and with every node and the clients
// in network namespaces: connected as a shaped run connects them, pairs
// whose link shapes nothing (here all) through the kernel by a bridge
// ("bypass"); through the kernel reference network ("kernel", veths to a
// bridge and nothing else); through the userspace shaper with every
// packet queued through its per-pair scheduler ("engaged", the path every
// shaped packet takes); through the shaper with packets on links with no
// effect written straight from the reader ("direct"); and engaged with the
// TUN devices' TCP segmentation offload off, every packet of the MTU
// ("engaged-no-tso", what the offload saves); and engaged with each frame
// read by a read(2) of its own ("engaged-plain", what reading frames in
// batches through io_uring saves); and engaged with a pair's frames
// delivered in batches, one sendmmsg(2) to a packet socket on a veth in the
// destination, instead of a write(2) a frame to its TUN device
// ("engaged-packet-writes", what batched delivery saves). -fabric-modes chooses among
// them (by default bypass and engaged), loopback always kept. Runs
// interleave over rounds, in alternating order (-rounds, then more until
// every ratio's interval is within ±width or -max-rounds have run; see
// interleaveRuns). It reports the median throughput
// relative to loopback's, with the paired interval of compare's
// signed-rank test, and the runner's CPU per put: the load generator alone
// on loopback, the load generator and the shaper (which runs in the
// runner's process) otherwise, so the difference is what the shaper costs
// per request. Every mode runs with the GC headroom the scenario command
// gives its process (internal/gcbudget).
func BenchmarkFabricOverhead(b *testing.B) {
	p := fabricPlan(b, "fabric-bench.hcl", fabricScenario)
	defer startGCBudget(b.Context())()
	modes, err := fabricModes(*fabricModeList)
	if err != nil {
		b.Fatal(err)
	}
	summarise(b, "etcd put, 1000 clients over 100 conns, 10 s closed loop", modes, interleaveRuns(b, p, modes))
}

// fabricPlan compiles a benchmark's scenario, which needs the network
// fabric: the benchmark skips where it cannot be built.
func fabricPlan(b *testing.B, name, src string) *plan.Plan {
	b.Helper()
	if err := fabric.Available(); err != nil {
		b.Skipf("needs network namespaces: %v", err)
	}
	build, diags := dsl.Load(hclparse.NewParser(), name, []byte(src), dsl.VarOptions{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	return build.Plans[0]
}

// roundFigures is each mode's figures, round by round: throughput, runner
// CPU per request, frames the shaper read per request (0 where no shaper
// ran), and the milliseconds the kernel's ksoftirqd threads ran during the
// run (NaN where they could not be read).
type roundFigures struct {
	rps, cpu, frames, ksoftirqd map[string][]float64
}

// interleaveRuns runs p once per mode per round, in alternating order,
// over rounds until moreRounds says enough (every ratio to modes[0], the
// reference, within ±width, or -max-rounds), and returns each mode's
// figures round by round.
func interleaveRuns(b *testing.B, p *plan.Plan, modes []fabricMode) roundFigures {
	fig := roundFigures{map[string][]float64{}, map[string][]float64{}, map[string][]float64{}, map[string][]float64{}}
	rps, cpu, frames := fig.rps, fig.cpu, fig.frames
	ref := modes[0].name
	others := func() [][]float64 {
		out := make([][]float64, 0, len(modes)-1)
		for _, m := range modes[1:] {
			out = append(out, rps[m.name])
		}
		return out
	}
	for b.Loop() {
		for round := 0; moreRounds(round, *rounds, *maxRounds, *width, rps[ref], others()...); round++ {
			// Every other round runs the modes in reverse, so that what
			// drifts within a round (the second run finds the machine
			// warmer, its page cache fuller) falls on each side of a ratio
			// as often as on the other.
			order := slices.Clone(modes)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, m := range order {
				before, softErr := sampleSoftirq()
				ctx, cancel := context.WithTimeout(b.Context(), runTimeout)
				res, err := runner.Run(ctx, p, runner.Options{StateDir: b.TempDir(), Network: m.network})
				cancel()
				if err != nil {
					b.Fatalf("%s: %v", m.name, err)
				}
				soft := softirqSample{ksoftirqd: -1}
				if after, err := sampleSoftirq(); softErr == nil && err == nil {
					soft = after.since(before)
				}
				ph, _ := res.Phase("load")
				perReq := runnerCPUPerRequest(ph)
				var perPut float64
				var drops int64
				if ph.NetworkFrames != nil && ph.Total.OK > 0 {
					perPut = float64(*ph.NetworkFrames) / float64(ph.Total.OK)
				}
				if ph.NetworkDrops != nil {
					drops = *ph.NetworkDrops
				}
				rps[m.name] = append(rps[m.name], ph.Total.Throughput)
				cpu[m.name] = append(cpu[m.name], perReq)
				frames[m.name] = append(frames[m.name], perPut)
				fig.ksoftirqd[m.name] = append(fig.ksoftirqd[m.name], soft.ksoftirqdMS())
				excess := ""
				if f := ph.WriteFloor; f != nil && f.ExcessPct != nil {
					excess = fmt.Sprintf(" (%+.1f%% over the %.1f ms floor)", *f.ExcessPct, f.FloorMS)
				}
				b.Logf("round %d %-10s %.0f put/s, p50 %.2f ms%s, p99 %.1f ms, runner CPU %.1f µs/put, %.2f frames/put through the shaper, %d dropped undeclared; "+
					"ksoftirqd ran %.1f ms, backlog processing stopped short %d times, %d frames dropped at a full backlog",
					round+1, m.name, ph.Total.Throughput, ph.Total.Latency.P50MS, excess, ph.Total.Latency.P99MS, perReq, perPut, drops,
					soft.ksoftirqdMS(), soft.squeezed, soft.dropped)
			}
		}
	}
	return fig
}

// summarise prints every round, then each mode's medians and their ratios
// to modes[0]'s with the paired interval, and reports those as metrics.
// Where modes[0] runs without a shaper, a mode with one also gets the
// shaper's CPU per frame: per round, its runner CPU per put over the
// reference's, divided by the frames it read per put.
func summarise(b *testing.B, load string, modes []fabricMode, fig roundFigures) {
	ref := modes[0].name
	rps, cpu, frames := fig.rps, fig.cpu, fig.frames
	// Every round, since a benchmark's own log keeps only its first lines.
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\nround\tnetwork\tput/s\trunner CPU µs/put\tframes/put\tksoftirqd ms/run\t")
	for round := range rps[ref] {
		for _, m := range modes {
			fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.1f\t%.2f\t%.1f\t\n", round+1, m.name, rps[m.name][round], cpu[m.name][round], frames[m.name][round], fig.ksoftirqd[m.name][round])
		}
	}
	tw.Flush()
	tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\n%s; %d interleaved rounds; median of the per-round ratios to %s's with their %.0f%% paired interval;\n"+
		"runner CPU: the load generator, plus the shaper (in the runner's process) where packets go through it\n",
		load, len(rps[ref]), ref, 100*(1-ratioAlpha))
	fmt.Fprintf(tw, "network\tmedian put/s\tvs %s [95%%]\trunner CPU µs/put\tvs %s [95%%]\tframes/put\tshaper µs/frame\tksoftirqd ms/run\t\n", ref, ref)
	for _, m := range modes {
		r := ratioOf(rps[ref], rps[m.name])
		c := ratioOf(cpu[ref], cpu[m.name])
		perFrame := "-"
		if pf, ok := shaperPerFrame(cpu[ref], frames[ref], cpu[m.name], frames[m.name]); ok {
			perFrame = fmt.Sprintf("%.2f", pf)
			b.ReportMetric(pf, m.name+"_shaper_µs/frame")
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.1f\t%s\t%.2f\t%s\t%.1f\t\n", m.name, results.Median(rps[m.name]), r, results.Median(cpu[m.name]), c, results.Median(frames[m.name]), perFrame, results.Median(fig.ksoftirqd[m.name]))
		if m.name != ref {
			r.report(b, m.name+"_ratio")
			c.report(b, m.name+"_cpu_ratio")
			b.ReportMetric(results.Median(cpu[m.name])-results.Median(cpu[ref]), m.name+"_cpu_over_"+ref+"_µs/put")
		}
	}
	tw.Flush()
}

var fabricModeList = flag.String("fabric-modes", "bypass,engaged",
	"the networks BenchmarkFabricOverhead compares with loopback, comma-separated: "+strings.Join(fabricModeNames(), ", "))

type fabricMode struct{ name, network string }

// knownFabricModes are the networks the benchmark can compare.
var knownFabricModes = []fabricMode{
	{"bypass", runner.NetworkBypass},
	{"kernel", runner.NetworkKernel},
	{"direct", runner.NetworkDirect},
	{"engaged", runner.NetworkEngaged},
	{"engaged-no-tso", runner.NetworkEngagedNoOffload},
	{"engaged-plain", runner.NetworkEngagedPlain},
	{"engaged-packet-writes", runner.NetworkEngagedPacketWrites},
}

func fabricModeNames() []string {
	names := make([]string, len(knownFabricModes))
	for i, m := range knownFabricModes {
		names[i] = m.name
	}
	return names
}

// fabricModes is loopback, the reference, then the modes named in list.
func fabricModes(list string) ([]fabricMode, error) {
	return modesAfter(fabricMode{"loopback", ""}, "-fabric-modes", list)
}

// modesAfter is ref, then the known modes named in list (flag's value).
func modesAfter(ref fabricMode, flag, list string) ([]fabricMode, error) {
	known := knownFabricModes
	out := []fabricMode{ref}
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(known, func(m fabricMode) bool { return m.name == name })
		if i < 0 {
			return nil, fmt.Errorf("%s: unknown network %q: write one of %s", flag, name, strings.Join(fabricModeNames(), ", "))
		}
		if slices.ContainsFunc(out, func(m fabricMode) bool { return m.network == known[i].network }) {
			return nil, fmt.Errorf("%s: %q is named twice, or is the reference", flag, name)
		}
		out = append(out, known[i])
	}
	return out, nil
}

// runnerCPUPerRequest is the runner process's CPU per request of a phase,
// in microseconds, from its mean CPU share over the phase.
func runnerCPUPerRequest(p *results.Phase) float64 {
	u, ok := p.Resources[results.RunnerNode]
	if !ok || p.Total.Throughput <= 0 {
		return 0
	}
	return u.CPUMeanPercent / 100 / p.Total.Throughput * 1e6
}

func TestFabricModes(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []string
		err  bool
	}{
		{"direct,engaged,engaged-no-tso", []string{"loopback", "direct", "engaged", "engaged-no-tso"}, false},
		{"engaged", []string{"loopback", "engaged"}, false},
		{"engaged-plain,engaged", []string{"loopback", "engaged-plain", "engaged"}, false},
		{"bypass,kernel", []string{"loopback", "bypass", "kernel"}, false},
		{"", nil, true},
		{"loopback", nil, true},
		{"engaged,engaged", nil, true},
		{"shaped", nil, true},
	} {
		got, err := fabricModes(tc.list)
		if (err != nil) != tc.err {
			t.Errorf("fabricModes(%q): error %v, want one: %v", tc.list, err, tc.err)
			continue
		}
		var names []string
		for _, m := range got {
			names = append(names, m.name)
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("fabricModes(%q) = %v, want %v", tc.list, names, tc.want)
		}
	}
}

// shaperPerFrame is the median over rounds of what a mode's runner CPU per
// put exceeds the reference's by, per frame its shaper read per put: the
// shaper's CPU per frame. It needs a reference without a shaper and a
// mode whose shaper read frames in every round.
func shaperPerFrame(refCPU, refFrames, cpu, frames []float64) (float64, bool) {
	if len(cpu) == 0 || len(cpu) != len(refCPU) || slices.ContainsFunc(refFrames, func(f float64) bool { return f > 0 }) {
		return 0, false
	}
	per := make([]float64, len(cpu))
	for i := range cpu {
		if frames[i] <= 0 {
			return 0, false
		}
		per[i] = (cpu[i] - refCPU[i]) / frames[i]
	}
	return results.Median(per), true
}

func TestShaperPerFrame(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		refCPU, refFrames, cpu, frames []float64
		want                           float64
		ok                             bool
	}{
		{"per round, then the median", []float64{60, 62, 70}, []float64{0, 0, 0}, []float64{90, 80, 100}, []float64{5, 4, 6}, 5, true},
		{"a reference with a shaper", []float64{60}, []float64{3}, []float64{90}, []float64{5}, 0, false},
		{"a round whose shaper read nothing", []float64{60, 60}, []float64{0, 0}, []float64{90, 70}, []float64{5, 0}, 0, false},
		{"no rounds", nil, nil, nil, nil, 0, false},
	} {
		got, ok := shaperPerFrame(tc.refCPU, tc.refFrames, tc.cpu, tc.frames)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: shaperPerFrame = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
