// Package results defines results.json, the versioned record of one scenario
// run, and writes it in the forms people read: JSON for tools, JUnit XML for
// CI and a fixed-width summary for terminals.
//
// Every duration in the schema is a float64 number of milliseconds and its
// JSON name ends in _ms; absolute offsets (at_ms, start_ms, planned_ms...)
// are measured from the start of the first phase. A value that could not be
// measured is null rather than zero, so that a check such as p99 < 300 can
// never pass on a phase where nothing succeeded.
package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/coordlab/scenario/internal/safefile"
)

// SchemaVersion is bumped whenever results.json changes incompatibly. Adding
// a field is compatible; renaming, removing or changing a unit is not.
const SchemaVersion = 1

// FileName is the name Write gives the results file inside its directory.
const FileName = "results.json"

// JUnitFile is the name of a run's JUnit report (one test case per check)
// beside its results.
const JUnitFile = "junit.xml"

// Results is one run of one scenario (one sweep point).
type Results struct {
	// SchemaVersion is the version of this schema the file was written with.
	SchemaVersion int `json:"schema_version"`
	// RunID identifies the run; it names the run's workspace in the state
	// directory, and leftovers of a killed run are found by it.
	RunID string `json:"run_id"`
	// Scenario is the scenario's name (from the plan).
	Scenario string `json:"scenario"`
	// Clients is, per workload, the settings its clients ran with (the
	// client library's defaults unless the scenario declared otherwise):
	// they decide much of what a fault does to the clients.
	Clients map[string]map[string]string `json:"clients,omitempty"`
	// Description is the scenario's description attribute, if it has one.
	Description string `json:"description,omitempty"`
	// ScenarioFile is the HCL file the run was compiled from.
	ScenarioFile string `json:"scenario_file"`
	// Started is the wall-clock time of the start of the first phase, the
	// instant every *_ms offset in this file is measured from.
	Started time.Time `json:"started"`
	// Finished is the wall-clock time the run ended (after the last phase,
	// before teardown).
	Finished time.Time `json:"finished"`
	// DurationMS is the planned length of the timeline (all phases).
	DurationMS float64 `json:"duration_ms"`
	// Seeds lists the random seeds the run used, by what they seeded
	// (for example "workload.writers" or a fault id), so a run can be replayed.
	Seeds map[string]int64 `json:"seeds,omitempty"`
	// Point is the sweep point this run measured; empty outside a sweep.
	Point []SweepValue `json:"point,omitempty"`
	// Phases holds the measurements of each phase, in timeline order.
	Phases []Phase `json:"phases"`
	// Run holds the same measurements over the whole timeline; its Name is
	// "run". Its max gap is measured across phase boundaries, so it can be
	// longer than any phase's.
	Run Phase `json:"run"`
	// Series is the per-second time series, one entry per workload and op.
	Series []Series `json:"series"`
	// Leader is the leader timeline: one entry each time the observed leader
	// or term changed.
	Leader []LeaderObservation `json:"leader"`
	// Resources holds the per-node process samples (CPU, memory, disk writes).
	Resources []NodeResources `json:"resources"`
	// Runner holds the samples of the runner's own process (Node
	// "runner"): the load generator, the in-process shaper and the
	// checkers, which share the machine with the nodes.
	Runner *NodeResources `json:"runner,omitempty"`
	// Machine holds what the runner's whole machine did: CPU busy, steal
	// and wait, once a second; absent where /proc/stat cannot be read.
	Machine *Machine `json:"machine,omitempty"`
	// Preloads says what writing each workload's keys before the first
	// phase cost: the preload is not measured as load, but on a large
	// keyspace it is most of a run's time.
	Preloads []Preload `json:"preloads,omitempty"`
	// Correctness holds the history checker's verdict, when one ran.
	Correctness *Correctness `json:"correctness,omitempty"`
	// Registries holds each registry workload's own figures and its
	// watch checker's verdict.
	Registries []Registry `json:"registries,omitempty"`
	// Locks holds each lock workload's own figures and its mutual
	// exclusion checker's verdict.
	Locks []Lock `json:"locks,omitempty"`
	// Watches holds each watches workload's figures.
	Watches []WatchHold `json:"watches,omitempty"`
	// KeyWatches holds, for each key-value workload with watchers, what
	// they were told and the watch checker's verdict.
	KeyWatches []KeyWatch `json:"key_watches,omitempty"`
	// Checks holds every check of the scenario and its outcome.
	Checks []Check `json:"checks"`
	// Clusters holds each cluster's own figures when the scenario has
	// several (see Combine); absent with one, whose figures are the ones
	// above.
	Clusters []ClusterResults `json:"clusters,omitempty"`
	// Backend names the mechanisms the run used where there was a choice
	// (for example "provider": "process", "shaper": "userspace").
	Backend map[string]string `json:"backend,omitempty"`
	// Notes carries anything else worth keeping with the numbers: warnings,
	// dropped samples, versions. Keys are free-form.
	Notes map[string]string `json:"notes,omitempty"`
}

// BackendSequentialKeys is the backend entry of a run with a workload of
// sequential keys: how their walk of the keyspace was shared. Results
// written before 2026-12-07 lack it, and walked a lap per worker.
const BackendSequentialKeys = "sequential_keys"

// SequentialKeysShared is BackendSequentialKeys' value: the workers draw
// their keys in turn from one walk, as etcd's benchmark tool's
// --sequential-keys.
const SequentialKeysShared = "one walk of the keyspace shared by the workload's workers"

// NoteRealtime is the note a run whose threads ran at real-time priority
// (scenario run --realtime) carries.
const NoteRealtime = "realtime"

// NoteBusyPoll is the note a run whose shaper and dispatchers spun
// through a busy-poll window (scenario run --busy-poll) carries.
const NoteBusyPoll = "busy_poll"

// NoteShaperReads is the note that says whether the network shaper read
// every frame its devices handed it: its check of itself, made once it has
// stopped.
const NoteShaperReads = "shaper_reads"

// SweepValue is one coordinate of a sweep point.
type SweepValue struct {
	// Variable is the swept variable's name.
	Variable string `json:"variable"`
	// Value is the value it took, as an HCL literal.
	Value string `json:"value"`
}

// Phase is what was measured during one phase. An operation belongs to the
// phase that contains its intended send time; write gaps and elections
// belong to the phase they happened in.
type Phase struct {
	// Name is the phase's name ("run" for the whole-run entry).
	Name string `json:"name"`
	// StartMS is when the phase started.
	StartMS float64 `json:"start_ms"`
	// DurationMS is the phase's planned length.
	DurationMS float64 `json:"duration_ms"`
	// Total aggregates every operation of every workload in the phase.
	Total OpStats `json:"total"`
	// Ops aggregates each kind of operation over all workloads, in canonical
	// op order.
	Ops []OpStats `json:"ops"`
	// Workloads breaks the phase down per workload, in plan order.
	Workloads []WorkloadStats `json:"workloads"`
	// Availability is successful / attempted operations; null when no
	// operation was attempted.
	Availability *float64 `json:"availability"`
	// MaxGapMS is the longest stretch with no successful write (by completion
	// time), the phase's boundaries included; null when no write was
	// attempted.
	MaxGapMS *float64 `json:"max_gap_ms"`
	// TimeAvailability is time-based availability: the share of the
	// phase's time not spent in stretches of a second or more without a
	// successful write. Availability counts requests, so fast failures
	// (a store without a leader answering in a millisecond) weigh more
	// than slow successes; this counts time, as an SRE's uptime does.
	// Absent when nothing was written.
	TimeAvailability *float64 `json:"time_availability,omitempty"`
	// Elections counts leader changes observed during the phase.
	Elections int `json:"elections"`
	// NoLeaderMS is how long the cluster was observed without a leader:
	// nodes answered the leader poll and none led.
	NoLeaderMS float64 `json:"no_leader_ms"`
	// LeaderUnknownMS is how long no node answered the leader poll (every
	// node down, paused, cut off from the runner or too loaded to answer
	// within 500 ms), so that neither a leader nor its absence was seen.
	LeaderUnknownMS float64 `json:"leader_unknown_ms,omitempty"`
	// FailoverTimeMS is the worst TimeToWriteMS over the phase's failovers;
	// null when none was measured.
	FailoverTimeMS *float64 `json:"failover_time_ms"`
	// LeaderElectedMS is the worst TimeToLeaderMS over the phase's failovers;
	// null when none was measured.
	LeaderElectedMS *float64 `json:"leader_elected_ms"`
	// RejoinTimeMS is the worst TimeToServeMS over the phase's failovers:
	// how long after a fault was undone every member it took away was
	// answering clients again; null when none was measured, or when a
	// member never answered again (see NotRejoined).
	RejoinTimeMS *float64 `json:"rejoin_time_ms"`
	// NotRejoined names the members that answered clients before a fault
	// of the phase and none after it was undone.
	NotRejoined []string `json:"not_rejoined,omitempty"`
	// Failovers lists the faults injected during the phase and how the
	// cluster recovered from each.
	Failovers []Failover `json:"failovers"`
	// Server holds what the store's own metrics say of the phase, by our
	// name of the metric (see the store's ServerMetrics); absent when they
	// were not scraped.
	Server map[string]ServerStat `json:"server,omitempty"`
	// Resources condenses the resource samples taken during the phase,
	// per node and for the runner's own process (key "runner").
	Resources map[string]ResourceSummary `json:"resources,omitempty"`
	// Machine condenses the machine's samples taken during the phase.
	Machine *MachineSummary `json:"machine,omitempty"`
	// NetworkDrops counts the frames the network fabric lost over the
	// phase that no link declared: its devices' queues or a pair's queue
	// overran because the shaper fell behind. Each is a retransmission
	// the scenario did not ask for. Absent without a fabric.
	NetworkDrops *int64 `json:"network_drops,omitempty"`
	// NetworkFrames counts the frames the shaper read over the phase: the
	// frames of the pairs it carries (shaped ones, or all of them without
	// the bypass), against which NetworkDrops is a share. Absent without
	// a shaper.
	NetworkFrames *int64 `json:"network_frames,omitempty"`
	// NetworkLate says how late the shaper handed on the packets it held
	// over the phase, past the due time their link gave them: each
	// packet's delay was longer than declared by that much. Absent
	// without a shaper or when it held no packet.
	NetworkLate *NetworkLate `json:"network_late,omitempty"`
	// NetworkPairs breaks the shaper's figures down by ordered pair of
	// hosts, for the pairs it carried a packet of over the phase (a pair
	// the kernel carries, unshaped, is not among them), in order of
	// name. Absent without a shaper.
	NetworkPairs []NetworkPair `json:"network_pairs,omitempty"`
	// WriteFloor is the write latency that the declared links allow for
	// the leader in office, beside the measured put p50; absent when the
	// network is unshaped, a network fault acts in the phase or the
	// leader changed in it.
	WriteFloor *WriteFloor `json:"write_floor,omitempty"`
}

// NetworkLate summarises how long after its due time the shaper handed
// each packet it held (a delayed, jittered or rate-limited link's) to its
// destination: the wake-up latency of its scheduler, which grows when the
// machine's CPUs are busy. Figures are the middles of histogram buckets
// about 3% wide (1 µs wide below 64 µs).
type NetworkLate struct {
	// Packets counts the packets the shaper held and handed on.
	Packets int64   `json:"packets"`
	P50MS   float64 `json:"p50_ms"`
	P99MS   float64 `json:"p99_ms"`
	MaxMS   float64 `json:"max_ms"`
}

// NetworkPair is what the shaper did with one ordered pair's packets over
// a phase. Lost and Cut are what the link declared (its loss, its being
// down), so Lost against Packets+Lost is the loss rate the link really
// had; Dropped is what no link declared. A frame a host's device dropped
// before the shaper read it belongs to no pair, and is only in the
// phase's NetworkDrops.
type NetworkPair struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Packets counts the packets handed to the destination.
	Packets int64 `json:"packets"`
	// Lost counts those the link's declared loss dropped.
	Lost int64 `json:"lost,omitempty"`
	// Cut counts those dropped while the link was down (a partition).
	Cut int64 `json:"cut,omitempty"`
	// Dropped counts those the pair's queue refused at its limit or the
	// destination's device refused: losses no link declared.
	Dropped int64 `json:"dropped,omitempty"`
	// Late is how late the pair's held packets were handed on; absent
	// when it held none (an unshaped pair through the shaper). A packet
	// is counted in Packets before its write and timed after it, so
	// Late.Packets may differ from Packets by one being written as the
	// phase starts or ends.
	Late *NetworkLate `json:"late,omitempty"`
}

// WriteFloor sets a phase's put latency against the network's floor.
type WriteFloor struct {
	// Leader is the leader in office over the phase (a node index).
	Leader int `json:"leader"`
	// FloorMS is the least put latency the declared RTTs allow: the
	// clients' RTT to their member, the member's to the leader, and the
	// leader's quorum RTT (the lower median over the clients' members).
	FloorMS float64 `json:"floor_ms"`
	// Path says what the floor is made of.
	Path string `json:"path"`
	// JitterMS sums the jitter declared on the path's round trips, which
	// the floor leaves out; absent where none is. A link never reorders,
	// so its jitter raises its median delay where packets follow each
	// other closer than the jitter: part of the excess is then declared.
	JitterMS *float64 `json:"jitter_ms,omitempty"`
	// PutP50MS is the measured put p50; ExcessMS and ExcessPct its excess
	// over the floor. Null without successful puts.
	PutP50MS  *float64 `json:"put_p50_ms"`
	ExcessMS  *float64 `json:"excess_ms"`
	ExcessPct *float64 `json:"excess_pct"`
	// FsyncP50MS is the store's own fsync p50 over the phase, one of the
	// things the excess is made of; null when not scraped.
	FsyncP50MS *float64 `json:"fsync_p50_ms"`
}

// RunnerNode is the key of the runner's own process in Phase.Resources.
const RunnerNode = "runner"

// ServerStat is one of the store's own metrics over a phase, summed over
// the nodes: Values by stat (p50, p90, p99, mean, count for histograms;
// mean, count for summaries; delta, per_s for counters; max, the largest
// a node reported, and total, the sum of the nodes' last values, for
// gauges). Durations are in milliseconds.
type ServerStat struct {
	Kind   string             `json:"kind"`
	Unit   string             `json:"unit"`
	Values map[string]float64 `json:"values"`
}

// WorkloadStats is one workload's share of a phase.
type WorkloadStats struct {
	// Name is the workload's name.
	Name string `json:"name"`
	// Total aggregates all of the workload's operations.
	Total OpStats `json:"total"`
	// Availability is the workload's successful / attempted operations;
	// null when it attempted none.
	Availability *float64 `json:"availability"`
	// MaxGapMS is the longest stretch with no successful write by this
	// workload; null when it attempted no write.
	MaxGapMS *float64 `json:"max_gap_ms"`
	// TimeAvailability is the phase's time availability for this
	// workload's writes alone.
	TimeAvailability *float64 `json:"time_availability,omitempty"`
	// Ops holds one entry per kind of operation the workload sent, in
	// canonical op order.
	Ops []OpStats `json:"ops"`
}

// OpStats are the numbers of one set of operations.
type OpStats struct {
	// Op is the operation kind (put, get, ...); empty for an aggregate over
	// several kinds.
	Op string `json:"op,omitempty"`
	// Count is the number of operations attempted: OK + Errors.
	Count int64 `json:"count"`
	// OK is the number that succeeded.
	OK int64 `json:"ok"`
	// Errors is the number that failed.
	Errors int64 `json:"errors"`
	// ErrorsBy splits Errors by class; every class is present.
	ErrorsBy map[string]int64 `json:"errors_by"`
	// ErrorRate is Errors / Count (0 when nothing was attempted).
	ErrorRate float64 `json:"error_rate"`
	// Throughput is successful operations per second of the phase's
	// duration.
	Throughput float64 `json:"throughput"`
	// Latency is measured from the intended send time to completion, so
	// that a stalled store shows up as latency (coordinated omission
	// corrected). In closed loop the intended time is the send time, and it
	// equals RawLatency. Only successful operations are included; null when
	// none succeeded.
	Latency *Latency `json:"latency"`
	// RawLatency is measured from the actual send time to completion, over
	// successful operations; null when none succeeded.
	RawLatency *Latency `json:"raw_latency"`
	// LateStarts counts operations sent more than 1 ms after their intended
	// time (open loop only: the load generator fell behind).
	LateStarts int64 `json:"late_starts"`
	// LateQueued counts those of LateStarts that waited for a client:
	// every one of the workload's clients was busy with an earlier
	// operation when they came due, so more clients (or a faster store)
	// would have sent them on time. The rest were late for want of CPU.
	LateQueued int64 `json:"late_queued"`
}

// LateShare is LateStarts over Count: the share of the offered load that
// went out late; 0 when nothing was counted.
func (o *OpStats) LateShare() float64 {
	if o.Count == 0 {
		return 0
	}
	return float64(o.LateStarts) / float64(o.Count)
}

// Latency summarises a latency distribution. Percentiles come from an
// HdrHistogram with 3 significant digits (microsecond resolution); min, max
// and mean are exact.
type Latency struct {
	// P50MS is the median.
	P50MS float64 `json:"p50_ms"`
	// P90MS is the 90th percentile.
	P90MS float64 `json:"p90_ms"`
	// P99MS is the 99th percentile.
	P99MS float64 `json:"p99_ms"`
	// P999MS is the 99.9th percentile.
	P999MS float64 `json:"p999_ms"`
	// MaxMS is the largest value.
	MaxMS float64 `json:"max_ms"`
	// MinMS is the smallest value.
	MinMS float64 `json:"min_ms"`
	// MeanMS is the arithmetic mean.
	MeanMS float64 `json:"mean_ms"`
}

// Failover records one injected fault and how the cluster came back from it.
type Failover struct {
	// FaultID is the fault's id in the plan ("<phase>/<name>", "#k" for
	// repeats).
	FaultID string `json:"fault_id"`
	// Kind is the fault kind (kill, partition, ...).
	Kind string `json:"kind"`
	// Cluster is the cluster the fault acted on, with several clusters.
	Cluster string `json:"cluster,omitempty"`
	// Targets names the nodes the fault acted on, resolved when it fired.
	Targets []string `json:"targets"`
	// PlannedMS is when the plan scheduled the fault.
	PlannedMS float64 `json:"planned_ms"`
	// AppliedMS is when the fault had taken effect; null if it never did.
	AppliedMS *float64 `json:"applied_ms"`
	// RecoveredMS is when the fault was undone; null for instantaneous
	// faults and faults that were never undone.
	RecoveredMS *float64 `json:"recovered_ms"`
	// TimeToLeaderMS is the time from AppliedMS until a leader other than
	// the one the fault removed was observed; null if none was.
	TimeToLeaderMS *float64 `json:"time_to_leader_ms"`
	// TimeToWriteMS is the time from AppliedMS to the completion of the
	// first successful write sent after it (writes in flight at the fault
	// that complete just after it say nothing of recovery), or for a
	// transfer that moved the leader to the end of Unavailable (it takes
	// effect some way into the request); null if none.
	TimeToWriteMS *float64 `json:"time_to_write_ms"`
	// LagMS is AppliedMS - PlannedMS: how late the fault took effect
	// (target resolution, signals, a graceful stop's wait); null if it
	// never did.
	LagMS *float64 `json:"lag_ms"`
	// Unavailable is the longest stretch without a successful write around
	// the fault: between the last write completed before AppliedMS and the
	// first sent after it (for a transfer that moved the leader, the first
	// completed after the new leader was seen); null when no write
	// completed after the fault.
	Unavailable *Window `json:"unavailable"`
	// Served says, for a fault that kept its targets from answering
	// clients until it was undone (kill, stop, restart, pause, a partition
	// of targets), when each target answered a client again: the
	// completion of the first successful operation it answered that was
	// sent at or after RecoveredMS. Targets that answered no client before
	// the fault are left out.
	Served []NodeServed `json:"served,omitempty"`
	// TimeToServeMS is the worst of Served: the time from RecoveredMS until
	// every target had answered a client again; null when one never did.
	TimeToServeMS *float64 `json:"time_to_serve_ms,omitempty"`
	// Disk is what a disk fault's competing writers did; disk faults only.
	Disk *DiskLoad `json:"disk,omitempty"`
	// Error says why the fault could not be applied or undone, if it could
	// not.
	Error string `json:"error,omitempty"`
}

// NodeServed is when one node answered clients again after a fault.
type NodeServed struct {
	// Node is the node's name.
	Node string `json:"node"`
	// TimeToServeMS is the time from the fault's recovery to the first
	// answer; null if the node answered none.
	TimeToServeMS *float64 `json:"time_to_serve_ms"`
}

// Window is a stretch of the run, from its start.
type Window struct {
	StartMS float64 `json:"start_ms"`
	EndMS   float64 `json:"end_ms"`
}

// DiskLoad summarises a disk fault's competing writers over every target.
type DiskLoad struct {
	// Writes and Bytes count what the writers wrote.
	Writes int64 `json:"writes"`
	Bytes  int64 `json:"bytes"`
	// FsyncP50MS, FsyncP99MS and FsyncMaxMS are the fsync latencies the
	// writers themselves saw (0 when they did not fsync).
	FsyncP50MS float64 `json:"fsync_p50_ms"`
	FsyncP99MS float64 `json:"fsync_p99_ms"`
	FsyncMaxMS float64 `json:"fsync_max_ms"`
	// ThrottleBPS is the limit put on the nodes' own writes (bytes/s), 0
	// if the fault did not throttle them.
	ThrottleBPS int64 `json:"throttle_bps,omitempty"`
	// ThrottledBytes is what the nodes wrote through the throttle.
	ThrottledBytes int64 `json:"throttled_bytes,omitempty"`
	// ThrottleNote says when the throttle was not effective.
	ThrottleNote string `json:"throttle_note,omitempty"`
}

// Series is the per-second time series of one workload's op.
type Series struct {
	// Workload is the workload's name.
	Workload string `json:"workload"`
	// Op is the operation kind.
	Op string `json:"op"`
	// Points holds one entry per second of the run, starting at 0, with no
	// holes: a second with nothing completed has zero counts.
	Points []SecondPoint `json:"points"`
}

// SecondPoint is one second of a Series. Operations fall in the second in
// which they completed.
type SecondPoint struct {
	// AtMS is the start of the second.
	AtMS float64 `json:"at_ms"`
	// Ops is the number of operations that completed (OK + Errors).
	Ops int64 `json:"ops"`
	// Errors is the number that failed.
	Errors int64 `json:"errors"`
	// ErrorsBy splits Errors by class; only classes that occurred are
	// present.
	ErrorsBy map[string]int64 `json:"errors_by,omitempty"`
	// P50MS is the median corrected latency of the second's successful
	// operations; null when none succeeded.
	P50MS *float64 `json:"p50_ms"`
	// P99MS is the 99th percentile corrected latency; null when none
	// succeeded.
	P99MS *float64 `json:"p99_ms"`
}

// LeaderObservation is one change in the observed leader.
type LeaderObservation struct {
	// AtMS is when the change was first observed.
	AtMS float64 `json:"at_ms"`
	// Leader is the 1-based node index of the leader, 0 for none.
	Leader int `json:"leader"`
	// Term is the store's leader term (raft term, zxid epoch...), 0 when
	// unknown.
	Term uint64 `json:"term"`
	// Unanswered: no node answered the poll, so who led is unknown
	// (Leader is 0 but does not mean none led).
	Unanswered bool `json:"unanswered,omitempty"`
}

// NodeResources holds one node's process samples.
type NodeResources struct {
	// Node is the node's name (n1, n2, ...).
	Node string `json:"node"`
	// Summary condenses Points.
	Summary ResourceSummary `json:"summary"`
	// Points holds one sample per second while the node's process was up.
	Points []ResourcePoint `json:"points"`
}

// ResourcePoint is one sample of a node's process.
type ResourcePoint struct {
	// AtMS is when the sample was taken.
	AtMS float64 `json:"at_ms"`
	// PID is the process sampled; it changes when the node restarts.
	PID int `json:"pid"`
	// CPUPercent is CPU time (user + system) over wall time since the
	// previous sample, in percent of one core.
	CPUPercent float64 `json:"cpu_percent"`
	// RSSBytes is the resident set size.
	RSSBytes int64 `json:"rss_bytes"`
	// CPUWaitPercent is the time the process's threads were runnable but
	// waited for a CPU, summed over them, over wall time since the previous
	// sample, in percent of one core: CPU the process wanted and did not
	// get. A thread that exits takes with it what it waited since the
	// previous sample. Absent where the kernel keeps no schedstat.
	CPUWaitPercent *float64 `json:"cpu_wait_percent,omitempty"`
	// WrittenBytes is the bytes the node's processes caused to be written to
	// storage since the run began, summed over restarts; absent when
	// /proc/PID/io was unreadable.
	WrittenBytes *int64 `json:"written_bytes,omitempty"`
}

// SummarizeResources condenses the points stamped in (fromMS, toMS], each
// of which measured the second before its stamp: CPU mean and maximum,
// largest RSS, and the bytes written between the last point before the
// window (or its first point) and its last point.
func SummarizeResources(points []ResourcePoint, fromMS, toMS float64) ResourceSummary {
	var s ResourceSummary
	var before, first, last *int64
	var waitSum float64
	var waits int
	for _, p := range points {
		switch {
		case p.AtMS <= fromMS:
			before = p.WrittenBytes
			continue
		case p.AtMS > toMS:
			continue
		}
		s.Samples++
		s.CPUMeanPercent += p.CPUPercent
		s.CPUMaxPercent = max(s.CPUMaxPercent, p.CPUPercent)
		if p.CPUWaitPercent != nil {
			waitSum += *p.CPUWaitPercent
			waits++
		}
		s.RSSMaxBytes = max(s.RSSMaxBytes, p.RSSBytes)
		if first == nil {
			first = p.WrittenBytes
		}
		last = p.WrittenBytes
	}
	if s.Samples > 0 {
		s.CPUMeanPercent = math.Round(s.CPUMeanPercent/float64(s.Samples)*100) / 100
	}
	if waits > 0 {
		s.CPUWaitMeanPercent = Ptr(math.Round(waitSum/float64(waits)*100) / 100)
	}
	if before == nil {
		before = first
	}
	if before != nil && last != nil {
		s.WrittenBytes = Ptr(*last - *before)
	}
	return s
}

// ResourceSummary condenses a node's samples.
type ResourceSummary struct {
	// Samples is the number of points.
	Samples int `json:"samples"`
	// CPUMeanPercent is the mean of the points' CPUPercent.
	CPUMeanPercent float64 `json:"cpu_mean_percent"`
	// CPUMaxPercent is the largest CPUPercent.
	CPUMaxPercent float64 `json:"cpu_max_percent"`
	// RSSMaxBytes is the largest RSSBytes.
	RSSMaxBytes int64 `json:"rss_max_bytes"`
	// CPUWaitMeanPercent is the mean of the points' CPUWaitPercent, over
	// the points that have one; absent when none has.
	CPUWaitMeanPercent *float64 `json:"cpu_wait_mean_percent,omitempty"`
	// WrittenBytes is the total written over the run; null when it could not
	// be read.
	WrittenBytes *int64 `json:"written_bytes"`
}

// WaitShare is the share of the time the process wanted a CPU that it
// waited for one: CPUWaitMeanPercent over itself plus CPUMeanPercent. Nil
// without a wait figure, or when the process neither ran nor waited.
func (s ResourceSummary) WaitShare() *float64 {
	return waitShare(s.CPUWaitMeanPercent, s.CPUMeanPercent)
}

// WaitShare is ResourceSummary.WaitShare over the point's second.
func (p ResourcePoint) WaitShare() *float64 { return waitShare(p.CPUWaitPercent, p.CPUPercent) }

// waitShare is wait over wait plus cpu, both in % of a core; nil without
// a wait, or when both are zero.
func waitShare(wait *float64, cpu float64) *float64 {
	if wait == nil || *wait+cpu <= 0 {
		return nil
	}
	return Ptr(RoundShare(*wait / (*wait + cpu)))
}

// Correctness is the verdict of the history checker run after the load.
type Correctness struct {
	// Linearizable is true only when the checker proved the history
	// linearizable, false when it found a violation, null when it gave up
	// (timeout) or did not run.
	Linearizable *bool `json:"linearizable"`
	// LostWrites counts acknowledged writes not read back after the run;
	// null when not checked.
	LostWrites *int64 `json:"lost_writes"`
	// Operations is the number of operations in the checked history.
	Operations int64 `json:"operations"`
	// Visualization is the path of the checker's HTML report, if written.
	Visualization string `json:"visualization,omitempty"`
	// Detail explains the verdict in a sentence.
	Detail string `json:"detail,omitempty"`
}

// Preload is one workload's preload: every key of its keyspace written
// once before the first phase.
type Preload struct {
	Workload   string  `json:"workload"`
	Keys       int64   `json:"keys"`
	Bytes      int64   `json:"bytes"` // keys and values written
	DurationMS float64 `json:"duration_ms"`
	KeysPerS   float64 `json:"keys_per_s"`
}

// Registry is what one registry workload measured besides its operations
// (whose latencies are in the phases, as register, keepalive, deregister,
// notify, fanout and detect).
type Registry struct {
	Workload    string  `json:"workload"`
	Store       string  `json:"store"`
	Instances   int     `json:"instances"`
	Watchers    int     `json:"watchers"`
	TTLMS       float64 `json:"ttl_ms"`
	HeartbeatMS float64 `json:"heartbeat_ms"`
	// RegistrationsPerS is the first registration of every instance:
	// those registered over the time from the first send to the last
	// acknowledgement.
	RegistrationsPerS float64 `json:"registrations_per_s"`
	Registered        int     `json:"registered"`
	// Vanished counts instances silenced by vanish faults; Detected those
	// a watcher was told were gone.
	Vanished int `json:"vanished"`
	Detected int `json:"detected"`
	// Expired counts instances the store dropped while they heartbeat.
	Expired     int `json:"expired"`
	WatchErrors int `json:"watch_errors"`
	// Watch is the watch checker's verdict: the store's model, every
	// watcher's events, and the violations found (their events are in
	// ViolationsFile).
	Watch          WatchVerdict `json:"watch"`
	ViolationsFile string       `json:"violations_file,omitempty"`
	// MemoryPerInstanceKiB is the growth of the members' mean resident
	// memory from before the registry started to its fullest, over its
	// instances; absent when not sampled.
	MemoryPerInstanceKiB *float64 `json:"memory_per_instance_kib,omitempty"`
}

// Lock is what one lock workload measured besides its operations (whose
// latencies are in the phases, as acquire, release, handover and takeover).
type Lock struct {
	Workload   string  `json:"workload"`
	Store      string  `json:"store"`
	Contenders int     `json:"contenders"`
	TTLMS      float64 `json:"ttl_ms"`
	HoldMS     float64 `json:"hold_ms"`
	// Holds counts acquisitions; Lost those that ended with the holder
	// learning its session was gone; Paused the holders a pause froze.
	Holds  int `json:"holds"`
	Lost   int `json:"lost"`
	Paused int `json:"paused"`
	// MutexOK is false when two contenders believed they held the lock at
	// once; Overlaps counts such pairs, listed in OverlapsFile.
	MutexOK      bool   `json:"mutex_ok"`
	Overlaps     int    `json:"overlaps"`
	OverlapsFile string `json:"overlaps_file,omitempty"`
	Detail       string `json:"detail,omitempty"`
}

// WatchHold is what a watches workload held.
type WatchHold struct {
	Workload string `json:"workload"`
	Store    string `json:"store"`
	Keys     int    `json:"keys"`
	Held     int    `json:"held"`
	// SetMS is how long setting every watch took; SetPerS the watches set
	// a second.
	SetMS   float64 `json:"set_ms"`
	SetPerS float64 `json:"set_per_s"`
	Error   string  `json:"error,omitempty"`
}

// WatchVerdict summarises runner/checker's watch verdict.
// KeyWatch is what the watchers of one key-value workload measured
// besides notify and fanout, which are among the workload's operations.
type KeyWatch struct {
	Workload string `json:"workload"`
	Store    string `json:"store"`
	Watchers int    `json:"watchers"`
	// Writes counts the writes to the watched keys acknowledged after the
	// watchers listed; FannedOut those every watcher was told (it, or a
	// newer value of the key).
	Writes         int          `json:"writes"`
	FannedOut      int          `json:"fanned_out"`
	WatchErrors    int          `json:"watch_errors"`
	Watch          WatchVerdict `json:"watch"`
	ViolationsFile string       `json:"violations_file,omitempty"`
}

// WatchVerdict is a watch checker's verdict.
type WatchVerdict struct {
	OK         bool   `json:"ok"`
	Model      string `json:"model"`
	Events     int    `json:"events"`
	Skipped    int    `json:"skipped"`
	Returns    int    `json:"returns,omitempty"`
	Violations int    `json:"violations"`
	Detail     string `json:"detail,omitempty"`
}

// Check is one check of the scenario and its outcome.
type Check struct {
	// Name is the check's name.
	Name string `json:"name"`
	// Condition is the HCL expression, as written.
	Condition string `json:"condition"`
	// Message is the user's explanation, shown when the check fails.
	Message string `json:"message,omitempty"`
	// Pos is where the check is declared (file:line:col).
	Pos string `json:"pos,omitempty"`
	// Passed is true when the condition evaluated to true.
	Passed bool `json:"passed"`
	// Observed maps each metric path the condition reads to the value it had:
	// a float64, a bool, or null when the metric was not measured.
	Observed map[string]any `json:"observed"`
	// Error says why the condition could not be evaluated; a check with an
	// error has Passed false.
	Error string `json:"error,omitempty"`
	// DurationMS is the stretch of the run the check covers (its phase, or
	// the whole run); JUnit reports it as the test case's time.
	DurationMS float64 `json:"duration_ms"`
}

// Check outcomes, as Status reports them.
const (
	StatusPass  = "pass"
	StatusFail  = "fail"
	StatusError = "error"
)

// Status reports whether the check passed, failed, or could not be
// evaluated.
func (c Check) Status() string {
	switch {
	case c.Error != "":
		return StatusError
	case c.Passed:
		return StatusPass
	default:
		return StatusFail
	}
}

// Name is the scenario's short name: its file name without the directory
// and the .hcl extension.
func (r *Results) Name() string {
	file := r.ScenarioFile
	if file == "" {
		file = r.Scenario
	}
	return strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
}

// Passed reports whether every check passed. A run without checks passes.
func (r *Results) Passed() bool {
	for _, c := range r.Checks {
		if c.Status() != StatusPass {
			return false
		}
	}
	return true
}

// Phase returns the phase with the given name ("run" for the whole run).
func (r *Results) Phase(name string) (*Phase, bool) {
	if name == r.Run.Name {
		return &r.Run, true
	}
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i], true
		}
	}
	return nil, false
}

// AddFailover records a failover under its phase and keeps the phase's and
// the run's worst failover times up to date.
func (r *Results) AddFailover(phase string, f Failover) error {
	p, ok := r.Phase(phase)
	if !ok || p == &r.Run {
		return fmt.Errorf("failover %s: no phase %q in the results", f.FaultID, phase)
	}
	f.TimeToServeMS = nil
	var missing []string
	for i, s := range f.Served {
		if s.TimeToServeMS == nil {
			missing = append(missing, s.Node)
			continue
		}
		f.TimeToServeMS = worst(f.TimeToServeMS, f.Served[i].TimeToServeMS)
	}
	if len(missing) > 0 {
		f.TimeToServeMS = nil
	}
	p.Failovers = append(p.Failovers, f)
	for _, q := range []*Phase{p, &r.Run} {
		q.FailoverTimeMS = worst(q.FailoverTimeMS, f.TimeToWriteMS)
		q.LeaderElectedMS = worst(q.LeaderElectedMS, f.TimeToLeaderMS)
		for _, n := range missing {
			if !slices.Contains(q.NotRejoined, n) {
				q.NotRejoined = append(q.NotRejoined, n)
			}
		}
		q.RejoinTimeMS = worst(q.RejoinTimeMS, f.TimeToServeMS)
		if len(q.NotRejoined) > 0 {
			q.RejoinTimeMS = nil
		}
	}
	return nil
}

func worst(cur, v *float64) *float64 {
	if v == nil || (cur != nil && *cur >= *v) {
		return cur
	}
	w := *v
	return &w
}

// Write writes r as dir/results.json, indented. The file is written to a
// temporary name first and renamed, so a reader never sees half a file.
func Write(dir string, r *Results) error {
	if r.SchemaVersion == 0 {
		r.SchemaVersion = SchemaVersion
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // conditions contain < and >; keep them readable
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	// Readable like every other output of a run (report, logs, junit).
	if err := safefile.WriteAtomic(filepath.Join(dir, FileName), buf.Bytes(), 0o644, false); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// MaxFileBytes is the largest results.json Read accepts. A day-long run
// with a per-second series of a dozen ops is a few MB.
const MaxFileBytes = 256 << 20

// Read loads a results file written by Write. It refuses files written with
// a newer schema than this build understands.
func Read(path string) (*Results, error) {
	b, err := safefile.ReadRegular(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read results %s: %w", path, err)
	}
	switch {
	case r.SchemaVersion == 0:
		return nil, fmt.Errorf("read results %s: no schema_version; is this a results.json?", path)
	case r.SchemaVersion < 0:
		return nil, fmt.Errorf("read results %s: schema_version %d is not a version (they start at 1)", path, r.SchemaVersion)
	case r.SchemaVersion > SchemaVersion:
		return nil, fmt.Errorf("read results %s: schema version %d is newer than this build understands (%d); upgrade scenario", path, r.SchemaVersion, SchemaVersion)
	}
	// A section that is missing or null would read as zeros: a throughput
	// of 0, a false regression (or a false pass) in a comparison.
	var sections map[string]json.RawMessage
	if err := json.Unmarshal(b, &sections); err != nil {
		return nil, fmt.Errorf("read results %s: %w", path, err)
	}
	for _, key := range []string{"run", "phases"} {
		if raw, ok := sections[key]; !ok || string(bytes.TrimSpace(raw)) == "null" {
			return nil, fmt.Errorf("read results %s: %q is missing or null; is this a complete results.json?", path, key)
		}
	}
	return &r, nil
}

// GuardOutput refuses to write at out when that would destroy data: out
// is one of inputs, is not a regular file, or holds a results.json (by
// name or by content), which only a run may write.
func GuardOutput(out string, inputs ...string) error {
	if err := safefile.CheckOutput(out, inputs...); err != nil {
		return err
	}
	fi, err := os.Stat(out)
	if err != nil {
		return nil // nothing there to destroy
	}
	if filepath.Base(out) == FileName && fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w a run's results; choose another file", out, safefile.ErrOverwrite)
	}
	if b, err := safefile.ReadRegular(out, MaxFileBytes); err == nil && looksLikeResults(b) {
		return fmt.Errorf("%s holds a run's results (it has a schema_version): %w them; choose another file", out, safefile.ErrOverwrite)
	}
	return nil
}

// looksLikeResults reports whether b is JSON with a schema_version, as
// every results.json has.
func looksLikeResults(b []byte) bool {
	var probe struct {
		SchemaVersion *int `json:"schema_version"`
	}
	return json.Unmarshal(b, &probe) == nil && probe.SchemaVersion != nil
}

// MS converts a duration to the schema's unit, milliseconds, rounded to the
// microsecond: finer digits are noise and only make files harder to read.
func MS(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)) / float64(time.Millisecond)
}

// Ptr returns a pointer to v, for the schema's optional fields.
func Ptr[T any](v T) *T { return &v }
