package bench

import (
	"flag"
	"fmt"
	"testing"

	"github.com/coordlab/scenario/runner"
)

// geoScenario is a shaped run: a 3-node etcd over three regions 20 ms
// apart, and closed-loop put clients in n1's region (-geo-clients, a
// connection for each ten), between which nothing is declared. The
// members' links are shaped; the clients' hop to n1 and the runner's
// observer's pairs are not.
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
  clients    = %d
  conns      = %d
  preload    = false
}

phase "load" {
  duration = "10s"
  load "put" {}
}
`

var geoClients = flag.Int("geo-clients", 200, "BenchmarkGeoBypass: closed-loop put clients (one alone measures the latency's excess over its floor without queueing)")

var geoModeList = flag.String("geo-modes", "bypass",
	"the networks BenchmarkGeoBypass compares with shaper-all (engaged), comma-separated: any of -fabric-modes' but engaged")

// BenchmarkGeoBypass runs a shaped scenario (geoScenario) as runs build
// its network, the unshaped pairs through the kernel ("bypass", what
// --network shaper does), against every pair through the shaper
// ("shaper-all", the reference: what every shaped run did before the
// bypass), in interleaved rounds as BenchmarkFabricOverhead does. It
// reports the bypass's throughput and runner CPU per put relative to
// shaper-all's, with their paired intervals, and the put p50's excess
// over the floor the links imply, round by round. -geo-modes names the
// networks beside shaper-all (any of -fabric-modes' but engaged, which it
// is).
func BenchmarkGeoBypass(b *testing.B) {
	p := fabricPlan(b, "geo-bench.hcl", fmt.Sprintf(geoScenario, *geoClients, max(1, *geoClients/10)))
	defer startGCBudget(b.Context())()
	modes, err := modesAfter(fabricMode{"shaper-all", runner.NetworkEngaged}, "-geo-modes", *geoModeList)
	if err != nil {
		b.Fatal(err)
	}
	summarise(b, fmt.Sprintf("etcd put over 3 regions 20 ms apart, %d clients in n1's region, 10 s closed loop", *geoClients), modes, interleaveRuns(b, p, modes))
}
