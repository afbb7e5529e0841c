// Package metrics turns the operations a run sends into numbers: latency
// histograms per phase and op, per-second series, availability, write gaps,
// leader timeline and node resource samples.
package metrics

import "time"

// Sample is one finished operation. Times are offsets from the run's single
// monotonic base time (the start of the first phase).
type Sample struct {
	Workload string
	Op       string        // plan.OpPut, ...
	Intended time.Duration // when the op was due (open loop); equals Start in closed loop
	Start    time.Duration // when it was actually sent
	End      time.Duration // when it returned
	Class    string        // "" on success, else one of plan.ErrorClasses
	Write    bool          // the op writes (put, delete, txn)
	Node     int           // 1-based member that answered, 0 if unknown (stores.Result.Node)
	Queued   bool          // open loop: when it came due, every client was busy with an earlier op
}

// Sink receives samples from one worker goroutine. A Sink is not safe for
// concurrent use: give each worker its own.
type Sink interface {
	Record(Sample)
}
