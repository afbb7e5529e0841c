package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// putCase is one load both tools generate: the same clients, connections,
// key and value sizes, keyspace and request count.
type putCase struct {
	name      string
	clients   int
	conns     int
	total     int   // puts per run of etcd's tool
	keySize   int   // bytes
	valueSize int   // bytes
	keyspace  int64 // distinct keys, written in sequence
	// rate holds both tools to this many puts a second (etcd's tool's
	// --rate, our open loop); 0 lets them go as fast as the cluster
	// answers.
	rate int
}

// measurement is one run of one tool.
type measurement struct {
	requests int64         // puts that succeeded
	failed   int64         // puts that failed
	elapsed  time.Duration // from the first send to the last answer
	rps      float64       // successful puts per second of elapsed
	p50, p99 time.Duration
	// usage is the client's: for etcd's tool, and for ours in a fresh
	// process (runFresh), its whole process's, which starts with an empty
	// heap; for ours with -fresh-process=false, the benchmark process's
	// over the run, its heap handed back to the OS before (runOnce). Client
	// and cluster share the cores, so a client that needs less CPU leaves
	// more for etcd.
	usage
	// gc is the Go runtime's estimate of the part of its CPU its garbage
	// collector used (see gcCPUMetric).
	gc time.Duration
	// runCPU and runFaults are, for ours in a fresh process, the CPU and
	// page faults of the run alone, without the process's start, its
	// dial and its exit; zero for the other runs.
	runCPU    time.Duration
	runFaults int64
	// cluster is what the members used over the run, summed (cluster.use).
	cluster clusterUse
	// heap is what the process's gctrace said of its collections, for a
	// whole process (etcd's tool, ours in a fresh process); zero otherwise.
	heap gcTraced
}

// runTheirs runs `benchmark put` against the endpoint at addr and parses its
// summary. --precise keeps the full precision of its numbers; the progress
// bar on stdout is skipped by the parser, and gRPC's log on stderr is only
// shown when the tool fails.
func runTheirs(ctx context.Context, bin, addr string, c putCase) (measurement, error) {
	args := []string{
		"--endpoints=" + addr,
		"--clients=" + strconv.Itoa(c.clients),
		"--conns=" + strconv.Itoa(c.conns),
		"--precise",
		"put",
		"--total=" + strconv.Itoa(c.total),
		"--key-size=" + strconv.Itoa(c.keySize),
		"--val-size=" + strconv.Itoa(c.valueSize),
		"--key-space-size=" + strconv.FormatInt(c.keyspace, 10),
		"--sequential-keys",
	}
	if c.rate > 0 {
		args = append(args, "--rate="+strconv.Itoa(c.rate))
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = withGCTrace(os.Environ())
	if err := cmd.Run(); err != nil {
		return measurement{}, fmt.Errorf("etcd benchmark %s: %w\n%s", strings.Join(args, " "), err, lastLines(withoutGCTrace(stderr.String()), 20))
	}
	m, err := parseTheirs(stdout.Bytes())
	if err != nil {
		return measurement{}, fmt.Errorf("etcd benchmark %s: %w", strings.Join(args, " "), err)
	}
	// The tool reports failed requests only in an error histogram, if at
	// all; a short count is how we notice them.
	m.failed = int64(c.total) - m.requests
	m.usage = childUsage(cmd.ProcessState)
	m.heap = tracedGC(stderr.Bytes())
	m.gc = m.heap.cpu
	return m, nil
}

// parseTheirs reads the summary that etcd's pkg/report prints:
//
//	Summary:
//	  Total:	0.65387409 secs.
//	  ...
//	  Requests/sec:	764.673211015289
//	...
//	Latency distribution:
//	  50% in 0.001008479 secs.
//	  99% in 0.007126767 secs.
//
// requests is derived as Requests/sec × Total, which is how the tool
// computes its rate (successful requests over the whole run).
func parseTheirs(out []byte) (measurement, error) {
	var (
		m                                  measurement
		haveTotal, haveRPS, have50, have99 bool
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "Total:"):
			d, err := parseSecs(strings.TrimPrefix(line, "Total:"))
			if err != nil {
				return m, fmt.Errorf("summary line %q: %w", line, err)
			}
			m.elapsed, haveTotal = d, true
		case strings.HasPrefix(line, "Requests/sec:"):
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, "Requests/sec:")), 64)
			if err != nil {
				return m, fmt.Errorf("summary line %q: %w", line, err)
			}
			m.rps, haveRPS = v, true
		case strings.HasPrefix(line, "50% in "), strings.HasPrefix(line, "99% in "):
			pct, rest, _ := strings.Cut(line, " in ")
			d, err := parseSecs(rest)
			if err != nil {
				return m, fmt.Errorf("latency line %q: %w", line, err)
			}
			if pct == "50%" {
				m.p50, have50 = d, true
			} else {
				m.p99, have99 = d, true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("read output: %w", err)
	}
	if !haveTotal || !haveRPS || !have50 || !have99 {
		return m, errors.New("output lacks a Total, Requests/sec, 50% or 99% line; did the tool's report format change?")
	}
	m.requests = int64(math.Round(m.rps * m.elapsed.Seconds()))
	return m, nil
}

// parseSecs parses "0.001008479 secs." as a duration.
func parseSecs(s string) (time.Duration, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), "secs.")
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(math.Round(v * float64(time.Second))), nil
}

// lastLines keeps the end of a log, where a failing tool says why.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
