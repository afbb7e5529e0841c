package metrics

import (
	"sync"
	"time"

	"github.com/coordlab/scenario/internal/results"
)

// LeaderTimeline records who led the cluster over time, as seen by a
// periodic status poll (every 100 ms in the runner). Only changes are kept,
// plus the time of the latest poll, so its size is the number of changes.
// It is safe for concurrent use.
type LeaderTimeline struct {
	mu       sync.Mutex
	changes  []leaderChange
	lastSeen time.Duration
	// known is the last state that had a leader; an election is a move to a
	// leader state that differs from it.
	known leaderChange
}

type leaderChange struct {
	at       time.Duration
	leader   int
	term     uint64
	election bool
	// unanswered: no node answered the poll, so who led is unknown. An
	// overloaded cluster or one with every node paused looks like this,
	// and counting it as "no leader" reported outages that were not.
	unanswered bool
}

// NewLeaderTimeline returns an empty timeline.
func NewLeaderTimeline() *LeaderTimeline { return &LeaderTimeline{} }

// ObserveLeader records one poll: at is the offset from the run's base time,
// leader the 1-based node that leads (0 for none), term the store's term (0
// when unknown). Polls must come in time order; an older one is ignored.
//
// A change to a leader counts as an election when the leader differs from
// the last leader seen, or when the term does after a state without that
// leader, so that A -> none -> A in one term (a poll that failed) is not an
// election, while A re-elected in a new term is. A leader whose term rises
// while it is seen leading throughout is one leadership: etcd reports the
// term of its last applied entry and ZooKeeper the epoch of its last
// transaction, so a new leader's term catches up with its election only
// once its first entry is applied (820 ms after one election, which was
// counted twice). The leader seen by the first poll is not an election: it
// predates the run.
func (l *LeaderTimeline) ObserveLeader(at time.Duration, leader int, term uint64) {
	l.observe(leaderChange{at: at, leader: leader, term: term})
}

// ObserveUnanswered records a poll that no node answered: the state is
// unknown, neither a leader nor its absence. It is not an election either
// way: A -> unanswered -> A in one term is the same leadership.
func (l *LeaderTimeline) ObserveUnanswered(at time.Duration) {
	l.observe(leaderChange{at: at, unanswered: true})
}

func (l *LeaderTimeline) observe(c leaderChange) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.changes); n > 0 {
		if c.at < l.lastSeen {
			return
		}
		l.lastSeen = c.at
		if last := l.changes[n-1]; last.leader == c.leader && last.term == c.term && last.unanswered == c.unanswered {
			return
		}
	}
	l.lastSeen = c.at
	if c.leader != 0 {
		n := len(l.changes)
		c.election = n > 0 && (l.known.leader != c.leader || (l.known.term != c.term && l.changes[n-1].leader != c.leader))
		l.known = c
	}
	l.changes = append(l.changes, c)
}

// Observations returns the changes, in time order, in the schema's form.
func (l *LeaderTimeline) Observations() []results.LeaderObservation {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]results.LeaderObservation, len(l.changes))
	for i, c := range l.changes {
		out[i] = results.LeaderObservation{AtMS: results.MS(c.at), Leader: c.leader, Term: c.term, Unanswered: c.unanswered}
	}
	return out
}

// Elections counts the elections observed in [from, to).
func (l *LeaderTimeline) Elections(from, to time.Duration) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.changes {
		if c.election && c.at >= from && c.at < to {
			n++
		}
	}
	return n
}

// NoLeader returns how long within [from, to) the cluster was observed
// without a leader: some node answered, none led. A state lasts from the
// poll that saw it to the next change; the last one lasts until the latest
// poll. Time before the first poll is unknown and not counted.
func (l *LeaderTimeline) NoLeader(from, to time.Duration) time.Duration {
	return l.timeIn(from, to, func(c leaderChange) bool { return c.leader == 0 && !c.unanswered })
}

// Unanswered returns how long within [from, to) no node answered the
// leader poll, counted as NoLeader counts.
func (l *LeaderTimeline) Unanswered(from, to time.Duration) time.Duration {
	return l.timeIn(from, to, func(c leaderChange) bool { return c.unanswered })
}

func (l *LeaderTimeline) timeIn(from, to time.Duration, in func(leaderChange) bool) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var total time.Duration
	for i, c := range l.changes {
		if !in(c) {
			continue
		}
		end := l.lastSeen
		if i+1 < len(l.changes) {
			end = l.changes[i+1].at
		}
		if lo, hi := max(c.at, from), min(end, to); hi > lo {
			total += hi - lo
		}
	}
	return total
}

// FirstLeaderAfter returns how long after t a leader other than excluding
// was first observed (0 when one was already in place at t). Pass the node a
// fault removed as excluding, or 0 to accept any leader. ok is false when no
// such leader was seen, and when excluding led again, after a state without
// it, before any other did: the fault elected nobody (a leader paused for
// less than an election took, say), and the next election is another
// fault's. A run whose pause of a Consul leader was sat out reported the
// next pause's election, 8 s later, as this one's.
func (l *LeaderTimeline) FirstLeaderAfter(t time.Duration, excluding int) (d time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	gone := false // a state without excluding leading was seen
	for i, c := range l.changes {
		// The state in effect at t is the last change at or before it.
		if c.at <= t && i+1 < len(l.changes) && l.changes[i+1].at <= t {
			continue
		}
		switch {
		case c.leader != 0 && c.leader != excluding:
			return max(c.at-t, 0), true
		case c.leader != excluding:
			gone = true
		case excluding != 0 && gone:
			return 0, false
		}
	}
	return 0, false
}
