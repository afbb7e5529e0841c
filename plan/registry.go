package plan

// Coordination operations: what a registry workload sends (register,
// keepalive, deregister) and what it observes (notify, fanout, detect).
// Observed ones are not requests: they are timed like operations so that
// phases, checks and reports treat them alike, but they stay out of a
// phase's totals and availability.
const (
	// OpRegister: one instance joins (a lease or session, then its key).
	OpRegister = "register"
	// OpKeepalive: one heartbeat of an instance's lease or session.
	OpKeepalive = "keepalive"
	// OpDeregister: one instance leaves, saying goodbye (churn, the end).
	OpDeregister = "deregister"
	// OpNotify: one watcher told of one change, from the change's send
	// (latency) and from its acknowledgement (raw latency).
	OpNotify = "notify"
	// OpFanout: one change, until the last watcher was told.
	OpFanout = "fanout"
	// OpDetect: an instance that vanished, from its silence (latency) and
	// from its last acknowledged heartbeat (raw latency) until the first
	// watcher is told it is gone.
	OpDetect = "detect"
)

// RegistryOps are a registry workload's operations, in report order.
var RegistryOps = []string{OpRegister, OpKeepalive, OpDeregister, OpNotify, OpFanout, OpDetect}

// ObservedOps are measurements timed like operations that are not requests.
var ObservedOps = []string{OpNotify, OpFanout, OpDetect, OpHandover, OpTakeover}

// MeasuredOps are every op name results can carry, in report order.
var MeasuredOps = append(append(append([]string{}, AllOps...), RegistryOps...), LockOps...)

// Observed reports whether op is a measurement rather than a request.
func Observed(op string) bool {
	for _, o := range ObservedOps {
		if o == op {
			return true
		}
	}
	return false
}

// RegistrySpec is a service-registry workload: Instances each hold a
// lease (etcd), a session with an ephemeral node (ZooKeeper) or a session
// with a key (Consul) of TTL, heartbeat every Heartbeat, and Churn of them
// a second leave and join again; Watchers consumers watch the list.
type RegistrySpec struct {
	Instances int      `json:"instances"`
	TTL       Duration `json:"ttl"`
	Heartbeat Duration `json:"heartbeat"`
	Watchers  int      `json:"watchers"`
	Churn     float64  `json:"churn,omitempty"` // re-registrations per second
	// Recipe is one of the store's registry recipes (stores.Driver's
	// RegistryRecipes); "" is its first.
	Recipe string `json:"recipe,omitempty"`
}

// Ops are the operations a workload's results carry: its mix, or a
// registry's.
func (w WorkloadSpec) Ops() []string {
	if w.Watches != nil {
		return nil
	}
	if w.Lock != nil {
		return LockOps
	}
	if w.Registry != nil {
		ops := []string{OpRegister, OpKeepalive}
		if w.Registry.Churn > 0 {
			ops = append(ops, OpDeregister)
		}
		if w.Registry.Watchers > 0 {
			ops = append(ops, OpNotify, OpFanout, OpDetect)
		}
		return ops
	}
	ops := make([]string, len(w.Mix))
	for i, m := range w.Mix {
		ops[i] = m.Op
	}
	if w.Watchers > 0 {
		ops = append(ops, OpNotify, OpFanout)
	}
	return ops
}

// VanishSpec makes instances of a registry workload die without a word:
// they stop heartbeating and close nothing, as a crashed or frozen process
// does. Count of them, or Fraction of those registered; when the fault
// ends they register again, as a restarted process would.
type VanishSpec struct {
	Workload string  `json:"workload"`
	Count    int     `json:"count,omitempty"`
	Fraction float64 `json:"fraction,omitempty"`
}

// Of is how many of n registered instances vanish: at least one.
func (v VanishSpec) Of(n int) int {
	k := v.Count
	if k == 0 {
		k = int(v.Fraction*float64(n) + 0.5)
	}
	return max(1, min(k, n))
}

// A registry workload's own metrics: run.workload.<w>.<metric>.
const (
	MetricRegistrationsPerS = "registrations_per_s" // first registration of every instance, per second
	MetricRegistered        = "registered"          // instances whose first registration succeeded
	MetricExpired           = "expired"             // instances the store dropped while they heartbeat
	MetricVanished          = "vanished"            // instances silenced by vanish faults
	MetricDetected          = "detected"            // of those, how many a watcher was told were gone
)

// RegistryMetrics lists a registry workload's own metrics.
var RegistryMetrics = []string{MetricRegistrationsPerS, MetricRegistered, MetricExpired, MetricVanished, MetricDetected, MetricWatchOK}

// Lock operations: what a lock workload sends (acquire, release) and what
// it observes (handover, takeover).
const (
	// OpAcquire: one contender asks for the lock until it holds it (its
	// wait in the queue included).
	OpAcquire = "acquire"
	// OpRelease: the holder gives the lock up.
	OpRelease = "release"
	// OpHandover: from a release's send (latency) and acknowledgement
	// (raw latency) until the next contender holds the lock.
	OpHandover = "handover"
	// OpTakeover: from a paused holder's silence until another contender
	// holds the lock: the store gave up on the holder.
	OpTakeover = "takeover"
)

// LockOps are a lock workload's operations, in report order.
var LockOps = []string{OpAcquire, OpRelease, OpHandover, OpTakeover}

// LockSpec is a lock workload: Contenders processes compete for one lock
// with the store's standard recipe, each holding a lease or session of
// TTL, and each holds the lock for Hold once it has it.
type LockSpec struct {
	Contenders int      `json:"contenders"`
	TTL        Duration `json:"ttl"`
	Hold       Duration `json:"hold"`
	// Recipe is LockMutex or LockElection.
	Recipe string `json:"recipe"`
}

// Lock recipes. On etcd they are concurrency.Mutex and
// concurrency.Election; ZooKeeper's and Consul's documented leader
// election is their lock recipe, so both names run it there.
const (
	LockMutex    = "mutex"
	LockElection = "election"
)

// LockRecipes lists the lock recipes.
var LockRecipes = []string{LockMutex, LockElection}

// A lock workload's own metrics: run.workload.<w>.<metric>.
const (
	MetricMutexOK  = "mutex_ok" // bool: no two contenders believed they held the lock at once
	MetricOverlaps = "overlaps" // pairs of holders whose believed holding overlapped
)

// LockMetrics lists a lock workload's own metrics.
var LockMetrics = []string{MetricMutexOK, MetricOverlaps}

// WatchesSpec is a workload that holds a watch on each of Keys keys of its
// own for as long as it lives.
type WatchesSpec struct {
	Keys int `json:"keys"`
}

// MetricWatchesHeld is how many watches a watches workload held:
// run.workload.<w>.watches_held.
const MetricWatchesHeld = "watches_held"
