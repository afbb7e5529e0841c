package consul

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// Ports a node uses when it has an IP address of its own (the runner's
// network namespaces). On loopback every node gets free ports instead.
const (
	HTTPPort    = 8500 // HTTP API: Endpoint.ClientAddr
	ServerPort  = 8300 // server RPC and raft: Endpoint.PeerAddr
	SerfLANPort = 8301 // Serf LAN gossip, TCP and UDP: Endpoint.Extra[0]
)

// ConfigFile is the name of the config file Args writes into a node's data
// directory.
const ConfigFile = "scenario.json"

// prometheusRetention is the agents' telemetry.prometheus_retention_time
// (see agentConfig).
const prometheusRetention = "744h"

// Raft timing as Consul derives it (v1.20.2, read from
// agent/config/builder.go, default.go and agent/agent.go):
//
//	heartbeat_timeout    = consul.raft.heartbeat_timeout    x performance.raft_multiplier
//	election_timeout     = consul.raft.election_timeout     x performance.raft_multiplier
//	leader_lease_timeout = consul.raft.leader_lease_timeout x performance.raft_multiplier
//
// The consul.raft block is accepted in a config file (it is no "invalid
// config key"), but the builder merges DefaultConsulSource, which sets all
// three to hashicorp/raft's defaults (1 s, 1 s, 500 ms), into the tail of
// the sources, after every config file, -hcl snippet and flag. Only -dev
// merges DevConsulSource (52 ms / 35 ms / 20 ms) after that. So outside dev
// mode the block is silently overwritten, and the only knob that changes
// raft timing is raft_multiplier (1..10, default 5): the timeouts are whole
// multiples of 1 s, 1 s and 500 ms. A dev-mode agent keeps its data in
// memory, so it cannot stand in for a server here.
const (
	baseHeartbeatTimeout   = time.Second
	baseElectionTimeout    = time.Second
	baseLeaderLeaseTimeout = 500 * time.Millisecond

	defaultRaftMultiplier = 5
	maxRaftMultiplier     = 10
)

// Timing is the raft timing a Consul server runs with.
type Timing struct {
	RaftMultiplier     int
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// Explicit says that the knobs chose a multiplier; otherwise Consul's
	// default applies and the config file does not mention it.
	Explicit bool
}

// electionWindow is twice the heartbeat timeout: hashicorp/raft draws a
// follower's from [timeout, 2 x timeout) before it campaigns.
func electionWindow(c plan.ClusterSpec) time.Duration {
	t, err := RaftTiming(c.Consul)
	if err != nil { // refused when the file was checked
		return 2 * defaultRaftMultiplier * baseHeartbeatTimeout
	}
	return 2 * t.HeartbeatTimeout
}

// RaftTiming works out the raft multiplier that gives the timing k asks
// for. Since Consul only scales fixed bases (see above), a heartbeat or
// election timeout must be a whole number of seconds from 1 s to 10 s, a
// leader lease a multiple of 500 ms up to 5 s, and every knob that is set
// must imply the same multiplier, raft_multiplier included. Anything else
// is an error that says which values would work, rather than a config
// Consul would quietly run differently.
func RaftTiming(k *plan.ConsulKnobs) (Timing, error) {
	t := Timing{RaftMultiplier: defaultRaftMultiplier}
	var from string // which knob chose the multiplier
	choose := func(name string, m int) error {
		if from != "" && m != t.RaftMultiplier {
			return fmt.Errorf("consul %s implies raft_multiplier %d but %s implies %d: Consul scales heartbeat 1s, election 1s and leader lease 500ms by one multiplier", name, m, from, t.RaftMultiplier)
		}
		t.RaftMultiplier, t.Explicit, from = m, true, name
		return nil
	}
	if k != nil {
		if k.RaftMultiplier != 0 {
			if k.RaftMultiplier < 1 || k.RaftMultiplier > maxRaftMultiplier {
				return Timing{}, fmt.Errorf("consul raft_multiplier %d: want 1 to %d", k.RaftMultiplier, maxRaftMultiplier)
			}
			_ = choose("raft_multiplier", k.RaftMultiplier)
		}
		for _, knob := range []struct {
			name string
			v    plan.Duration
			base time.Duration
		}{
			{"heartbeat_timeout", k.HeartbeatTimeout, baseHeartbeatTimeout},
			{"election_timeout", k.ElectionTimeout, baseElectionTimeout},
			{"leader_lease_timeout", k.LeaderLeaseTimeout, baseLeaderLeaseTimeout},
		} {
			if knob.v == 0 {
				continue
			}
			d := knob.v.D()
			if d < 0 || d%knob.base != 0 || d/knob.base > maxRaftMultiplier {
				return Timing{}, fmt.Errorf("consul %s %s: Consul %s can only be a multiple of %s from %s to %s, set through raft_multiplier (its consul.raft settings are overwritten outside dev mode)",
					knob.name, d, knob.name, knob.base, knob.base, maxRaftMultiplier*knob.base)
			}
			if err := choose(knob.name, int(d/knob.base)); err != nil {
				return Timing{}, err
			}
		}
	}
	m := time.Duration(t.RaftMultiplier)
	t.HeartbeatTimeout = m * baseHeartbeatTimeout
	t.ElectionTimeout = m * baseElectionTimeout
	t.LeaderLeaseTimeout = m * baseLeaderLeaseTimeout
	return t, nil
}

// agentConfig is the config file every node gets. Pointers and omitempty
// leave a knob that was not set out of the file, so Consul's own default
// applies.
type agentConfig struct {
	Datacenter string `json:"datacenter"`
	// A node id derived from the host would be the same for every node on
	// one machine and the servers would refuse each other; a random id is
	// written to the data dir and kept across restarts.
	DisableHostNodeID bool `json:"disable_host_node_id"`
	// No calls to checkpoint-api.hashicorp.com (CHECKPOINT_DISABLE cannot
	// be passed as a flag).
	DisableUpdateCheck bool `json:"disable_update_check"`
	// A killed or interrupted server must stay a member, so that a restart
	// with the same data dir rejoins as the same raft voter (this is a
	// server's default; spelled out because faults depend on it).
	LeaveOnTerminate     bool `json:"leave_on_terminate"`
	SkipLeaveOnInterrupt bool `json:"skip_leave_on_interrupt"`
	// The first join attempt fails for every node that starts before its
	// peers listen; the default 30 s between attempts would then dominate
	// cluster startup.
	RetryInterval string      `json:"retry_interval"`
	UIConfig      enabledOnly `json:"ui_config"`
	// Connect (service mesh CA) and cluster peering make a new leader do
	// extra raft writes and run background loops that a KV workload
	// never uses; they would only add noise to failover measurements.
	Connect enabledOnly `json:"connect"`
	Peering enabledOnly `json:"peering"`
	Ports   portsConfig `json:"ports"`
	Limits  struct {
		// Consul allows 200 concurrent HTTP connections per client IP by
		// default and answers further ones with a 429 and a close;
		// every workload client shares the runner's address, so a load
		// of a few hundred clients would fail as connection errors
		// (seen here: 300 clients on one server lost 10% of their
		// puts). 0 is no limit.
		HTTPMaxConnsPerClient int `json:"http_max_conns_per_client"`
	} `json:"limits"`
	Performance struct {
		RaftMultiplier int `json:"raft_multiplier,omitempty"`
	} `json:"performance"`
	RaftSnapshotThreshold int64  `json:"raft_snapshot_threshold,omitempty"`
	RaftSnapshotInterval  string `json:"raft_snapshot_interval,omitempty"`
	Telemetry             struct {
		// A positive retention turns on /v1/agent/metrics?format=prometheus,
		// which the runner scrapes (see MetricScraper). go-metrics drops a
		// series created at run time (a timer such as
		// raft.leader.dispatchLog, unlike the ones Consul declares up
		// front) once it has not changed for this long, and starts it from
		// zero when it comes back, which would break the cumulative
		// counts the runner takes differences of: so a month, longer than
		// any run.
		PrometheusRetentionTime string `json:"prometheus_retention_time"`
		// Otherwise gauges are named after the machine's host name.
		DisableHostname bool `json:"disable_hostname"`
	} `json:"telemetry"`
}

type enabledOnly struct {
	Enabled bool `json:"enabled"`
}

// portsConfig sets every listener; -1 turns one off. The three in use are
// also passed as flags, which win over the file; the file keeps them so it
// reads as the node's whole network setup. The rest are off: nothing here
// uses them, and on one address they would collide between nodes (Consul
// 1.20 even opens a server's gRPC TLS port, 8503, unless grpc_tls is set).
type portsConfig struct {
	HTTP    int `json:"http"`
	Server  int `json:"server"`
	SerfLAN int `json:"serf_lan"`
	SerfWAN int `json:"serf_wan"`
	DNS     int `json:"dns"`
	HTTPS   int `json:"https"`
	GRPC    int `json:"grpc"`
	GRPCTLS int `json:"grpc_tls"`
}

// nodeAddrs are the addresses one node binds, checked.
type nodeAddrs struct {
	ip                             netip.Addr // bind and advertise: raft, RPC, Serf LAN
	clientIP                       netip.Addr // HTTP API
	httpPort, serverPort, serfPort int
}

// Args writes node's config file into dataDir (creating it) and returns the
// arguments, after the binary, that start node (1-based) of cluster c as a
// Consul server whose members are eps. Knobs left at zero in c.Consul keep
// Consul's defaults. The same arguments restart the node: with its data dir
// in place it rejoins as the same server.
func Args(c plan.ClusterSpec, node int, eps []stores.Endpoint, dataDir string) ([]string, error) {
	members := slices.Clone(eps)
	slices.SortFunc(members, func(a, b stores.Endpoint) int { return cmp.Compare(a.Node, b.Node) })
	var self *nodeAddrs
	var join []string
	for _, ep := range members {
		a, err := endpointAddrs(ep)
		if err != nil {
			return nil, fmt.Errorf("consul %s: %w", plan.NodeName(ep.Node), err)
		}
		if ep.Node == node {
			self = &a
			continue
		}
		join = append(join, ep.Extra[0])
	}
	if self == nil {
		return nil, fmt.Errorf("consul: node %d is not among the %d endpoints", node, len(eps))
	}
	timing, err := RaftTiming(c.Consul)
	if err != nil {
		return nil, err
	}
	cfg := renderConfig(c.Consul, timing, *self)
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("consul config: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("consul %s data dir: %w", plan.NodeName(node), err)
	}
	cfgPath := filepath.Join(dataDir, ConfigFile)
	if err := os.WriteFile(cfgPath, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("consul %s config: %w", plan.NodeName(node), err)
	}

	ip, client := self.ip.String(), self.clientIP.String()
	args := []string{
		"agent",
		"-server",
		"-bootstrap-expect=" + strconv.Itoa(len(members)),
		"-node=" + plan.NodeName(node),
		"-data-dir=" + dataDir,
		"-config-file=" + cfgPath,
		"-bind=" + ip,
		"-advertise=" + ip,
		"-client=" + client,
		"-http-port=" + strconv.Itoa(self.httpPort),
		"-server-port=" + strconv.Itoa(self.serverPort),
		"-serf-lan-port=" + strconv.Itoa(self.serfPort),
		// No gossip encryption, so no keyring file to go stale between
		// runs.
		"-disable-keyring-file",
		// Consul logs to stdout; info keeps elections and leader changes.
		"-log-level=info",
	}
	for _, j := range join {
		args = append(args, "-retry-join="+j)
	}
	return args, nil
}

// renderConfig is the config file of a node bound at a.
func renderConfig(k *plan.ConsulKnobs, t Timing, a nodeAddrs) agentConfig {
	cfg := agentConfig{
		Datacenter:           "dc1",
		DisableHostNodeID:    true,
		DisableUpdateCheck:   true,
		LeaveOnTerminate:     false,
		SkipLeaveOnInterrupt: true,
		RetryInterval:        "1s",
		Ports: portsConfig{
			HTTP: a.httpPort, Server: a.serverPort, SerfLAN: a.serfPort,
			SerfWAN: -1, DNS: -1, HTTPS: -1, GRPC: -1, GRPCTLS: -1,
		},
	}
	cfg.Telemetry.PrometheusRetentionTime = prometheusRetention
	cfg.Telemetry.DisableHostname = true
	if t.Explicit {
		cfg.Performance.RaftMultiplier = t.RaftMultiplier
	}
	if k != nil {
		cfg.RaftSnapshotThreshold = k.RaftSnapshotThreshold
		if k.RaftSnapshotInterval > 0 {
			cfg.RaftSnapshotInterval = k.RaftSnapshotInterval.D().String()
		}
	}
	return cfg
}

// endpointAddrs checks that ep can be a Consul server's addresses: Consul
// binds IP addresses, not names, and advertises one address for raft, RPC
// and Serf LAN, so the peer and Serf addresses must share their IP.
func endpointAddrs(ep stores.Endpoint) (nodeAddrs, error) {
	var a nodeAddrs
	if len(ep.Extra) < 1 {
		return a, errors.New("no Serf LAN address (Endpoint.Extra[0])")
	}
	peer, err := parseIPPort("server address", ep.PeerAddr)
	if err != nil {
		return a, err
	}
	serf, err := parseIPPort("Serf LAN address", ep.Extra[0])
	if err != nil {
		return a, err
	}
	client, err := parseIPPort("HTTP address", ep.ClientAddr)
	if err != nil {
		return a, err
	}
	if peer.Addr() != serf.Addr() {
		return a, fmt.Errorf("server address %s and Serf LAN address %s must share their IP: Consul advertises one address for both", ep.PeerAddr, ep.Extra[0])
	}
	if peer == serf || client == peer || client == serf {
		return a, fmt.Errorf("HTTP %s, server %s and Serf LAN %s addresses must differ", ep.ClientAddr, ep.PeerAddr, ep.Extra[0])
	}
	return nodeAddrs{
		ip: peer.Addr(), clientIP: client.Addr(),
		httpPort: int(client.Port()), serverPort: int(peer.Port()), serfPort: int(serf.Port()),
	}, nil
}

func parseIPPort(what, s string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%s %q: %w", what, s, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" || ip.IsUnspecified() {
		return netip.AddrPort{}, fmt.Errorf("%s %q: want a specific IP address, not %q", what, s, host)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return netip.AddrPort{}, fmt.Errorf("%s %q: bad port %q", what, s, port)
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), nil
}
