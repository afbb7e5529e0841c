// Package process is the provider that runs each store node as a local OS
// process, and the bookkeeping that makes sure no node outlives its run.
//
// A Run is a directory, <StateDir>/runs/<id>/, that records its owner (pid
// and start time of the runner) and, per node, its data directory, its log
// and its pid. Every node runs in its own process group with EnvRunID=<id>
// in its environment. Three layers keep processes from leaking:
//
//   - Close stops every node (SIGTERM, SIGKILL after a grace period) and
//     reaps it. A node's whole process group dies with it.
//   - Pdeathsig: a runner killed with SIGKILL runs no code at all, so each
//     node asks the kernel to SIGKILL it when the runner's thread that started
//     it exits. Nodes are started from one thread locked for the life of the
//     run (see Run.spawnLoop for why that matters in Go).
//   - ReapStale, run at the next start: for runs whose owner is gone it kills
//     whatever still carries the run id in its environment (Pdeathsig only
//     reaches direct children) and removes the directory.
//
// Linux only: other systems get errors.ErrUnsupported from NewRun and
// ReapStale.
package process
