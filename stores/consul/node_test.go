package consul

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// loopbackEps are three nodes on 127.0.0.1, out of order on purpose: the
// flags must not depend on it.
func loopbackEps() []stores.Endpoint {
	return []stores.Endpoint{
		{Node: 3, ClientAddr: "127.0.0.1:30500", PeerAddr: "127.0.0.1:30300", Extra: []string{"127.0.0.1:30301"}},
		{Node: 1, ClientAddr: "127.0.0.1:10500", PeerAddr: "127.0.0.1:10300", Extra: []string{"127.0.0.1:10301"}},
		{Node: 2, ClientAddr: "127.0.0.1:20500", PeerAddr: "127.0.0.1:20300", Extra: []string{"127.0.0.1:20301"}},
	}
}

func TestArgs(t *testing.T) {
	ownIPs := []stores.Endpoint{
		{Node: 1, ClientAddr: "10.99.0.1:8500", PeerAddr: "10.99.0.1:8300", Extra: []string{"10.99.0.1:8301"}},
		{Node: 2, ClientAddr: "10.99.0.2:8500", PeerAddr: "10.99.0.2:8300", Extra: []string{"10.99.0.2:8301"}},
		{Node: 3, ClientAddr: "10.99.0.3:8500", PeerAddr: "10.99.0.3:8300", Extra: []string{"10.99.0.3:8301"}},
	}
	tests := []struct {
		name string
		eps  []stores.Endpoint
		node int
		want []string // after "agent -server"; <data> is the data dir
	}{
		{
			name: "loopback node 1",
			eps:  loopbackEps(),
			node: 1,
			want: []string{
				"-bootstrap-expect=3", "-node=n1", "-data-dir=<data>", "-config-file=<data>/scenario.json",
				"-bind=127.0.0.1", "-advertise=127.0.0.1", "-client=127.0.0.1",
				"-http-port=10500", "-server-port=10300", "-serf-lan-port=10301",
				"-disable-keyring-file", "-log-level=info",
				"-retry-join=127.0.0.1:20301", "-retry-join=127.0.0.1:30301",
			},
		},
		{
			name: "loopback node 3",
			eps:  loopbackEps(),
			node: 3,
			want: []string{
				"-bootstrap-expect=3", "-node=n3", "-data-dir=<data>", "-config-file=<data>/scenario.json",
				"-bind=127.0.0.1", "-advertise=127.0.0.1", "-client=127.0.0.1",
				"-http-port=30500", "-server-port=30300", "-serf-lan-port=30301",
				"-disable-keyring-file", "-log-level=info",
				"-retry-join=127.0.0.1:10301", "-retry-join=127.0.0.1:20301",
			},
		},
		{
			name: "an IP per node, fixed ports",
			eps:  ownIPs,
			node: 2,
			want: []string{
				"-bootstrap-expect=3", "-node=n2", "-data-dir=<data>", "-config-file=<data>/scenario.json",
				"-bind=10.99.0.2", "-advertise=10.99.0.2", "-client=10.99.0.2",
				"-http-port=8500", "-server-port=8300", "-serf-lan-port=8301",
				"-disable-keyring-file", "-log-level=info",
				"-retry-join=10.99.0.1:8301", "-retry-join=10.99.0.3:8301",
			},
		},
		{
			name: "single node joins nobody",
			eps:  []stores.Endpoint{{Node: 1, ClientAddr: "127.0.0.1:8500", PeerAddr: "127.0.0.1:8300", Extra: []string{"127.0.0.1:8301"}}},
			node: 1,
			want: []string{
				"-bootstrap-expect=1", "-node=n1", "-data-dir=<data>", "-config-file=<data>/scenario.json",
				"-bind=127.0.0.1", "-advertise=127.0.0.1", "-client=127.0.0.1",
				"-http-port=8500", "-server-port=8300", "-serf-lan-port=8301",
				"-disable-keyring-file", "-log-level=info",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data", plan.NodeName(tt.node))
			c := plan.ClusterSpec{Name: "main", Store: plan.StoreConsul, Version: "1.20.2", Nodes: len(tt.eps)}
			got, err := Args(c, tt.node, tt.eps, data)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"agent", "-server"}
			for _, a := range tt.want {
				want = append(want, strings.ReplaceAll(a, "<data>", data))
			}
			if !slices.Equal(got, want) {
				t.Errorf("Args() =\n  %q\nwant\n  %q", got, want)
			}
			if fi, err := os.Stat(filepath.Join(data, ConfigFile)); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("config file: %v", err)
			}
		})
	}
}

func TestArgsConfigFile(t *testing.T) {
	base := map[string]any{
		"datacenter":              "dc1",
		"disable_host_node_id":    true,
		"disable_update_check":    true,
		"leave_on_terminate":      false,
		"skip_leave_on_interrupt": true,
		"retry_interval":          "1s",
		"ui_config":               map[string]any{"enabled": false},
		"connect":                 map[string]any{"enabled": false},
		"peering":                 map[string]any{"enabled": false},
		"ports": map[string]any{
			"http": 20500.0, "server": 20300.0, "serf_lan": 20301.0,
			"serf_wan": -1.0, "dns": -1.0, "https": -1.0, "grpc": -1.0, "grpc_tls": -1.0,
		},
		"limits":      map[string]any{"http_max_conns_per_client": 0.0},
		"performance": map[string]any{},
		"telemetry":   map[string]any{"prometheus_retention_time": "744h", "disable_hostname": true},
	}
	tests := []struct {
		name  string
		knobs *plan.ConsulKnobs
		extra map[string]any // top-level keys replaced or added
	}{
		{name: "no knobs"},
		{name: "zero knobs keep defaults", knobs: &plan.ConsulKnobs{}},
		{
			name:  "raft multiplier",
			knobs: &plan.ConsulKnobs{RaftMultiplier: 1},
			extra: map[string]any{"performance": map[string]any{"raft_multiplier": 1.0}},
		},
		{
			name: "timing through the multiplier, snapshots",
			knobs: &plan.ConsulKnobs{
				HeartbeatTimeout:      plan.Duration(2 * time.Second),
				ElectionTimeout:       plan.Duration(2 * time.Second),
				LeaderLeaseTimeout:    plan.Duration(time.Second),
				RaftSnapshotThreshold: 8192,
				RaftSnapshotInterval:  plan.Duration(90 * time.Second),
			},
			extra: map[string]any{
				"performance":             map[string]any{"raft_multiplier": 2.0},
				"raft_snapshot_threshold": 8192.0,
				"raft_snapshot_interval":  "1m30s",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := t.TempDir()
			c := plan.ClusterSpec{Name: "main", Store: plan.StoreConsul, Nodes: 3, Consul: tt.knobs}
			if _, err := Args(c, 2, loopbackEps(), data); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(data, ConfigFile))
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("config file is no JSON: %v\n%s", err, b)
			}
			want := map[string]any{}
			for k, v := range base {
				want[k] = v
			}
			for k, v := range tt.extra {
				want[k] = v
			}
			gotJSON, _ := json.MarshalIndent(got, "", "  ")
			wantJSON, _ := json.MarshalIndent(want, "", "  ")
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("config file =\n%s\nwant\n%s", gotJSON, wantJSON)
			}
		})
	}
}

// A restart calls Args again with the same data dir: same flags, same file.
func TestArgsRestart(t *testing.T) {
	data := t.TempDir()
	c := plan.ClusterSpec{Name: "main", Store: plan.StoreConsul, Nodes: 3, Consul: &plan.ConsulKnobs{RaftMultiplier: 3}}
	first, err := Args(c, 1, loopbackEps(), data)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(data, ConfigFile))
	// Consul's own files in the data dir are left alone.
	if err := os.WriteFile(filepath.Join(data, "node-id"), []byte("id"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := Args(c, 1, loopbackEps(), data)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(data, ConfigFile))
	if !slices.Equal(first, again) || string(before) != string(after) {
		t.Errorf("Args changed on restart:\n%q\n%q\n%s\n%s", first, again, before, after)
	}
	if b, _ := os.ReadFile(filepath.Join(data, "node-id")); string(b) != "id" {
		t.Error("Args touched the node id")
	}
}

func TestArgsErrors(t *testing.T) {
	ep := func(client, peer string, extra ...string) []stores.Endpoint {
		return []stores.Endpoint{{Node: 1, ClientAddr: client, PeerAddr: peer, Extra: extra}}
	}
	tests := []struct {
		name  string
		eps   []stores.Endpoint
		node  int
		knobs *plan.ConsulKnobs
		want  string
	}{
		{"node missing", loopbackEps(), 4, nil, "node 4 is not among"},
		{"no serf address", ep("127.0.0.1:1", "127.0.0.1:2"), 1, nil, "no Serf LAN address"},
		{"host name", ep("localhost:1", "127.0.0.1:2", "127.0.0.1:3"), 1, nil, "want a specific IP address"},
		{"unspecified", ep("127.0.0.1:1", "0.0.0.0:2", "0.0.0.0:3"), 1, nil, "want a specific IP address"},
		{"no port", ep("127.0.0.1", "127.0.0.1:2", "127.0.0.1:3"), 1, nil, "HTTP address"},
		{"port zero", ep("127.0.0.1:0", "127.0.0.1:2", "127.0.0.1:3"), 1, nil, "bad port"},
		{"serf elsewhere", ep("127.0.0.1:1", "127.0.0.1:2", "127.0.0.2:3"), 1, nil, "must share their IP"},
		{"ports collide", ep("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:2"), 1, nil, "must differ"},
		{"timing not a multiple", loopbackEps(), 1, &plan.ConsulKnobs{ElectionTimeout: plan.Duration(1500 * time.Millisecond)}, "multiple of 1s"},
		{"timing disagrees", loopbackEps(), 1, &plan.ConsulKnobs{RaftMultiplier: 1, HeartbeatTimeout: plan.Duration(3 * time.Second)}, "implies raft_multiplier 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := plan.ClusterSpec{Name: "main", Store: plan.StoreConsul, Nodes: len(tt.eps), Consul: tt.knobs}
			_, err := Args(c, tt.node, tt.eps, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Args error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	// A client address on another IP than the servers' is fine.
	c := plan.ClusterSpec{Name: "main", Store: plan.StoreConsul, Nodes: 1}
	if _, err := Args(c, 1, ep("127.0.0.2:8500", "127.0.0.1:8300", "127.0.0.1:8301"), t.TempDir()); err != nil {
		t.Errorf("client on its own IP: %v", err)
	}
}

func TestRaftTiming(t *testing.T) {
	s := func(n float64) plan.Duration { return plan.Duration(n * float64(time.Second)) }
	tests := []struct {
		name  string
		knobs *plan.ConsulKnobs
		want  Timing // zero = an error
		err   string
	}{
		{"nil: Consul's default", nil, Timing{RaftMultiplier: 5, HeartbeatTimeout: 5 * time.Second, ElectionTimeout: 5 * time.Second, LeaderLeaseTimeout: 2500 * time.Millisecond}, ""},
		{"zero knobs", &plan.ConsulKnobs{}, Timing{RaftMultiplier: 5, HeartbeatTimeout: 5 * time.Second, ElectionTimeout: 5 * time.Second, LeaderLeaseTimeout: 2500 * time.Millisecond}, ""},
		{"multiplier 1", &plan.ConsulKnobs{RaftMultiplier: 1}, Timing{RaftMultiplier: 1, HeartbeatTimeout: time.Second, ElectionTimeout: time.Second, LeaderLeaseTimeout: 500 * time.Millisecond, Explicit: true}, ""},
		{"multiplier 10", &plan.ConsulKnobs{RaftMultiplier: 10}, Timing{RaftMultiplier: 10, HeartbeatTimeout: 10 * time.Second, ElectionTimeout: 10 * time.Second, LeaderLeaseTimeout: 5 * time.Second, Explicit: true}, ""},
		{"election alone", &plan.ConsulKnobs{ElectionTimeout: s(3)}, Timing{RaftMultiplier: 3, HeartbeatTimeout: 3 * time.Second, ElectionTimeout: 3 * time.Second, LeaderLeaseTimeout: 1500 * time.Millisecond, Explicit: true}, ""},
		{"lease alone", &plan.ConsulKnobs{LeaderLeaseTimeout: s(0.5)}, Timing{RaftMultiplier: 1, HeartbeatTimeout: time.Second, ElectionTimeout: time.Second, LeaderLeaseTimeout: 500 * time.Millisecond, Explicit: true}, ""},
		{"all agree", &plan.ConsulKnobs{RaftMultiplier: 2, HeartbeatTimeout: s(2), ElectionTimeout: s(2), LeaderLeaseTimeout: s(1)}, Timing{RaftMultiplier: 2, HeartbeatTimeout: 2 * time.Second, ElectionTimeout: 2 * time.Second, LeaderLeaseTimeout: time.Second, Explicit: true}, ""},
		{"multiplier out of range", &plan.ConsulKnobs{RaftMultiplier: 11}, Timing{}, "want 1 to 10"},
		{"sub-second election", &plan.ConsulKnobs{ElectionTimeout: s(0.3)}, Timing{}, "multiple of 1s from 1s to 10s"},
		{"election too long", &plan.ConsulKnobs{ElectionTimeout: s(11)}, Timing{}, "multiple of 1s from 1s to 10s"},
		{"lease off the grid", &plan.ConsulKnobs{LeaderLeaseTimeout: s(0.7)}, Timing{}, "multiple of 500ms"},
		{"heartbeat and election differ", &plan.ConsulKnobs{HeartbeatTimeout: s(1), ElectionTimeout: s(2)}, Timing{}, "election_timeout implies raft_multiplier 2 but heartbeat_timeout implies 1"},
		{"lease disagrees with multiplier", &plan.ConsulKnobs{RaftMultiplier: 4, LeaderLeaseTimeout: s(1)}, Timing{}, "leader_lease_timeout implies raft_multiplier 2 but raft_multiplier implies 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RaftTiming(tt.knobs)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("RaftTiming = %+v, %v; want an error mentioning %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("RaftTiming = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// An address Args accepts is a specific IP and a real port, and reads back
// as itself.
func FuzzParseIPPort(f *testing.F) {
	for _, s := range []string{"127.0.0.1:8300", "[::1]:8500", "10.99.0.1:8301", "localhost:1", "0.0.0.0:1", "[fe80::1%eth0]:1", "1.2.3.4:0", "1.2.3.4:65536", "[::ffff:1.2.3.4]:5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ap, err := parseIPPort("address", s)
		if err != nil {
			if !strings.Contains(err.Error(), "address") {
				t.Fatalf("error %q does not say what was parsed", err)
			}
			return
		}
		if !ap.IsValid() || ap.Port() == 0 || ap.Addr().IsUnspecified() || ap.Addr().Zone() != "" || ap.Addr().Is4In6() {
			t.Fatalf("parseIPPort(%q) = %s", s, ap)
		}
		again, err := parseIPPort("address", ap.String())
		if err != nil || again != ap {
			t.Fatalf("parseIPPort(%q) = %s, which reads back as %s, %v", s, ap, again, err)
		}
	})
}
