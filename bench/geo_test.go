package bench

import (
	"testing"

	"github.com/coordlab/scenario/runner"
)

// geoScenario is a shaped run: a 3-node etcd over three regions 20 ms
// apart, and 200 closed-loop put clients in n1's region, between which
// nothing is declared. The members' links are shaped; the clients' hop to
// n1 and the runner's observer's pairs are not.
const geoScenario = `
cluster "main" {
  store     = "etcd"
  nodes     = 3
  placement = ["r1", "r2", "r3"]
}

network {
  default { rtt = "20ms" }
}

workload "put" {
  region     = "r1"
  mix        = { put = 1 }
  key_prefix = "k"
  key_size   = 8
  value_size = 256
  keyspace   = 100000
  clients    = 200
  conns      = 20
  preload    = false
}

phase "load" {
  duration = "10s"
  load "put" {}
}
`

// BenchmarkGeoBypass runs a shaped scenario (geoScenario) as runs build
// its network, the unshaped pairs through the kernel ("bypass", what
// --network shaper does), against every pair through the shaper
// ("shaper-all", the reference: what every shaped run did before the
// bypass), in interleaved rounds as BenchmarkFabricOverhead does. It
// reports the bypass's throughput and runner CPU per put relative to
// shaper-all's, with their paired intervals.
func BenchmarkGeoBypass(b *testing.B) {
	p := fabricPlan(b, "geo-bench.hcl", geoScenario)
	defer startGCBudget(b.Context())()
	modes := []fabricMode{{"shaper-all", runner.NetworkEngaged}, {"bypass", runner.NetworkBypass}}
	rps, cpu, frames := interleaveRuns(b, p, modes)
	summarise(b, "etcd put over 3 regions 20 ms apart, 200 clients in n1's region, 10 s closed loop", modes, rps, cpu, frames)
}
