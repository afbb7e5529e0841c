// Package gcbudget lets a process's garbage collector run less often while
// its live heap is small, by letting the heap grow by a headroom of memory
// over what is live rather than by Go's default 100% of it. The headroom
// follows the allocation rate, up to a cap: a process that allocates little
// keeps Go's default.
//
// Why: the runner is a load generator. Its store clients (gRPC above all)
// allocate a few kilobytes per request, and at Go's default a collection
// runs every time the heap doubles. A CPU profile of the 1000-client put
// benchmark put a quarter of the runner's CPU in the collector: marking,
// assists taken from the workers, and the preemptions that scan a thousand
// goroutine stacks. Every cycle costs about the same whatever the garbage
// it frees, so fewer cycles on a small heap buy CPU with memory the
// machine has. The memory is not free either: each page of it is faulted
// in once, which on a paravirtualised machine costs far more than on bare
// metal, so the headroom is taken only while the collector costs a
// noticeable share of the CPU (Worth), and the heap grows into memory the
// kernel backs with transparent huge pages, one fault per 2 MiB instead of
// per 4 KiB (growHeapHuge).
package gcbudget

import (
	"context"
	"os"
	"path"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/coordlab/scenario/internal/proc"
)

const (
	// DefaultHeadroom is the most the heap may grow over the live heap
	// before a collection: 128 MiB. At 5,000 requests a second of a few
	// kilobytes each, that is a collection every few seconds instead of
	// several a second, for less memory than one etcd member takes.
	DefaultHeadroom = 128 << 20
	// collectEvery is the spacing of collections the headroom aims at:
	// it is what the process allocated in that long at the rate of the
	// last interval, up to the cap. Headroom beyond that buys no fewer
	// collections in a run of minutes, and costs CPU to fault in: every
	// first touch of a page is a page fault, and 128 MiB of them took 0.2
	// s of CPU on this project's 2-core VMs, 4% of the CPU of a 20-second
	// one-client run.
	collectEvery = 4 * time.Second
	// maxPercent bounds the percent on a nearly empty heap, where the
	// headroom alone would ask for thousands.
	maxPercent = 1000
	// defaultPercent is Go's own, and the floor: a large live heap is
	// collected at least as often as without this package.
	defaultPercent = 100
	// worthShare is the share of the process's busy CPU that its collector
	// would take at Go's default from which the headroom is worth its
	// pages, and dropShare the share under which a headroom in force is
	// given up (apart, so that a process near the mark does not switch
	// every interval). Every page of headroom is faulted in once: on the
	// paravirtualised machines this project runs on a minor fault took
	// 11-16 µs of CPU (BenchmarkFreshPages in bench/), so the 128 MiB cap
	// costs about 0.4 s. At one client the collector took 2% of the
	// runner's CPU and the headroom's faults cost more than it saved (CPU
	// per request 7% over Go's default, page faults per request 0.7-1.2
	// against 0.2); under 1000 clients it took a third and more, and the
	// headroom saved 6-10% of the CPU per request in runs of 30 s.
	worthShare = 0.05
	dropShare  = 0.025
)

// Worth reports whether a headroom is worth having, given the share of the
// process's busy CPU its collector took over the last interval at GC
// percent current, and whether one is in force (on). Collections come as
// often as the heap grows by percent of what is live, so at Go's default
// the collector would have taken share × current/100.
func Worth(share float64, current int, on bool) bool {
	atDefault := share * float64(current) / defaultPercent
	if on {
		return atDefault >= dropShare
	}
	return atDefault >= worthShare
}

// Percent is the GC percent that lets a heap with live bytes grow by
// headroom before its next collection, between Go's default of 100 and
// maxPercent.
func Percent(live, headroom uint64) int {
	if headroom == 0 {
		return defaultPercent
	}
	if live == 0 {
		return maxPercent
	}
	p := headroom * 100 / live
	return int(min(max(p, defaultPercent), maxPercent))
}

// Run keeps the GC percent at Percent(live heap, headroom), where headroom
// is what the process allocates in collectEvery at the rate it allocated
// over the last interval, at most maxHeadroom, while the collector's share
// of the CPU makes it worth it (Worth), and at Go's default otherwise. It
// reads them first after interval/firstLookSooner, then after waits that
// double up to interval (nextWait), until ctx is done, then restores the
// percent it found. First it grows the heap by maxHeadroom of memory
// advised to be backed by transparent huge pages (growHeapHuge), unless
// GODEBUG has disablethp=1. It does nothing when the GOGC environment
// variable is set: a user's choice stands.
func Run(ctx context.Context, maxHeadroom uint64, interval time.Duration) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	// In a container with a memory limit (a load-worker pod), a quarter of
	// the limit at most: the headroom is garbage, and must not be what
	// gets the process killed.
	if l := cgroupMemoryLimit(os.ReadFile); l > 0 {
		maxHeadroom = min(maxHeadroom, l/4)
	}
	// The heap grows into huge pages from here on, whether or not a
	// headroom is taken: the runtime allocates from the lowest free
	// address, so a small heap touches only the start of the range.
	if !disableTHP(os.Getenv("GODEBUG")) {
		growHeapHuge(maxHeadroom)
	}
	samples := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/allocs:bytes"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}, {Name: "/cpu/classes/idle:cpu-seconds"},
	}
	read := func() (live, allocs uint64, gc, busy float64) {
		metrics.Read(samples)
		return uint64Of(samples[0].Value), uint64Of(samples[1].Value),
			float64Of(samples[2].Value), float64Of(samples[3].Value) - float64Of(samples[4].Value)
	}
	_, allocated, gcCPU, busyCPU := read()
	last := time.Now()
	on := false
	// Go's default until an allocation rate is known.
	current := defaultPercent
	was := debug.SetGCPercent(current)
	defer debug.SetGCPercent(was)
	wait := interval / firstLookSooner
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wait = nextWait(wait, interval)
		t.Reset(wait)
		live, allocs, gc, busy := read()
		now := time.Now()
		headroom := Headroom(allocs-allocated, now.Sub(last), maxHeadroom)
		// The runtime's CPU classes are estimates that it brings up to
		// date at each collection; an interval without one keeps the last
		// decision.
		if busy > busyCPU {
			on = Worth((gc-gcCPU)/(busy-busyCPU), current, on)
		}
		if !on {
			headroom = 0
		}
		allocated, last, gcCPU, busyCPU = allocs, now, gc, busy
		// Setting the percent takes the heap lock; skip changes under a
		// tenth, which move the next collection by little.
		if p := Percent(live, headroom); p*10 < current*9 || p*10 > current*11 {
			debug.SetGCPercent(p)
			current = p
		}
	}
}

// firstLookSooner is how much sooner than its interval Run first looks.
// A load that starts with the process (each run of the put benchmark, a
// load-worker pod) ran its first second at Go's default. Held to 6,000
// puts a second, the benchmark's 10-second process then made 12
// collections where it makes 9 looking sooner, and its collector took 5.3
// µs of CPU a request against 3.2: the first second's collections, on a
// heap still growing, had cost nearly as much as all the later ones.
const firstLookSooner = 8

// nextWait is how long Run waits after a wait of last: twice as long, up
// to interval. From interval/firstLookSooner, the first four looks come in
// under two intervals.
func nextWait(last, interval time.Duration) time.Duration {
	return max(min(2*last, interval), 1)
}

// disableTHP reports whether godebug (GODEBUG's value) turns off the
// runtime's transparent huge pages for the heap (disablethp=1), which then
// holds for the headroom too. The last setting of a name wins, as in the
// runtime.
func disableTHP(godebug string) bool {
	off := false
	for kv := range strings.SplitSeq(godebug, ",") {
		if name, value, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && name == "disablethp" {
			off = value == "1"
		}
	}
	return off
}

// Headroom is what the process allocates in collectEvery at the rate of
// allocated bytes over elapsed, at most maxHeadroom.
func Headroom(allocated uint64, elapsed time.Duration, maxHeadroom uint64) uint64 {
	if elapsed <= 0 {
		return 0
	}
	h := float64(allocated) * float64(collectEvery) / float64(elapsed)
	if h >= float64(maxHeadroom) {
		return maxHeadroom
	}
	return uint64(h)
}

func float64Of(v metrics.Value) float64 {
	if v.Kind() != metrics.KindFloat64 {
		return 0
	}
	return v.Float64()
}

func uint64Of(v metrics.Value) uint64 {
	if v.Kind() != metrics.KindUint64 {
		return 0
	}
	return v.Uint64()
}

// cgroupMemoryLimit is the memory limit of this process's control group
// (cgroup v2's memory.max, or v1's memory.limit_in_bytes), 0 if it has
// none or none can be read. read reads a file.
func cgroupMemoryLimit(read func(string) ([]byte, error)) uint64 {
	self, err := read("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	groups := proc.ParseCgroups(self)
	var files []string
	if p, ok := groups["memory"]; ok {
		files = append(files, path.Join("/sys/fs/cgroup/memory", p, "memory.limit_in_bytes"))
	}
	if p, ok := groups[""]; ok {
		files = append(files, path.Join("/sys/fs/cgroup", p, "memory.max"))
	}
	for _, file := range files {
		b, err := read(file)
		if err != nil {
			continue
		}
		// "max" (v2) and v1's page-rounded maximum int64 mean no limit.
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && n < 1<<60 {
			return n
		}
	}
	return 0
}
