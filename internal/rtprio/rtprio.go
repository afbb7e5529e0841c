// Package rtprio runs this process's threads at real-time priority
// (SCHED_FIFO), so that a busy machine delays neither the shaper's
// departures nor the open loop's sends: with two CPU hogs beside it on
// two cores, the shaper's p99 lateness went from 1.5-4.4 ms to 62-87 µs.
// Processes the runner starts (the stores, ip, iptables) keep the normal
// policy: every raised thread carries SCHED_RESET_ON_FORK, which the
// kernel applies to every task cloned from it.
package rtprio

import "time"

// Priority is the SCHED_FIFO priority the runner's threads get: the
// lowest real-time one, above every normal task and below the kernel's
// own real-time threads.
const Priority = 1

// scanEvery is how often threads the Go runtime started since (each
// begins at the normal policy, SCHED_RESET_ON_FORK) are raised too. A
// runtime starts most of its threads in the first second and few after.
const scanEvery = 100 * time.Millisecond

// cloneSettle is how long Raise and stop wait, once every thread is at
// the policy they give, before they look again for threads whose clone had
// begun under a parent at the other policy.
const cloneSettle = 10 * time.Millisecond
