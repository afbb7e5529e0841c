package runner

import (
	"fmt"
	"strings"
)

// UnsupportedError says that a valid scenario uses features this build of
// the runner cannot run yet, or that this machine or process cannot give
// (root for the network, blkio for a disk throttle, CAP_SYS_NICE for
// --realtime). Nothing has been started when it is returned.
type UnsupportedError struct {
	Features []string // one line each: what, and where it is used
}

func (e *UnsupportedError) Error() string {
	return "this scenario uses features the runner does not implement yet, or that this machine cannot give it:\n  - " +
		strings.Join(e.Features, "\n  - ")
}

// InfraError is a failure of the machinery rather than of the store under
// test: a binary that could not be built, a node that did not start, a
// cluster that did not elect a leader in time. It says where to look.
type InfraError struct {
	Cluster string
	Node    string // "" when not about one node
	Phase   string // "install", "startup", "preload" or a phase name
	Log     string // the node's log file, when there is one
	Tail    string // the last lines of that log
	Err     error
}

func (e *InfraError) Error() string {
	var b strings.Builder
	if e.Cluster != "" {
		fmt.Fprintf(&b, "cluster %q", e.Cluster)
	} else {
		b.WriteString("run") // about every cluster (the network, the workspace)
	}
	if e.Node != "" {
		fmt.Fprintf(&b, " node %s", e.Node)
	}
	if e.Phase != "" {
		fmt.Fprintf(&b, " (%s)", e.Phase)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	if e.Log != "" {
		fmt.Fprintf(&b, "\n  log: %s", e.Log)
	}
	if t := strings.TrimSpace(e.Tail); t != "" {
		b.WriteString("\n  last log lines:\n    ")
		b.WriteString(strings.ReplaceAll(t, "\n", "\n    "))
	}
	return b.String()
}

func (e *InfraError) Unwrap() error { return e.Err }
