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
	debug := "gctrace=1"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			if v != "" {
				debug = v + "," + debug
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GODEBUG="+debug)
}

// gcTraceCPU matches the CPU part of a gctrace line, "gc 12 @3.1s 2%: 0.02+1.1+0.01
// ms clock, 0.05+0.3/0.9/1.2+0.03 ms cpu, ...": the pause before marking,
// the marking by assists, by background workers and by idle processors,
// and the pause after it.
var gcTraceCPU = regexp.MustCompile(`^gc \d+ @[0-9.]+s \d+%: [^,]* ms clock, ([0-9.]+)\+([0-9.]+)/([0-9.]+)/([0-9.]+)\+([0-9.]+) ms cpu`)

// tracedGC sums the GC CPU of every gctrace line in stderr.
func tracedGC(stderr []byte) time.Duration {
	var ms float64
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		m := gcTraceCPU.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		for _, f := range m[1:] {
			v, err := strconv.ParseFloat(f, 64)
			if err == nil {
				ms += v
			}
		}
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// gcPerReq is the GC's share of the client's CPU per request, in
// microseconds.
func gcPerReq(m measurement) float64 { return perReq(m, us(m.gc)) }
