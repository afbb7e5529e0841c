package zookeeper

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/storetest"
)

func TestParseMntr(t *testing.T) {
	parse := func(text string) (map[string]stores.MetricValue, error) {
		return parseMntr([]byte(text), serverMetrics)
	}
	storetest.CheckParse(t, parse, 0, []storetest.ParseCase{
		{
			// The leader of a 3-node ZooKeeper 3.8.0 ensemble after 50
			// writes through a client connected to the followers.
			Name: "leader", Text: storetest.Testdata(t, "mntr-3.8.0-leader.txt"),
			Want: map[string]stores.MetricValue{
				"fsync":               {Sum: 88, Count: 104},
				"commit":              {Sum: 303, Count: 104},
				"write_latency":       {Sum: 0, Count: 0},
				"read_latency":        {Sum: 0, Count: 0},
				"election_time":       {Sum: 441, Count: 1},
				"elections":           {Value: 1},
				"proposals_committed": {Value: 104},
				"pending":             {Value: 0},
				"watchers":            {Value: 0},
				"znodes":              {Value: 56},
				"db_size":             {Value: 1434},
			},
		},
		{
			Name: "follower", Text: storetest.Testdata(t, "mntr-3.8.0-follower.txt"),
			Want: map[string]stores.MetricValue{
				"fsync":               {Sum: 49, Count: 103},
				"commit":              {Sum: 0, Count: 0},
				"write_latency":       {Sum: 491, Count: 103},
				"read_latency":        {Sum: 0, Count: 0},
				"election_time":       {Sum: 458, Count: 1},
				"elections":           {Value: 1},
				"proposals_committed": {Value: 0},
				"pending":             {Value: 0},
				"watchers":            {Value: 0},
				"znodes":              {Value: 56},
				"db_size":             {Value: 1434},
			},
		},
		{
			// ZooKeeper 3.5 has no zk_sum_ and zk_cnt_ keys: only what
			// is there is reported.
			Name: "older server",
			Text: "zk_version\t3.5.9-abc, built on 2021\nzk_avg_latency\t0\nzk_outstanding_requests\t3\nzk_znode_count\t7\nzk_sum_fsynctime\t5\n",
			Want: map[string]stores.MetricValue{"pending": {Value: 3}, "znodes": {Value: 7}},
		},
		{Name: "not serving", Text: notServing + "\n", WantErr: "not serving"},
		{Name: "not whitelisted", Text: "mntr is not executed because it is not in the whitelist.\n", WantErr: "whitelist"},
		{Name: "no mntr answer", Text: "Zookeeper version: 3.8.0\n", WantErr: "no zk_version"},
		{Name: "bad number", Text: "zk_version\t3.8.0\nzk_znode_count\tmany\n", WantErr: `bad zk_znode_count "many"`},
	})
}

func TestServerMetricsList(t *testing.T) {
	d := Driver()
	storetest.CheckServerMetricsList(t, d, []string{"fsync", "commit", "write_latency", "read_latency", "election_time", "elections",
		"proposals_committed", "pending", "watchers", "znodes", "db_size"}, []string{"elections"})
	for _, m := range d.ServerMetrics {
		if m.Kind == stores.MetricHistogram {
			t.Errorf("%s: mntr has no histograms", m.Name)
		}
	}
}

// A scrape of an address where nothing listens fails at once, and one of
// a node that accepts but never answers fails at the default timeout.
func TestScrapeFailsFast(t *testing.T) {
	s, err := NewMetricScraper([]stores.Endpoint{{Node: 1, ClientAddr: storetest.FreeAddrs(t, 1)[0]}, {Node: 2, ClientAddr: storetest.MuteAddr(t)}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		node int
		max  time.Duration
	}{{1, time.Second}, {2, scrapeTimeout + time.Second}} {
		storetest.CheckFailsWithin(t, fmt.Sprintf("scrape of n%d", tc.node), tc.max, func() error {
			_, err := s.Scrape(context.Background(), tc.node)
			return err
		})
	}
}
