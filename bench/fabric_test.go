package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
	"text/tabwriter"

	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/internal/results"
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

// BenchmarkFabricOverhead runs the same etcd put load three ways in one
// process: on loopback; with every node and the clients in network
// namespaces connected through the userspace shaper, packets on links with
// no effect written straight from the reader ("direct"); and with every
// packet queued through the shaper's per-pair scheduler ("engaged", the
// path every shaped packet takes and what runs use), interleaved over
// -rounds rounds. It reports the median throughput relative to loopback's,
// with the interval of compare's shift test.
func BenchmarkFabricOverhead(b *testing.B) {
	if err := fabric.Available(); err != nil {
		b.Skipf("needs network namespaces: %v", err)
	}
	build, diags := dsl.Load(hclparse.NewParser(), "fabric-bench.hcl", []byte(fabricScenario), dsl.VarOptions{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	modes := []struct{ name, network string }{
		{"loopback", ""},
		{"direct", runner.NetworkDirect},
		{"engaged", runner.NetworkEngaged},
	}
	rps := map[string][]float64{}
	for b.Loop() {
		for round := range max(*rounds, 1) {
			for _, m := range modes {
				ctx, cancel := context.WithTimeout(b.Context(), runTimeout)
				res, err := runner.Run(ctx, build.Plans[0], runner.Options{StateDir: b.TempDir(), Network: m.network})
				cancel()
				if err != nil {
					b.Fatalf("%s: %v", m.name, err)
				}
				p, _ := res.Phase("load")
				rps[m.name] = append(rps[m.name], p.Total.Throughput)
				b.Logf("round %d %-10s %.0f put/s, p99 %.1f ms", round+1, m.name, p.Total.Throughput, p.Total.Latency.P99MS)
			}
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\netcd put, 1000 clients over 100 conns, 10 s closed loop; %d interleaved rounds; ratio of the medians to loopback's with its %.0f%% interval\n",
		len(rps["loopback"]), 100*(1-ratioAlpha))
	fmt.Fprintln(tw, "network\tmedian put/s\tvs loopback [95%]\t")
	for _, m := range modes {
		r := ratioOf(rps["loopback"], rps[m.name])
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t\n", m.name, results.Median(rps[m.name]), r)
		if m.name != "loopback" {
			r.report(b, m.name+"_ratio")
		}
	}
	tw.Flush()
}
