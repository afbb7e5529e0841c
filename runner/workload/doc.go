// Package workload is the load engine: it turns a workload (plan.WorkloadSpec)
// and one phase's load (plan.LoadSpec) into operations sent through a
// stores.Client, and records each as a metrics.Sample.
//
// Schedules are pure functions with no clock, in the manner of k6's
// executors: ClientSteps for closed-loop ramps, Arrivals for open-loop rates.
// The Engine only walks them. Closed loop is etcd benchmark's model: N
// workers, each sending its next request when the last returned. Open loop is
// wrk2's: requests are due on a timetable whatever the store does, and a
// request that has to wait for a free worker has its latency counted from its
// due time, so a stalled store shows up as latency rather than as fewer
// requests (coordinated omission).
//
// Keys, op kinds and values come from per-worker Generators seeded from the
// workload's seed, so a run is reproducible, and every written value is
// tagged with its writer and sequence number, so a history checker can tell
// writes apart.
package workload
