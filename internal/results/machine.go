package results

// Machine holds what the whole machine the runner is on did, one point a
// second: how busy its CPUs were, how much of their time the hypervisor
// withheld (steal), and how long runnable tasks waited for a CPU. These say
// whether a late open loop or a slow phase was the runner's doing or the
// machine's: a vCPU the hypervisor does not run stalls every thread on it,
// and no sleeper in the runner can make up for it.
type Machine struct {
	// CPUs is the number of CPUs /proc/stat counted.
	CPUs int `json:"cpus"`
	// Points holds one sample per second.
	Points []MachinePoint `json:"points"`
	// Summary condenses every point, those taken while the cluster started
	// and the keys were preloaded included; Run.Machine is the timeline's.
	Summary MachineSummary `json:"summary"`
}

// MachinePoint is one second of the machine, from /proc/stat and
// /proc/pressure/cpu. Shares are of all CPUs' time (busy, steal) or of
// wall time (wait), in [0, 1].
type MachinePoint struct {
	// AtMS is when the sample was taken; it covers the second before.
	AtMS float64 `json:"at_ms"`
	// BusyShare is the share of all CPUs' time spent running tasks (user,
	// nice, system, irq, softirq): 0.5 on two CPUs is one of them busy.
	BusyShare float64 `json:"busy_share"`
	// StealShare is the share of all CPUs' time the hypervisor ran
	// something else while a vCPU wanted to run.
	StealShare float64 `json:"steal_share"`
	// WaitShare is the share of the second in which at least one runnable
	// task waited for a CPU (the kernel's CPU pressure, "some"); absent
	// where the kernel has no pressure stall information.
	WaitShare *float64 `json:"wait_share,omitempty"`
}

// MachineSummary condenses machine points over a span.
type MachineSummary struct {
	Samples int `json:"samples"`
	// BusyMeanShare, StealMeanShare and WaitMeanShare are means of the
	// points' shares; the means of equal one-second points are the shares
	// over the span.
	BusyMeanShare  float64 `json:"busy_mean_share"`
	StealMeanShare float64 `json:"steal_mean_share"`
	// StealMaxShare is the largest one-second steal share.
	StealMaxShare float64  `json:"steal_max_share"`
	WaitMeanShare *float64 `json:"wait_mean_share,omitempty"`
	WaitMaxShare  *float64 `json:"wait_max_share,omitempty"`
}

// SummarizeMachine condenses the points stamped in (fromMS, toMS]; nil when
// none was.
func SummarizeMachine(points []MachinePoint, fromMS, toMS float64) *MachineSummary {
	var s MachineSummary
	var waitSum, waitMax float64
	waits := 0
	for _, p := range points {
		if p.AtMS <= fromMS || p.AtMS > toMS {
			continue
		}
		s.Samples++
		s.BusyMeanShare += p.BusyShare
		s.StealMeanShare += p.StealShare
		s.StealMaxShare = max(s.StealMaxShare, p.StealShare)
		if p.WaitShare != nil {
			waits++
			waitSum += *p.WaitShare
			waitMax = max(waitMax, *p.WaitShare)
		}
	}
	if s.Samples == 0 {
		return nil
	}
	n := float64(s.Samples)
	s.BusyMeanShare = RoundShare(s.BusyMeanShare / n)
	s.StealMeanShare = RoundShare(s.StealMeanShare / n)
	if waits > 0 {
		s.WaitMeanShare, s.WaitMaxShare = Ptr(RoundShare(waitSum/float64(waits))), Ptr(waitMax)
	}
	return &s
}

// RoundShare keeps a share to 0.01%: finer is below what the kernel's
// one-second tick counts resolve.
func RoundShare(v float64) float64 { return float64(int64(v*1e4+0.5)) / 1e4 }
