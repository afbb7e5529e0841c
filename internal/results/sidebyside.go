package results

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// WriteSideBySide writes one table per phase comparing runs of the same
// scenario (the points of a sweep): a row per run with its point, store,
// throughput, each op's p50 and p99, errors, availability, the longest
// time to a first write after a fault, elections and how many checks
// passed. Runs that lack a phase leave its row out.
func WriteSideBySide(w io.Writer, runs []*Results) error {
	sw := &summaryWriter{w: w}
	runs = PerCluster(runs)
	for _, phase := range PhaseNames(runs) {
		sw.sideBySide(phase, runs)
	}
	if sw.err != nil {
		return fmt.Errorf("write comparison: %w", sw.err)
	}
	return nil
}

// PerCluster gives each cluster of a run with several clusters a row of
// its own: its phases, store named with the cluster, the run's point and
// checks. Runs of one cluster are kept as they are.
func PerCluster(runs []*Results) []*Results {
	var out []*Results
	for _, r := range runs {
		if len(r.Clusters) == 0 {
			out = append(out, r)
			continue
		}
		for _, c := range r.Clusters {
			cr := *r
			cr.Clusters = nil
			cr.Phases, cr.Run, cr.Leader, cr.Resources, cr.Correctness = c.Phases, c.Run, c.Leader, c.Resources, c.Correctness
			cr.Backend = map[string]string{"store": c.Name + ": " + c.Store, "provider": c.Provider}
			out = append(out, &cr)
		}
	}
	return out
}

// PhaseNames lists every run's phases in first-seen order.
func PhaseNames(runs []*Results) []string {
	var names []string
	for _, r := range runs {
		for _, p := range r.Phases {
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	}
	return names
}

func (s *summaryWriter) sideBySide(phase string, runs []*Results) {
	type line struct {
		point, store string
		p            *Phase
		r            *Results
	}
	var lines []line
	var ops []string
	wPoint, wStore := len("point"), len("store")
	for i, r := range runs {
		p := findPhase(r, phase)
		if p == nil {
			continue
		}
		l := line{point: PointLabel(r, i), store: r.Backend["store"], p: p, r: r}
		wPoint, wStore = max(wPoint, len(l.point)), max(wStore, len(l.store))
		for _, op := range p.Ops {
			if !slices.Contains(ops, op.Op) {
				ops = append(ops, op.Op)
			}
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return
	}
	s.printf("phase %s\n", phase)
	s.printf("%-*s  %-*s %9s", wPoint, "point", wStore, "store", "ops/s")
	for _, op := range ops {
		s.printf(" %9s %9s", op+" p50", op+" p99")
	}
	fsync := false
	for _, l := range lines {
		_, ok := l.p.Server["fsync"]
		fsync = fsync || ok
	}
	if fsync {
		s.printf(" %14s", "server fsync")
	}
	s.printf(" %8s %8s %10s %9s %6s\n", "errors", "avail", "failover", "elections", "checks")
	for _, l := range lines {
		s.printf("%-*s  %-*s %9.1f", wPoint, l.point, wStore, l.store, l.p.Total.Throughput)
		for _, op := range ops {
			p50, p99 := math.NaN(), math.NaN()
			if st := findOp(l.p.Ops, op); st != nil && st.Latency != nil {
				p50, p99 = st.Latency.P50MS, st.Latency.P99MS
			}
			s.printf(" %9s %9s", fmtMS(p50), fmtMS(p99))
		}
		if fsync {
			s.printf(" %14s", serverDuration(l.p.Server["fsync"]))
		}
		s.printf(" %8d %8s %10s %9d %6s\n", l.p.Total.Errors, fmtRatio(l.p.Availability), worstFailover(l.p), l.p.Elections, checksPassed(l.r))
	}
	s.printf("latencies in ms; failover = the longest time from a fault to the first write sent after it that succeeded")
	if fsync {
		s.printf("; server fsync = the store's own, summed over its members (etcd reports quantiles, ZooKeeper and Consul a mean)")
	}
	s.printf("\n\n")
}

// serverDuration is a server metric's headline duration: a histogram's
// p99, else a summary's mean, named.
func serverDuration(st ServerStat) string {
	if v, ok := st.Values["p99"]; ok {
		return fmtMS(v) + " p99"
	}
	if v, ok := st.Values["mean"]; ok {
		return fmtMS(v) + " mean"
	}
	return "-"
}

func findPhase(r *Results, name string) *Phase {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

func findOp(ops []OpStats, op string) *OpStats {
	for i := range ops {
		if ops[i].Op == op {
			return &ops[i]
		}
	}
	return nil
}

// PointLabel names a run by its sweep point ("election=1s heartbeat=100ms"),
// else by its position i (from 0) among runs, else, with i < 0, "".
func PointLabel(r *Results, i int) string {
	if len(r.Point) == 0 {
		if i < 0 {
			return ""
		}
		return fmt.Sprintf("run %d", i+1)
	}
	parts := make([]string, len(r.Point))
	for j, p := range r.Point {
		parts[j] = p.Variable + "=" + p.Value
	}
	return strings.Join(parts, " ")
}

// worstFailover is the phase's failover time: already the worst over its
// faults (see AddFailover).
func worstFailover(p *Phase) string {
	if p.FailoverTimeMS == nil {
		return "-"
	}
	return fmtDuration(*p.FailoverTimeMS)
}

func checksPassed(r *Results) string {
	passed := 0
	for _, c := range r.Checks {
		if c.Passed {
			passed++
		}
	}
	return fmt.Sprintf("%d/%d", passed, len(r.Checks))
}
