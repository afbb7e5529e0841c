package etcd

import (
	"slices"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

func TestArgs(t *testing.T) {
	eps := []stores.Endpoint{
		// Out of order on purpose: --initial-cluster must not depend on it.
		{Node: 3, ClientAddr: "127.0.0.1:2379", PeerAddr: "127.0.0.1:2380"},
		{Node: 1, ClientAddr: "127.0.0.1:12379", PeerAddr: "127.0.0.1:12380"},
		{Node: 2, ClientAddr: "127.0.0.1:22379", PeerAddr: "127.0.0.1:22380"},
	}
	base := func(node int, client, peer string) []string {
		return []string{
			"--name=" + plan.NodeName(node),
			"--data-dir=/data/" + plan.NodeName(node),
			"--listen-client-urls=http://" + client,
			"--advertise-client-urls=http://" + client,
			"--listen-peer-urls=http://" + peer,
			"--initial-advertise-peer-urls=http://" + peer,
			"--initial-cluster=n1=http://127.0.0.1:12380,n2=http://127.0.0.1:22380,n3=http://127.0.0.1:2380",
			"--initial-cluster-state=new",
			"--initial-cluster-token=scenario-main",
			"--logger=zap",
			"--log-level=info",
			"--log-outputs=stderr",
		}
	}
	tests := []struct {
		name  string
		knobs *plan.EtcdKnobs
		node  int
		extra []string
	}{
		{name: "no knobs", node: 1},
		{name: "zero knobs keep defaults", knobs: &plan.EtcdKnobs{}, node: 2},
		{
			name: "every knob",
			node: 3,
			knobs: &plan.EtcdKnobs{
				HeartbeatInterval:       plan.Duration(100 * time.Millisecond),
				ElectionTimeout:         plan.Duration(1500 * time.Millisecond),
				SnapshotCount:           5000,
				QuotaBackendBytes:       8 << 30,
				MaxRequestBytes:         3 << 20,
				AutoCompactionMode:      "revision",
				AutoCompactionRetention: "1000",
			},
			extra: []string{
				"--heartbeat-interval=100",
				"--election-timeout=1500",
				"--snapshot-count=5000",
				"--quota-backend-bytes=8589934592",
				"--max-request-bytes=3145728",
				"--auto-compaction-mode=revision",
				"--auto-compaction-retention=1000",
			},
		},
		{
			name:  "sub-millisecond timing rounds up, never to etcd's default",
			node:  1,
			knobs: &plan.EtcdKnobs{HeartbeatInterval: plan.Duration(1500 * time.Microsecond), ElectionTimeout: plan.Duration(time.Second + 1)},
			extra: []string{"--heartbeat-interval=2", "--election-timeout=1001"},
		},
		{
			name:  "periodic compaction alone",
			node:  2,
			knobs: &plan.EtcdKnobs{AutoCompactionMode: "periodic", AutoCompactionRetention: "1h"},
			extra: []string{"--auto-compaction-mode=periodic", "--auto-compaction-retention=1h"},
		},
	}
	addr := map[int][2]string{}
	for _, ep := range eps {
		addr[ep.Node] = [2]string{ep.ClientAddr, ep.PeerAddr}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := plan.ClusterSpec{Name: "main", Store: plan.StoreEtcd, Version: "3.5.17", Nodes: 3, Etcd: tt.knobs}
			got := Args(c, tt.node, eps, "/data/"+plan.NodeName(tt.node))
			want := append(base(tt.node, addr[tt.node][0], addr[tt.node][1]), tt.extra...)
			if !slices.Equal(got, want) {
				t.Errorf("Args() =\n  %q\nwant\n  %q", got, want)
			}
		})
	}
}

func TestArgsDoNotDependOnVersion(t *testing.T) {
	eps := []stores.Endpoint{{Node: 1, ClientAddr: "127.0.0.1:1", PeerAddr: "127.0.0.1:2"}}
	var first []string
	for _, v := range []string{"3.4.35", "v3.5.17", "3.6.16"} {
		got := Args(plan.ClusterSpec{Name: "x", Version: v, Nodes: 1}, 1, eps, "/d")
		if first == nil {
			first = got
		} else if !slices.Equal(got, first) {
			t.Errorf("version %s: flags %q differ from %q", v, got, first)
		}
	}
}
