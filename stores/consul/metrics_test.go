package consul

import (
	"strings"
	"testing"

	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/promscrape"
	"github.com/coordlab/scenario/stores/storetest"
)

func TestParseConsulMetrics(t *testing.T) {
	storetest.CheckParse(t, parseMetrics, 1e-12, []storetest.ParseCase{
		{
			// The leader of a 3-server Consul 1.20.2 cluster after 50 KV
			// puts (trimmed to the families read, and a few others).
			Name: "leader", Text: storetest.Testdata(t, "metrics-1.20.2-leader.txt"),
			Want: map[string]stores.MetricValue{
				"fsync":               {Sum: 91.1874038875103, Count: 60},
				"commit":              {Sum: 178.37369221448898, Count: 60},
				"kv_apply":            {Sum: 156.16482239961624, Count: 50},
				"proposals_committed": {Value: 58},
				"leader_changes":      {Value: 1},
				"elections":           {Value: 1},
			},
		},
		{
			// A follower of the same cluster: the timers Consul declares
			// up front are there with zero counts, dispatchLog is not.
			Name: "follower", Text: storetest.Testdata(t, "metrics-1.20.2-follower.txt"),
			Want: map[string]stores.MetricValue{
				"fsync":               {Sum: 67.75483117997646, Count: 59},
				"commit":              {Sum: 0, Count: 0},
				"kv_apply":            {Sum: 0, Count: 0},
				"proposals_committed": {Value: 0},
				"leader_changes":      {Value: 0},
				"elections":           {Value: 0},
			},
		},
		{
			// A former leader writes its log both ways.
			Name: "fsync as leader and as follower",
			Text: `# TYPE consul_raft_leader_dispatchLog summary
consul_raft_leader_dispatchLog{quantile="0.5"} NaN
consul_raft_leader_dispatchLog_sum 10.5
consul_raft_leader_dispatchLog_count 7
# TYPE consul_raft_rpc_appendEntries_storeLogs summary
consul_raft_rpc_appendEntries_storeLogs_sum 2.25
consul_raft_rpc_appendEntries_storeLogs_count 3
`,
			Want: map[string]stores.MetricValue{"fsync": {Sum: 12.75, Count: 10}},
		},
	})
}

func parseMetrics(text string) (map[string]stores.MetricValue, error) {
	return promscrape.Parse(strings.NewReader(text), serverMetrics)
}

func TestServerMetricsList(t *testing.T) {
	d := Driver()
	storetest.CheckServerMetricsList(t, d, []string{"fsync", "commit", "kv_apply", "proposals_committed", "leader_changes", "elections"}, nil)
	for _, m := range d.ServerMetrics {
		if m.Kind == stores.MetricSummary && m.Unit != stores.UnitMillis {
			t.Errorf("%s: Consul's timers are in milliseconds, not %s", m.Name, m.Unit)
		}
	}
}
