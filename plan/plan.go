package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PlanVersion is bumped whenever the JSON shape of Plan changes incompatibly.
const PlanVersion = 1

// Plan is one compiled scenario run: every value resolved, every phase and
// fault placed on one absolute timeline measured from the start of the first
// phase. A sweep compiles to one Plan per point. The runner only walks a Plan;
// it never reads HCL.
type Plan struct {
	Version  int    `json:"version"`
	Scenario string `json:"scenario"`
	// Description is the file's description attribute: what it is for.
	Description string            `json:"description,omitempty"`
	Point       []SweepValue      `json:"point,omitempty"`
	Clusters    []ClusterSpec     `json:"clusters"`
	Network     NetworkSpec       `json:"network"`
	Workloads   []WorkloadSpec    `json:"workloads"`
	Phases      []PhaseSpan       `json:"phases"`
	Events      []Event           `json:"events"`
	Checks      []CheckSpec       `json:"checks"`
	Duration    Duration          `json:"duration"`
	Variables   map[string]string `json:"variables,omitempty"`
	// Repeat is the file's repeat attribute: how many times a run plays
	// this plan, each time on a fresh cluster (0 when the file has none;
	// scenario run --repeat overrides it).
	Repeat int `json:"repeat,omitempty"`
}

// SweepValue is one coordinate of a sweep point: a variable and the value it
// took, rendered as an HCL literal.
type SweepValue struct {
	Variable string `json:"variable"`
	Value    string `json:"value"`
}

// Store names.
const (
	StoreEtcd      = "etcd"
	StoreZooKeeper = "zookeeper"
	StoreConsul    = "consul"
)

// Provider names.
const (
	ProviderProcess    = "process"
	ProviderDocker     = "docker"
	ProviderKubernetes = "kubernetes"
)

// Providers are every provider's name, in the order messages list them.
var Providers = []string{ProviderProcess, ProviderDocker, ProviderKubernetes}

// ClusterSpec is a resolved cluster block.
type ClusterSpec struct {
	Name      string   `json:"name"`
	Store     string   `json:"store"`
	Version   string   `json:"version"`
	Nodes     int      `json:"nodes"`
	Placement []string `json:"placement"` // region of node i+1; always len == Nodes
	Provider  string   `json:"provider"`
	Binary    string   `json:"binary,omitempty"`
	Image     string   `json:"image,omitempty"`
	// ReadyTimeout bounds how long the cluster may take to elect a leader.
	ReadyTimeout Duration `json:"ready_timeout"`

	Etcd      *EtcdKnobs      `json:"etcd,omitempty"`
	ZooKeeper *ZooKeeperKnobs `json:"zookeeper,omitempty"`
	Consul    *ConsulKnobs    `json:"consul,omitempty"`

	// Kubernetes places the cluster's pods, when it runs on the
	// kubernetes provider.
	Kubernetes *KubernetesSpec `json:"kubernetes,omitempty"`
}

// DefaultRegionLabel is the node label a region is matched against when a
// kubernetes block maps regions and names no label.
const DefaultRegionLabel = "topology.kubernetes.io/region"

// KubernetesSpec is a cluster's kubernetes block.
type KubernetesSpec struct {
	// StorageClass puts each member's data on a PersistentVolumeClaim of
	// this class (StorageSize each) instead of an emptyDir.
	StorageClass string `json:"storage_class,omitempty"`
	StorageSize  string `json:"storage_size,omitempty"`
	// RegionLabel is the node label a region's value is matched against.
	RegionLabel string `json:"region_label,omitempty"`
	// Regions maps the scenario's regions to values of RegionLabel; a
	// region not in it is matched by its own name.
	Regions map[string]string `json:"regions,omitempty"`
}

// NodeName is the name of node i (1-based), the same in every store.
func NodeName(i int) string { return fmt.Sprintf("n%d", i) }

// NodeHost names node i (1-based) of cluster on the network, in logs and
// in results' network pairs: its NodeName, prefixed with its cluster's name
// when the plan has several.
func (p *Plan) NodeHost(cluster string, i int) string {
	if len(p.Clusters) > 1 {
		return cluster + "-" + NodeName(i)
	}
	return NodeName(i)
}

// ClientHost names the network host of the clients in region r.
func ClientHost(r string) string { return "client-" + r }

// ClientRegions lists the regions of the plan's workloads, each once, in
// the order the workloads name them: one client host each (ClientHost).
func (p *Plan) ClientRegions() []string {
	var out []string
	for _, w := range p.Workloads {
		if !slices.Contains(out, w.Region) {
			out = append(out, w.Region)
		}
	}
	return out
}

// WorkerHost names load worker i (0-based) of workload w with the
// kubernetes provider: its pod and, with a network fabric, its host.
func WorkerHost(w string, i int) string { return fmt.Sprintf("wk-%s-%d", w, i+1) }

// WorkerCount is how many load workers share w with the kubernetes
// provider: one unless it says more.
func (w WorkloadSpec) WorkerCount() int { return max(w.Workers, 1) }

// EtcdKnobs are etcd server flags. A zero value means "the store's default".
type EtcdKnobs struct {
	HeartbeatInterval       Duration `json:"heartbeat_interval,omitempty"`
	ElectionTimeout         Duration `json:"election_timeout,omitempty"`
	SnapshotCount           int64    `json:"snapshot_count,omitempty"`
	QuotaBackendBytes       int64    `json:"quota_backend_bytes,omitempty"`
	MaxRequestBytes         int64    `json:"max_request_bytes,omitempty"`
	AutoCompactionMode      string   `json:"auto_compaction_mode,omitempty"`
	AutoCompactionRetention string   `json:"auto_compaction_retention,omitempty"`
}

// ZooKeeperKnobs are zoo.cfg settings and the JVM heap. Zero means default.
type ZooKeeperKnobs struct {
	TickTime       Duration `json:"tick_time,omitempty"`
	InitLimit      int      `json:"init_limit,omitempty"`
	SyncLimit      int      `json:"sync_limit,omitempty"`
	SnapCount      int64    `json:"snap_count,omitempty"`
	MaxClientCnxns int      `json:"max_client_cnxns,omitempty"`
	JVMHeap        int64    `json:"jvm_heap,omitempty"`
}

// ConsulKnobs are Consul server performance and raft settings. Zero means default.
type ConsulKnobs struct {
	RaftMultiplier        int      `json:"raft_multiplier,omitempty"`
	HeartbeatTimeout      Duration `json:"heartbeat_timeout,omitempty"`
	ElectionTimeout       Duration `json:"election_timeout,omitempty"`
	LeaderLeaseTimeout    Duration `json:"leader_lease_timeout,omitempty"`
	RaftSnapshotThreshold int64    `json:"raft_snapshot_threshold,omitempty"`
	RaftSnapshotInterval  Duration `json:"raft_snapshot_interval,omitempty"`
}

// NetworkSpec is the declared fabric between regions.
type NetworkSpec struct {
	// Default shapes every pair of hosts in two different regions that no
	// link names.
	Default LinkSpec `json:"default"`
	// Within shapes every pair of hosts in one region that no link naming
	// the region twice (link "a" "a") covers; unshaped unless declared.
	Within LinkSpec   `json:"within"`
	Links  []LinkSpec `json:"links,omitempty"`
}

// Shaping is what a path does to traffic, as a scenario declares it for a
// link or a network fault: RTT is a round trip (fabric.OneWay turns it into
// each direction's shaping).
type Shaping struct {
	RTT       Duration `json:"rtt,omitempty"`
	Jitter    Duration `json:"jitter,omitempty"`
	Loss      float64  `json:"loss,omitempty"`      // percent, 0..100
	Bandwidth int64    `json:"bandwidth,omitempty"` // bits per second, 0 = unlimited
}

// ShapingParams names Shaping's parameters as the language spells them.
var ShapingParams = []string{"rtt", "jitter", "loss", "bandwidth"}

// Shaped reports whether the shaping changes traffic at all.
func (s Shaping) Shaped() bool {
	return s.RTT > 0 || s.Jitter > 0 || s.Loss > 0 || s.Bandwidth > 0
}

// Over returns s with every parameter that o sets replaced by o's: a
// network fault over a declared link keeps what it does not change.
func (s Shaping) Over(o Shaping) Shaping {
	if o.RTT > 0 {
		s.RTT = o.RTT
	}
	if o.Jitter > 0 {
		s.Jitter = o.Jitter
	}
	if o.Loss > 0 {
		s.Loss = o.Loss
	}
	if o.Bandwidth > 0 {
		s.Bandwidth = o.Bandwidth
	}
	return s
}

// LinkSpec shapes the path between two regions, in both directions.
type LinkSpec struct {
	A string `json:"a,omitempty"`
	B string `json:"b,omitempty"`
	Shaping
}

// Shaped reports whether any path in the network is shaped.
func (n NetworkSpec) Shaped() bool {
	if n.Default.Shaped() || n.Within.Shaped() {
		return true
	}
	for _, l := range n.Links {
		if l.Shaped() {
			return true
		}
	}
	return false
}

// Operation kinds a workload mix can name.
const (
	OpPut    = "put"
	OpGet    = "get"
	OpDelete = "delete"
	OpRange  = "range"
	OpTxn    = "txn"
)

// AllOps lists every operation kind in canonical order.
var AllOps = []string{OpPut, OpGet, OpDelete, OpRange, OpTxn}

// OpWeight is one entry of a workload's operation mix. Weights sum to 1.
type OpWeight struct {
	Op     string  `json:"op"`
	Weight float64 `json:"weight"`
}

// Key distributions.
const (
	DistSequential = "sequential"
	DistUniform    = "uniform"
	DistZipfian    = "zipfian"
)

// WorkloadSpec is a resolved workload block.
type WorkloadSpec struct {
	Name         string     `json:"name"`
	Cluster      string     `json:"cluster"`
	Region       string     `json:"region"`
	Mix          []OpWeight `json:"mix"` // canonical op order
	Consistency  string     `json:"consistency"`
	KeySize      int        `json:"key_size"`
	ValueSize    int        `json:"value_size"`
	Keyspace     int64      `json:"keyspace"`
	KeyPrefix    string     `json:"key_prefix"`
	Distribution string     `json:"distribution"`
	ZipfS        float64    `json:"zipf_s,omitempty"`
	Seed         int64      `json:"seed"`
	Clients      int        `json:"clients"`
	Conns        int        `json:"conns"`
	Timeout      Duration   `json:"timeout"`
	RangeLimit   int        `json:"range_limit,omitempty"`
	Preload      bool       `json:"preload"`
	// Endpoints is which members the clients connect to: EndpointsAll
	// ("" too) or EndpointsLocal.
	Endpoints string `json:"endpoints,omitempty"`
	// Client is the clients' declared connection behaviour; zero fields
	// are the client library's defaults.
	Client ClientSpec `json:"client"`
	// Workers is how many load workers share the workload's clients and
	// rate with the kubernetes provider, each in a pod of its own; 0
	// means one. Other providers run the workload in the runner.
	Workers int `json:"workers,omitempty"`
	// Registry makes the workload a service registry instead of a mix of
	// key-value operations (Mix is then empty).
	Registry *RegistrySpec `json:"registry,omitempty"`
	// Lock makes the workload contenders for one lock.
	Lock *LockSpec `json:"lock,omitempty"`
	// Watches makes the workload hold many watches.
	Watches *WatchesSpec `json:"watches,omitempty"`
	// Watchers, on a key-value workload, is how many consumers watch its
	// keys (its whole key prefix) with their values, as configuration is
	// pushed: each told of new values (ops notify and fanout).
	Watchers int `json:"watchers,omitempty"`
}

// Workload endpoint choices.
const (
	EndpointsAll   = "all"   // every member, as a client configured with the whole cluster
	EndpointsLocal = "local" // the members in the clients' region (all if none is there)
)

// Writes reports whether the workload's mix includes writes.
func (w WorkloadSpec) Writes() bool {
	for _, m := range w.Mix {
		if m.Op == OpPut || m.Op == OpDelete || m.Op == OpTxn {
			return true
		}
	}
	return false
}

// PhaseSpan places a phase on the timeline.
type PhaseSpan struct {
	Name     string   `json:"name"`
	Start    Duration `json:"start"`
	Duration Duration `json:"duration"`
}

// End is when the phase ends, from the start of the run.
func (p PhaseSpan) End() Duration { return p.Start + p.Duration }

// Event kinds. Events that share an offset are ordered: fault recoveries,
// the phase end, the next phase start, its loads, then fault injections (a
// restart's recovery at its own injection's offset comes right after it).
const (
	EventPhaseStart   = "phase_start"
	EventLoad         = "load"
	EventFaultInject  = "fault_inject"
	EventFaultRecover = "fault_recover"
	EventPhaseEnd     = "phase_end"
)

// Event is one step on the timeline. At is measured from the start of the run.
// Exactly one of Load and Fault is set for load and fault events.
type Event struct {
	At    Duration   `json:"at"`
	Phase string     `json:"phase"`
	Kind  string     `json:"kind"`
	Load  *LoadSpec  `json:"load,omitempty"`
	Fault *FaultSpec `json:"fault,omitempty"`
}

// Load modes.
const (
	LoadClosed = "closed" // N clients, each sends when its previous op returned
	LoadOpen   = "open"   // arrivals at a rate, independent of responses
)

// LoadSpec is what one workload does during one phase, for Duration from the
// event's offset. A ramp goes linearly from From to To over Duration; a
// constant load has From == To.
type LoadSpec struct {
	Workload    string   `json:"workload"`
	Mode        string   `json:"mode"`
	ClientsFrom int      `json:"clients_from,omitempty"`
	ClientsTo   int      `json:"clients_to,omitempty"`
	RateFrom    float64  `json:"rate_from,omitempty"`
	RateTo      float64  `json:"rate_to,omitempty"`
	Duration    Duration `json:"duration"`
}

// Target kinds: which nodes a fault acts on, resolved when it fires.
const (
	TargetLeader   = "leader"
	TargetFollower = "follower"
	TargetMinority = "minority"
	TargetMajority = "majority"
	TargetRandom   = "random"
	TargetAll      = "all"
	TargetNodes    = "nodes"
	TargetRegion   = "region"
)

// TargetSpec selects nodes of a cluster.
type TargetSpec struct {
	Kind   string `json:"kind"`
	Nodes  []int  `json:"nodes,omitempty"` // 1-based, for TargetNodes
	Region string `json:"region,omitempty"`
	Seed   int64  `json:"seed,omitempty"` // for random and follower choice
}

// FaultSpec is one occurrence of a fault. A repeating fault compiles to one
// FaultSpec per occurrence, each with its own ID.
type FaultSpec struct {
	ID       string     `json:"id"`   // unique in the plan: "<phase>/<name>" plus "#k" for repeats
	Name     string     `json:"name"` // user's name, or the kind
	Kind     string     `json:"kind"`
	Cluster  string     `json:"cluster"`
	Target   TargetSpec `json:"target"`
	Start    Duration   `json:"start"`    // absolute
	Duration Duration   `json:"duration"` // 0: instantaneous, nothing to recover

	Network      *NetworkEffect `json:"network,omitempty"`
	Partition    *PartitionSpec `json:"partition,omitempty"`
	RestartAfter Duration       `json:"restart_after,omitempty"` // kill and stop: restart after this long (0: stay down)
	Disk         *DiskSpec      `json:"disk,omitempty"`
	Vanish       *VanishSpec    `json:"vanish,omitempty"`
	// Workload, on a pause fault, pauses that lock workload's holder (its
	// connections) instead of nodes.
	Workload string `json:"workload,omitempty"`
}

// NetworkEffect replaces the shaping of the links it names while it lasts.
// Between names two regions; empty Between with a node target shapes every
// path to and from the targeted nodes; neither shapes every link.
type NetworkEffect struct {
	Between []string `json:"between,omitempty"`
	Shaping
}

// Partition directions, relative to the first group (or the target).
const (
	DirectionBoth = "both"
	DirectionTo   = "to"   // traffic into the first group is dropped
	DirectionFrom = "from" // traffic out of the first group is dropped
)

// Partition modes.
const (
	PartitionDrop   = "drop"
	PartitionReject = "reject"
)

// PartitionSpec cuts traffic between groups. With no Groups, the fault's
// target is isolated from every other host.
type PartitionSpec struct {
	Groups    [][]Member `json:"groups,omitempty"`
	Direction string     `json:"direction"`
	// Mode is what the cut does to a packet: PartitionDrop (a cable cut,
	// a firewall's DROP: the sender hears nothing) or PartitionReject
	// (a firewall's REJECT: TCP gets a reset, anything else an ICMP port
	// unreachable).
	Mode string `json:"mode"`
}

// Member of a partition group: a region (all its nodes and clients) or a node.
type Member struct {
	Region string `json:"region,omitempty"`
	Node   int    `json:"node,omitempty"`
}

// DiskSpec is a competing writer on a node's data filesystem.
type DiskSpec struct {
	Rate        int64 `json:"rate,omitempty"` // bytes per second; 0 = unlimited
	BlockSize   int64 `json:"block_size"`
	Fsync       bool  `json:"fsync"`
	Parallelism int   `json:"parallelism"` // competing writers per node; 0 with Throttle only
	// Throttle limits the node's own writes to this many bytes per second
	// on its data directory's device (cgroup v1 blkio); 0 = no throttle.
	Throttle int64 `json:"throttle,omitempty"`
}

// CheckSpec is a check to evaluate after the run. Condition is HCL source,
// re-parsed at evaluation so that saved results can be re-checked offline.
type CheckSpec struct {
	Name        string   `json:"name"`
	Condition   string   `json:"condition"`
	Message     string   `json:"message,omitempty"`
	AbortOnFail bool     `json:"abort_on_fail,omitempty"`
	Pos         Pos      `json:"pos"`
	Refs        []string `json:"refs"` // metric paths the condition reads, e.g. phase.steady.put.p99
}

// Pos is a source position, for reports that point back into the file.
type Pos struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column) }

// Duration is a time.Duration that encodes as "250ms" in JSON.
type Duration time.Duration

// D converts to time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON encodes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"250ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Metric units used by checks and results: latencies and durations are
// numbers of milliseconds, throughput is operations per second, rates and
// availability are fractions in [0, 1].
const (
	// Per-operation statistics: phase.<phase>.<op>.<stat>.
	StatCount      = "count"
	StatThroughput = "throughput"
	StatP50        = "p50"
	StatP90        = "p90"
	StatP99        = "p99"
	StatP999       = "p999"
	StatMax        = "max"
	StatMin        = "min"
	StatMean       = "mean"
	StatErrors     = "errors"
	StatErrorRate  = "error_rate"
)

// OpStats lists the statistics available for each operation of a phase.
var OpStats = []string{StatCount, StatThroughput, StatP50, StatP90, StatP99, StatP999, StatMax, StatMin, StatMean, StatErrors, StatErrorRate}

// Phase-wide metrics: phase.<phase>.<metric>. Also under run.<metric> for the
// whole run.
const (
	MetricAvailability   = "availability"        // request-based: successful / attempted
	MetricTimeAvail      = "time_availability"   // time-based: share of the time not in write gaps of 1 s or more
	MetricMaxGap         = "max_gap"             // longest time without a successful write, ms
	MetricFailoverTime   = "failover_time"       // worst time from a fault to the first successful write after it, ms
	MetricLeaderElect    = "leader_elected"      // worst time from a fault to a new leader, ms
	MetricRejoin         = "rejoin_time"         // worst time from a fault's undoing until the members it took away answer clients again, ms
	MetricElections      = "elections"           // leader changes seen
	MetricNoLeader       = "no_leader_time"      // time without a leader, ms
	MetricLeaderUnknown  = "leader_unknown_time" // time no node answered the leader poll, ms
	MetricLateStarts     = "late_starts"         // open-loop sends that started after their intended time
	MetricLateShare      = "late_start_share"    // late_starts over the ops counted: how far the offered load fell short
	MetricLateQueued     = "late_queued"         // of late_starts, those that waited for a client (all were busy); the rest waited for a CPU
	MetricWriteFloor     = "write_floor"         // the put latency the declared links allow the leader in office, ms
	MetricFloorExcess    = "floor_excess"        // put p50 over write_floor, minus 1: 0.04 is 4% above the floor
	MetricStealShare     = "steal_share"         // share of the machine's CPU time its hypervisor withheld
	MetricCPUWait        = "cpu_wait_share"      // share of the time some runnable task on the machine waited for a CPU
	MetricRunnerWait     = "runner_wait_share"   // share of the CPU time the runner's threads wanted that they waited for
	MetricNetworkDrops   = "network_drops"       // frames the network fabric lost that no link declared (its queues overran)
	MetricNetworkFrames  = "network_frames"      // frames the shaper read (what network_drops is a share of)
	MetricNetworkLateP99 = "network_late_p99_ms" // how late the shaper handed on the 99th percentile of the packets it held, past their due time, ms
	MetricNetworkLateMax = "network_late_max_ms" // the latest of them, ms
	MetricNetworkPair    = "network_pair"        // <from>.<to>.<stat>: one ordered pair of hosts through the shaper (PairStats)
)

// Statistics of one ordered pair of hosts the shaper carried:
// <scope>.network_pair.<from>.<to>.<stat>.
const (
	PairPackets   = "packets"     // handed on to the destination
	PairLost      = "lost"        // dropped by the link's declared loss
	PairCut       = "cut"         // dropped while the link was down (a partition)
	PairDropped   = "dropped"     // dropped where no link declared it (a full queue, a refusing device)
	PairLostShare = "lost_share"  // lost over the packets not cut: the loss the link showed, to set beside the declared one
	PairLateP99   = "late_p99_ms" // how late the shaper handed on the 99th percentile of the pair's held packets, ms
	PairLateMax   = "late_max_ms" // the latest of them, ms
)

// PairStats lists the statistics of a network pair.
var PairStats = []string{PairPackets, PairLost, PairCut, PairDropped, PairLostShare, PairLateP99, PairLateMax}

// PhaseStats lists the phase-wide metrics (besides the per-op ones, which are
// also aggregated over all ops under the same names).
var PhaseStats = []string{StatCount, StatThroughput, StatErrors, StatErrorRate, MetricAvailability, MetricTimeAvail, MetricMaxGap, MetricFailoverTime, MetricLeaderElect, MetricRejoin, MetricElections, MetricNoLeader, MetricLeaderUnknown, MetricLateStarts, MetricLateShare, MetricLateQueued, MetricWriteFloor, MetricFloorExcess, MetricStealShare, MetricCPUWait, MetricRunnerWait, MetricNetworkDrops, MetricNetworkFrames, MetricNetworkLateP99, MetricNetworkLateMax}

// Error classes. Every failed operation falls in exactly one.
const (
	ErrTimeout     = "timeout"
	ErrUnavailable = "unavailable" // no leader, not enough members, store says try later
	ErrConnection  = "connection"  // refused, reset, closed
	ErrOther       = "other"
)

// ErrorClasses lists the error classes: phase.<phase>.errors_by.<class>.
var ErrorClasses = []string{ErrTimeout, ErrUnavailable, ErrConnection, ErrOther}

// Run-wide correctness metrics: run.<metric>.
const (
	MetricLinearizable = "linearizable" // bool: true only when the checker proved it
	MetricLostWrites   = "lost_writes"  // acknowledged writes not read back after the run
	// MetricWatchOK is true when every registry watcher saw what its
	// store's watch semantics promise (runner/checker.CheckWatches).
	MetricWatchOK = "watch_ok"
)

// String renders the target for plans and logs.
func (t TargetSpec) String() string {
	switch t.Kind {
	case TargetNodes:
		parts := make([]string, len(t.Nodes))
		for i, n := range t.Nodes {
			parts[i] = NodeName(n)
		}
		return strings.Join(parts, ",")
	case TargetRegion:
		return "region " + t.Region
	case TargetRandom:
		return fmt.Sprintf("random(seed %d)", t.Seed)
	case "":
		return "-"
	}
	return t.Kind
}
