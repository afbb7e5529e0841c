package plan

import (
	"fmt"
	"strings"
)

// ClientSpec is the declared connection behaviour of a workload's clients.
// A zero field means the store's client library's own default, so that a
// run measures what a service using that library sees; a scenario that
// wants aggressive settings says so. These settings change what a fault
// does to the clients more than anything else in a scenario: with gRPC
// keepalive on, grpc-go also sets TCP_USER_TIMEOUT to the keepalive
// timeout, so a connection with unacknowledged data is torn down after it
// (a partition then looks like a reset); without it, requests to a cut-off
// member wait out their own timeouts.
type ClientSpec struct {
	// KeepaliveTime is etcd's gRPC keepalive ping interval (clientv3's
	// DialKeepAliveTime); 0 is clientv3's default: no keepalive.
	KeepaliveTime Duration `json:"keepalive_time,omitempty"`
	// KeepaliveTimeout is how long a keepalive ping waits for its answer,
	// and the connections' TCP_USER_TIMEOUT; 0 is gRPC's default, 20 s.
	KeepaliveTimeout Duration `json:"keepalive_timeout,omitempty"`
	// ReconnectBackoffMax caps gRPC's reconnect backoff to a member that
	// cannot be reached; 0 is gRPC's default, 120 s (from 1 s, x1.6).
	ReconnectBackoffMax Duration `json:"reconnect_backoff_max,omitempty"`
	// SessionTimeout is the ZooKeeper session timeout the client asks for
	// (the servers clamp it to 2-20 tick times); 0 is 10 s.
	SessionTimeout Duration `json:"session_timeout,omitempty"`
	// Retries is how many times clientv3 may re-send an operation its
	// retry policy allows (reads refused as unavailable, such as "no
	// leader"; writes only when they never left the client), 25 ms apart
	// within the operation's timeout; nil is clientv3's default, 99
	// (100 attempts). 0 sends every operation once, so that a refusal
	// counts as an error instead of as latency.
	Retries *int `json:"retries,omitempty"`
	// RequireLeader makes etcd writes and linearizable reads carry
	// clientv3's require-leader metadata (what WithRequireLeader adds), so
	// that a member without a leader refuses them at once (counted as
	// unavailable) instead of holding them until a leader comes or they
	// time out. nil is clientv3's default, false: no metadata, what a
	// service using plain clientv3 sends and etcd's benchmark tool sends.
	RequireLeader *bool `json:"require_leader,omitempty"`
}

// LeaderRequired reports whether etcd requests require a leader: only
// when the scenario says require_leader = true, as clientv3 sends the
// metadata only when asked.
func (c ClientSpec) LeaderRequired() bool { return c.RequireLeader != nil && *c.RequireLeader }

// MaxRetries bounds the retries attribute.
const MaxRetries = 1000

// String describes the settings that differ from the libraries' defaults.
func (c ClientSpec) String() string {
	var parts []string
	for _, d := range []struct {
		name string
		v    Duration
	}{
		{"keepalive", c.KeepaliveTime},
		{"keepalive timeout", c.KeepaliveTimeout},
		{"reconnect backoff max", c.ReconnectBackoffMax},
		{"session timeout", c.SessionTimeout},
	} {
		if d.v > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", d.name, d.v))
		}
	}
	if c.Retries != nil {
		parts = append(parts, fmt.Sprintf("retries %d", *c.Retries))
	}
	if c.RequireLeader != nil {
		parts = append(parts, fmt.Sprintf("require leader %t", *c.RequireLeader))
	}
	if len(parts) == 0 {
		return "library defaults"
	}
	return strings.Join(parts, ", ")
}
