package results

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ClusterResults is one cluster's share of a run with several clusters:
// its phases and run over its own workloads, with its leader, elections,
// faults, nodes and correctness, as a one-cluster run reports them.
type ClusterResults struct {
	// Name is the cluster's name in the scenario.
	Name string `json:"name"`
	// Store is the store and its version, such as "etcd 3.5.17".
	Store string `json:"store"`
	// Provider runs its nodes (process, docker).
	Provider    string              `json:"provider"`
	Phases      []Phase             `json:"phases"`
	Run         Phase               `json:"run"`
	Leader      []LeaderObservation `json:"leader"`
	Resources   []NodeResources     `json:"resources"`
	Correctness *Correctness        `json:"correctness,omitempty"`
}

// Cluster returns the cluster named name, or nil.
func (r *Results) Cluster(name string) *ClusterResults {
	i := slices.IndexFunc(r.Clusters, func(c ClusterResults) bool { return c.Name == name })
	if i < 0 {
		return nil
	}
	return &r.Clusters[i]
}

// Combine makes the results of a run with several clusters from each
// cluster's results (as a one-cluster run would report it; names[i] is
// per[i]'s cluster). Each cluster's phases, leader, nodes and correctness
// are kept whole in Clusters. The run-wide figures keep what does not mix
// stores: every workload's statistics, series and fault, every node's
// resources, and counts of operations and errors; latency percentiles,
// availability and leader figures across stores would mean nothing, so
// they are left out there. The correctness verdict holds for the run when it
// holds for every cluster.
func Combine(names []string, per []*Results) *Results {
	if len(per) == 1 {
		return per[0]
	}
	out := *per[0]
	out.Phases = nil
	out.Run = Phase{}
	out.Series, out.Leader, out.Resources, out.Correctness, out.Registries, out.Locks, out.Watches, out.KeyWatches = nil, nil, nil, nil, nil, nil, nil, nil
	out.Clients, out.Seeds = map[string]map[string]string{}, map[string]int64{}
	out.Notes, out.Backend = map[string]string{}, map[string]string{}
	out.Clusters = nil
	for i, r := range per {
		out.Clusters = append(out.Clusters, ClusterResults{
			Name: names[i], Store: r.Backend["store"], Provider: r.Backend["provider"],
			Phases: r.Phases, Run: r.Run, Leader: r.Leader, Resources: r.Resources, Correctness: r.Correctness,
		})
		out.Series = append(out.Series, r.Series...)
		out.Resources = append(out.Resources, r.Resources...)
		out.Registries = append(out.Registries, r.Registries...)
		out.Locks = append(out.Locks, r.Locks...)
		out.Watches = append(out.Watches, r.Watches...)
		out.KeyWatches = append(out.KeyWatches, r.KeyWatches...)
		maps.Copy(out.Clients, r.Clients)
		maps.Copy(out.Seeds, r.Seeds)
		for k, v := range r.Notes {
			out.Notes[names[i]+"."+k] = v
		}
		for k, v := range r.Backend {
			if prev, ok := out.Backend[k]; ok && prev != v && !slices.Contains(strings.Split(prev, ", "), v) {
				v = prev + ", " + v
			}
			out.Backend[k] = v
		}
	}
	for i := range per[0].Phases {
		var ps []Phase
		for _, r := range per {
			ps = append(ps, r.Phases[i])
		}
		out.Phases = append(out.Phases, combinePhase(names, ps))
	}
	var runs []Phase
	for _, r := range per {
		runs = append(runs, r.Run)
	}
	out.Run = combinePhase(names, runs)
	out.Correctness = combineCorrectness(names, per)
	return &out
}

// combinePhase is one phase over every cluster: its workloads and faults,
// and operation counts.
func combinePhase(names []string, ps []Phase) Phase {
	// The clusters share the runner's machine and the phase's span, so
	// each saw the same machine.
	out := Phase{Name: ps[0].Name, StartMS: ps[0].StartMS, DurationMS: ps[0].DurationMS, Machine: ps[0].Machine}
	// So does the runner's process.
	if r, ok := ps[0].Resources[RunnerNode]; ok {
		out.Resources = map[string]ResourceSummary{RunnerNode: r}
	}
	out.Total.ErrorsBy = map[string]int64{}
	for i, p := range ps {
		out.Workloads = append(out.Workloads, p.Workloads...)
		for _, f := range p.Failovers {
			f.Cluster = names[i]
			out.Failovers = append(out.Failovers, f)
		}
		out.Elections += p.Elections
		out.Total.Count += p.Total.Count
		out.Total.OK += p.Total.OK
		out.Total.Errors += p.Total.Errors
		out.Total.Throughput += p.Total.Throughput
		out.Total.LateStarts += p.Total.LateStarts
		out.Total.LateQueued += p.Total.LateQueued
		for class, n := range p.Total.ErrorsBy {
			out.Total.ErrorsBy[class] += n
		}
	}
	if out.Total.Count > 0 {
		out.Total.ErrorRate = float64(out.Total.Errors) / float64(out.Total.Count)
	}
	return out
}

// combineCorrectness holds for the run when it holds for every cluster: a
// violation anywhere is one, and a cluster not checked leaves the run
// unchecked.
func combineCorrectness(names []string, per []*Results) *Correctness {
	out := &Correctness{}
	lin, linKnown := true, true
	var lost int64
	lostKnown := true
	var details []string
	for i, r := range per {
		c := r.Correctness
		if c == nil {
			linKnown, lostKnown = false, false
			details = append(details, fmt.Sprintf("cluster %s: not checked.", names[i]))
			continue
		}
		out.Operations += c.Operations
		switch {
		case c.Linearizable == nil:
			linKnown = false
		case !*c.Linearizable:
			lin = false
		}
		if c.LostWrites == nil {
			lostKnown = false
		} else {
			lost += *c.LostWrites
		}
		if c.Detail != "" {
			details = append(details, fmt.Sprintf("cluster %s: %s", names[i], c.Detail))
		}
	}
	if !lin || linKnown {
		out.Linearizable = &lin
	}
	if lostKnown {
		out.LostWrites = &lost
	}
	out.Detail = strings.Join(details, " ")
	return out
}
