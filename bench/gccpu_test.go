package bench

import (
	"bufio"
	"bytes"
	"regexp"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// gcCPUMetric is the Go runtime's own estimate of the CPU its garbage
// collector has used (mark assists, mark workers, pauses), updated at the
// end of each collection. etcd's tool, a Go program too, reports the same
// estimate per collection under GODEBUG=gctrace=1, so the two tools' GC
// shares compare like with like; neither is the kernel's CPU time.
const gcCPUMetric = "/cpu/classes/gc/total:cpu-seconds"

// selfGC is this process's GC CPU estimate so far. A run that ends during
// a collection misses that collection's share.
func selfGC() time.Duration {
	s := []metrics.Sample{{Name: gcCPUMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

// withGCTrace returns env with gctrace=1 added to GODEBUG, keeping any
// settings already there.
func withGCTrace(env []string) []string {
	out := make([]string, 0, len(env)+1)
	// Of several GODEBUG entries exec keeps the last; within one, the
	// last setting of a name wins. Joined in order, they keep their say.
	var debug []string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			if v != "" {
				debug = append(debug, v)
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GODEBUG="+strings.Join(append(debug, "gctrace=1"), ","))
}

// gcTraceLine matches a gctrace line, "gc 12 @3.1s 2%: 0.02+1.1+0.01 ms
// clock, 0.05+0.3/0.9/1.2+0.03 ms cpu, 9->10->5 MB, 10 MB goal, 1 MB stacks,
// ...": the collection's number; the CPU of the pause before marking, of
// the marking by assists, by background workers and by idle processors, and
// of the pause after it; then the heap when the collection started and what
// it marked live (between them, the heap when it ended); and the stacks it
// scanned.
var gcTraceLine = regexp.MustCompile(`^gc (\d+) @[0-9.]+s \d+%: [^,]* ms clock, ([0-9.]+)\+([0-9.]+)/([0-9.]+)/([0-9.]+)\+([0-9.]+) ms cpu, (\d+)->\d+->(\d+) MB, \d+ MB goal, (\d+) MB stacks`)

// gcTraced is what GODEBUG=gctrace=1 said of one process's collections:
// what makes its collector cost what it does. Each collection marks what
// is live and scans every stack, and collections come as often as the
// process allocates what its GC percent lets the heap grow by.
//
// A line can be lost: the runtime writes it in pieces, and etcd's tool
// logs gRPC's INFO lines to the same stderr, which can land between them
// (a few of its first collections, while it dials). The collections are
// counted by their numbers, so a lost line is still counted; its CPU and
// heap are not.
type gcTraced struct {
	cpu      time.Duration // the CPU estimate of every collection read, summed
	cycles   int           // the last collection's number
	liveMB   int           // what the last collection marked live
	stacksMB int           // the most stack any collection scanned
	// allocMB is what the process allocated from its last forced
	// collection, if any, up to its last collection: the heap at each
	// collection's start less what the one before left live. The trace
	// rounds each down to a MiB.
	allocMB int
}

// tracedGC reads the gctrace lines in stderr.
func tracedGC(stderr []byte) gcTraced {
	var (
		g        gcTraced
		ms       float64
		prevLive int
	)
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		m := gcTraceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		for _, f := range m[2:7] {
			v, err := strconv.ParseFloat(f, 64)
			if err == nil {
				ms += v
			}
		}
		// The pattern admits only digits here.
		n, _ := strconv.Atoi(m[1])
		start, _ := strconv.Atoi(m[7])
		live, _ := strconv.Atoi(m[8])
		stacks, _ := strconv.Atoi(m[9])
		g.cycles = max(g.cycles, n)
		g.allocMB += max(start-prevLive, 0)
		// A collection the program asked for follows what it allocated
		// to ask for it: in ours, the heap grown into huge pages as it
		// starts (internal/gcbudget), address space it never touches,
		// which a collection before it may have counted too. What came
		// before is left out, a few MiB at most.
		if strings.HasSuffix(sc.Text(), "(forced)") {
			g.allocMB = 0
		}
		g.liveMB, g.stacksMB = live, max(g.stacksMB, stacks)
		prevLive = live
	}
	g.cpu = time.Duration(ms * float64(time.Millisecond))
	return g
}

// withoutGCTrace drops gctrace lines from a log shown when a process
// failed: they would crowd out why.
func withoutGCTrace(log string) string {
	var keep []string
	for line := range strings.SplitSeq(log, "\n") {
		if !strings.HasPrefix(line, "gc ") || !strings.Contains(line, " ms clock, ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// gcPerReq is the GC's share of the client's CPU per request, in
// microseconds.
func gcPerReq(m measurement) float64 { return perReq(m, us(m.gc)) }
