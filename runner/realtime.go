package runner

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/internal/rtprio"
)

// heavyShare is the share of the machine's CPUs, taken by the runner's
// mean CPU in a phase, from which --realtime is taking the cores from the
// stores rather than keeping other work off the runner: on two cores,
// light loads (an open loop of 100/s, a geo cluster's shaped links) took
// 19-37% of one core at real-time priority, while 1,000 closed-loop
// clients took 101-102% and halved etcd's throughput. A quarter of two
// cores is half of one; a real-time thread takes only the core it runs on,
// so on a larger machine the stores keep more of it at the same use.
// --busy-poll is held to the same mark: its spinning is CPU the stores
// share their cores with.
const heavyShare = 0.25

// heavyPhases names the phases in which the runner's mean CPU reached
// heavyShare of the machine's CPUs, each with its CPU, and returns the
// machine's CPUs and that bound in percent of a core.
func heavyPhases(res *results.Results) (heavy []string, cpus int, bound float64) {
	cpus = runtime.NumCPU()
	if res.Machine != nil && res.Machine.CPUs > 0 {
		cpus = res.Machine.CPUs
	}
	bound = heavyShare * float64(cpus) * 100
	for _, p := range res.Phases {
		if r, ok := p.Resources[results.RunnerNode]; ok && r.CPUMeanPercent >= bound {
			heavy = append(heavy, fmt.Sprintf("%s (%.0f%% of a core)", p.Name, r.CPUMeanPercent))
		}
	}
	return heavy, cpus, bound
}

// realtimeNote says that the runner ran at real-time priority, and names
// the phases in which it took so much of the machine that the stores'
// figures suffered from it rather than gained; heavy is empty when none
// did.
func realtimeNote(res *results.Results) (note string, heavy []string) {
	note = fmt.Sprintf("the runner's threads (shaper, load generator, collector) ran at real-time priority (SCHED_FIFO %d) during the timeline, the stores at the normal policy", rtprio.Priority)
	heavy, cpus, bound := heavyPhases(res)
	if len(heavy) > 0 {
		note += fmt.Sprintf("; in %s the runner took a quarter or more of the machine's %d CPUs (%.0f%% of a core) at that priority, which the stores then waited for: their throughput and latency there are likely worse than without --realtime (it halved etcd's throughput under 1,000 closed-loop clients on two CPUs), which is for light loads", strings.Join(heavy, ", "), cpus, bound)
	}
	return note, heavy
}

// busyPollNote says that the runner spun through the last window before
// each due time, and names the phases in which it took so much of the
// machine that the stores, sharing their cores with the spinning, may
// have done worse for it; heavy is empty when none did.
func busyPollNote(res *results.Results, window time.Duration) (note string, heavy []string) {
	note = fmt.Sprintf("the shaper's schedulers and the open loop's dispatchers spun through the last %v before each due time (--busy-poll) instead of sleeping through it", window)
	heavy, cpus, bound := heavyPhases(res)
	if len(heavy) > 0 {
		note += fmt.Sprintf("; in %s the runner took a quarter or more of the machine's %d CPUs (%.0f%% of a core), spinning included, which the stores shared their cores with: their throughput and latency there may be worse than without --busy-poll, which is for machines with cores to spare", strings.Join(heavy, ", "), cpus, bound)
	}
	return note, heavy
}
