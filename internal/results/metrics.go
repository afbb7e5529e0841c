package results

import "github.com/coordlab/scenario/plan"

// Metrics flattens the results into the metric paths checks read, so that a
// check can be evaluated from a saved results.json as well as from a live
// run. Values are float64 (latencies and durations in ms) or bool. A metric
// that was not measured (a latency with no successful operation, an
// availability with no attempt) is absent, so a check reading it fails to
// evaluate instead of passing on a zero.
//
// Paths, where <scope> is "run" or "phase.<name>":
//
//	<scope>.<stat>                     every op of every workload; stat is one of plan.PhaseStats or p50..mean
//	<scope>.errors_by.<class>          errors of one class (plan.ErrorClasses)
//	<scope>.raw.<latency stat>         latency from the actual send time instead of the intended one
//	<scope>.<op>.<stat>                one op over all workloads; stat is one of plan.OpStats
//	<scope>.<op>.errors_by.<class>
//	<scope>.<op>.raw.<latency stat>
//	<scope>.workload.<w>.<stat>        one workload, all its ops, plus its availability, max_gap, late_starts and late_start_share
//	<scope>.workload.<w>.<op>.<stat>   one workload's op
//	<scope>.server.<metric>.<stat>     the store's own metric over the scope (Phase.Server)
//	<scope>.steal_share, cpu_wait_share the runner's machine over the scope (Phase.Machine)
//	<scope>.network_drops              frames the fabric lost that no link declared (Phase.NetworkDrops)
//	<scope>.network_frames             frames the shaper read (Phase.NetworkFrames)
//	<scope>.network_late_p99_ms, network_late_max_ms  how late the shaper handed on what it held (Phase.NetworkLate)
//	<scope>.network_pair.<from>.<to>.<stat>  one ordered pair of hosts the shaper carried (Phase.NetworkPairs, plan.PairStats)
//	run.linearizable, run.lost_writes  the history checker's verdict
//	run.watch_ok                       every registry's and key watch's checker's verdict
//	run.workload.<w>.<registry metric> a registry's own figures (plan.RegistryMetrics)
//	run.workload.<w>.<lock metric>     a lock workload's verdict (plan.LockMetrics)
//	run.workload.<w>.watch_ok          a key-value workload's watchers' verdict
//	cluster.<c>.<scope>...             with several clusters, each cluster's own (see Combine)
//
// Checks can name only the paths the dsl's metric tree declares (see
// plan.PhaseStats and plan.OpStats); the phase-wide and per-workload latency
// statistics and the raw latencies are here for readers of results.json.
func (r *Results) Metrics() map[string]any {
	m := make(map[string]any)
	addPhase(m, "run", &r.Run)
	for i := range r.Phases {
		addPhase(m, "phase."+r.Phases[i].Name, &r.Phases[i])
	}
	addCorrectness(m, "run", r.Correctness)
	addRegistries(m, r.Registries, r.KeyWatches)
	for _, w := range r.Watches {
		m["run.workload."+w.Workload+"."+plan.MetricWatchesHeld] = float64(w.Held)
	}
	for _, l := range r.Locks {
		ws := "run.workload." + l.Workload + "."
		m[ws+plan.MetricMutexOK] = l.MutexOK
		m[ws+plan.MetricOverlaps] = float64(l.Overlaps)
	}
	for _, c := range r.Clusters {
		scope := "cluster." + c.Name
		addPhase(m, scope+".run", &c.Run)
		for i := range c.Phases {
			addPhase(m, scope+".phase."+c.Phases[i].Name, &c.Phases[i])
		}
		addCorrectness(m, scope+".run", c.Correctness)
	}
	return m
}

func addCorrectness(m map[string]any, scope string, c *Correctness) {
	if c == nil {
		return
	}
	if c.Linearizable != nil {
		m[scope+"."+plan.MetricLinearizable] = *c.Linearizable
	}
	if c.LostWrites != nil {
		m[scope+"."+plan.MetricLostWrites] = float64(*c.LostWrites)
	}
}

// addRegistries adds run.workload.<w>.<metric> of every registry,
// run.workload.<w>.watch_ok of every watched key-value workload, and
// run.watch_ok, true when every watcher of either kept its promises.
func addRegistries(m map[string]any, rs []Registry, kws []KeyWatch) {
	if len(rs) == 0 && len(kws) == 0 {
		return
	}
	ok := true
	for _, k := range kws {
		m["run.workload."+k.Workload+"."+plan.MetricWatchOK] = k.Watch.OK
		ok = ok && k.Watch.OK
	}
	for _, r := range rs {
		ws := "run.workload." + r.Workload + "."
		m[ws+plan.MetricRegistrationsPerS] = r.RegistrationsPerS
		m[ws+plan.MetricRegistered] = float64(r.Registered)
		m[ws+plan.MetricExpired] = float64(r.Expired)
		m[ws+plan.MetricVanished] = float64(r.Vanished)
		m[ws+plan.MetricDetected] = float64(r.Detected)
		m[ws+plan.MetricWatchOK] = r.Watch.OK
		ok = ok && r.Watch.OK
	}
	m["run."+plan.MetricWatchOK] = ok
}

// Lookup returns the value of one metric path (see Metrics).
func (r *Results) Lookup(path string) (any, bool) {
	v, ok := r.Metrics()[path]
	return v, ok
}

// addLate adds late_starts and late_start_share: the share of the ops
// counted (sent, and expired in the queue) that an open loop sent more
// than 1 ms after their intended time, 0 with no ops; and late_queued,
// those of them that waited for a client.
func addLate(m map[string]any, scope string, o *OpStats) {
	m[scope+"."+plan.MetricLateStarts] = float64(o.LateStarts)
	m[scope+"."+plan.MetricLateShare] = o.LateShare()
	m[scope+"."+plan.MetricLateQueued] = float64(o.LateQueued)
}

func addPhase(m map[string]any, scope string, p *Phase) {
	for name, st := range p.Server {
		for stat, v := range st.Values {
			m[scope+".server."+name+"."+stat] = v
		}
	}
	addOp(m, scope, &p.Total)
	for i := range p.Ops {
		addOp(m, scope+"."+p.Ops[i].Op, &p.Ops[i])
	}
	for _, w := range p.Workloads {
		ws := scope + ".workload." + w.Name
		addOp(m, ws, &w.Total)
		addLate(m, ws, &w.Total)
		setOpt(m, ws+"."+plan.MetricAvailability, w.Availability)
		setOpt(m, ws+"."+plan.MetricMaxGap, w.MaxGapMS)
		setOpt(m, ws+"."+plan.MetricTimeAvail, w.TimeAvailability)
		for i := range w.Ops {
			addOp(m, ws+"."+w.Ops[i].Op, &w.Ops[i])
		}
	}
	addLate(m, scope, &p.Total)
	m[scope+"."+plan.MetricElections] = float64(p.Elections)
	m[scope+"."+plan.MetricNoLeader] = p.NoLeaderMS
	m[scope+"."+plan.MetricLeaderUnknown] = p.LeaderUnknownMS
	if f := p.WriteFloor; f != nil {
		m[scope+"."+plan.MetricWriteFloor] = f.FloorMS
		if f.ExcessPct != nil {
			m[scope+"."+plan.MetricFloorExcess] = *f.ExcessPct / 100
		}
	}
	setOpt(m, scope+"."+plan.MetricAvailability, p.Availability)
	setOpt(m, scope+"."+plan.MetricMaxGap, p.MaxGapMS)
	setOpt(m, scope+"."+plan.MetricTimeAvail, p.TimeAvailability)
	setOpt(m, scope+"."+plan.MetricFailoverTime, p.FailoverTimeMS)
	setOpt(m, scope+"."+plan.MetricLeaderElect, p.LeaderElectedMS)
	setOpt(m, scope+"."+plan.MetricRejoin, p.RejoinTimeMS)
	if mc := p.Machine; mc != nil {
		m[scope+"."+plan.MetricStealShare] = mc.StealMeanShare
		setOpt(m, scope+"."+plan.MetricCPUWait, mc.WaitMeanShare)
	}
	if r, ok := p.Resources[RunnerNode]; ok {
		setOpt(m, scope+"."+plan.MetricRunnerWait, r.WaitShare())
	}
	if d := p.NetworkDrops; d != nil {
		m[scope+"."+plan.MetricNetworkDrops] = float64(*d)
	}
	if f := p.NetworkFrames; f != nil {
		m[scope+"."+plan.MetricNetworkFrames] = float64(*f)
	}
	if l := p.NetworkLate; l != nil {
		m[scope+"."+plan.MetricNetworkLateP99] = l.P99MS
		m[scope+"."+plan.MetricNetworkLateMax] = l.MaxMS
	}
	for _, pr := range p.NetworkPairs {
		addPair(m, scope+"."+plan.MetricNetworkPair+"."+pr.From+"."+pr.To+".", &pr)
	}
}

// addPair adds one network pair's statistics (plan.PairStats) under
// prefix.
func addPair(m map[string]any, prefix string, pr *NetworkPair) {
	m[prefix+plan.PairPackets] = float64(pr.Packets)
	m[prefix+plan.PairLost] = float64(pr.Lost)
	m[prefix+plan.PairCut] = float64(pr.Cut)
	m[prefix+plan.PairDropped] = float64(pr.Dropped)
	// A cut packet never meets the loss draw; a dropped one has.
	if offered := pr.Packets + pr.Lost + pr.Dropped; offered > 0 {
		m[prefix+plan.PairLostShare] = float64(pr.Lost) / float64(offered)
	}
	if l := pr.Late; l != nil {
		m[prefix+plan.PairLateP99] = l.P99MS
		m[prefix+plan.PairLateMax] = l.MaxMS
	}
}

func addOp(m map[string]any, prefix string, s *OpStats) {
	m[prefix+"."+plan.StatCount] = float64(s.Count)
	m[prefix+"."+plan.StatThroughput] = s.Throughput
	m[prefix+"."+plan.StatErrors] = float64(s.Errors)
	m[prefix+"."+plan.StatErrorRate] = s.ErrorRate
	for class, n := range s.ErrorsBy {
		m[prefix+".errors_by."+class] = float64(n)
	}
	addLatency(m, prefix, s.Latency)
	addLatency(m, prefix+".raw", s.RawLatency)
}

func addLatency(m map[string]any, prefix string, l *Latency) {
	if l == nil {
		return
	}
	m[prefix+"."+plan.StatP50] = l.P50MS
	m[prefix+"."+plan.StatP90] = l.P90MS
	m[prefix+"."+plan.StatP99] = l.P99MS
	m[prefix+"."+plan.StatP999] = l.P999MS
	m[prefix+"."+plan.StatMax] = l.MaxMS
	m[prefix+"."+plan.StatMin] = l.MinMS
	m[prefix+"."+plan.StatMean] = l.MeanMS
}

func setOpt(m map[string]any, path string, v *float64) {
	if v != nil {
		m[path] = *v
	}
}
