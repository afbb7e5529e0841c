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
// path every shaped packet takes and what runs use). It reports each run's
// throughput relative to loopback.
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
	best := func(v []float64) float64 {
		m := 0.0
		for _, x := range v {
			m = max(m, x)
		}
		return m
	}
	base := best(rps["loopback"])
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\netcd put, 1000 clients over 100 conns, 10 s closed loop; best of %d rounds\n", len(rps["loopback"]))
	fmt.Fprintln(tw, "network\tput/s\tvs loopback\t")
	for _, m := range modes {
		r := best(rps[m.name])
		fmt.Fprintf(tw, "%s\t%.0f\t%.3f\t\n", m.name, r, r/base)
		b.ReportMetric(r/base, m.name+"_ratio")
	}
	tw.Flush()
}
