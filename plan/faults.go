package plan

import "slices"

// Fault kinds.
const (
	FaultNetwork   = "network"
	FaultPartition = "partition"
	FaultKill      = "kill"
	FaultStop      = "stop"
	FaultRestart   = "restart"
	FaultPause     = "pause"
	FaultDisk      = "disk"
	// FaultVanish makes registry instances die silently (VanishSpec).
	FaultVanish = "vanish"
	// FaultTransferLeader hands the leadership to its one target, as an
	// operator (or a rolling upgrade) does before taking a leader down.
	FaultTransferLeader = "transfer_leader"
)

// FaultKind is what every part of scenario knows of one kind of fault,
// apart from its attributes (the language's) and how it is injected (the
// runner's), each of which is keyed by Name.
type FaultKind struct {
	Name string
	// TakesDown: its targets' processes exit, on purpose.
	TakesDown bool
	// Silences: its targets answer no client until it is undone, so their
	// return is measured (rejoin, answering again).
	Silences bool
	// LeaderStays: a leader among its targets stays in office, so it may
	// count as the leader after the fault.
	LeaderStays bool
	// MovesLeader: the leader when it fires leaves office on purpose, for
	// one of its targets, so it does not count as the leader after it.
	MovesLeader bool
	// Undo is what recovering it does, as the plan prints it.
	Undo string
}

// FaultKinds lists every fault kind.
func FaultKinds() []FaultKind {
	return []FaultKind{
		{Name: FaultKill, TakesDown: true, Silences: true, Undo: "start node again"},
		{Name: FaultStop, TakesDown: true, Silences: true, Undo: "start node again"},
		{Name: FaultRestart, TakesDown: true, Silences: true, Undo: "start node again"},
		{Name: FaultPause, Silences: true, Undo: "resume"},
		{Name: FaultNetwork, LeaderStays: true, Undo: "restore links"},
		{Name: FaultPartition, Silences: true, Undo: "heal"},
		{Name: FaultDisk, LeaderStays: true, Undo: "stop contention"},
		{Name: FaultVanish, LeaderStays: true, Undo: "register again"},
		{Name: FaultTransferLeader, MovesLeader: true, Undo: "nothing: the leadership stays where it went"},
	}
}

// FaultKindOf returns the kind named name.
func FaultKindOf(name string) (FaultKind, bool) {
	all := FaultKinds()
	i := slices.IndexFunc(all, func(k FaultKind) bool { return k.Name == name })
	if i < 0 {
		return FaultKind{}, false
	}
	return all[i], true
}
