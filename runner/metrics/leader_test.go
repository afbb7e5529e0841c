package metrics

import (
	"testing"
	"time"
)

// poll feeds a 100 ms status poll that sees each state for the given time.
type state struct {
	leader int // unanswered for a poll no node answered
	term   uint64
	dur    time.Duration
}

const unanswered = -1

func poll(l *LeaderTimeline, states ...state) {
	var at time.Duration
	for _, st := range states {
		for end := at + st.dur; at < end; at += 100 * ms {
			if st.leader == unanswered {
				l.ObserveUnanswered(at)
			} else {
				l.ObserveLeader(at, st.leader, st.term)
			}
		}
	}
}

func TestLeaderTimeline(t *testing.T) {
	tests := []struct {
		name          string
		states        []state
		from, to      time.Duration
		wantElections int
		wantNoLeader  time.Duration
		wantUnknown   time.Duration
		wantChanges   int
	}{
		{
			name:        "stable",
			states:      []state{{1, 2, 10 * s}},
			to:          10 * s,
			wantChanges: 1,
		},
		{
			name:          "kill leader, new one after 1.5 s",
			states:        []state{{1, 2, 3 * s}, {0, 2, 1500 * ms}, {2, 3, 5 * s}},
			to:            10 * s,
			wantElections: 1,
			wantNoLeader:  1500 * ms,
			wantChanges:   3,
		},
		{
			name:          "window clips the leaderless stretch",
			states:        []state{{1, 2, 3 * s}, {0, 2, 1500 * ms}, {2, 3, 5 * s}},
			from:          4 * s,
			to:            10 * s,
			wantElections: 1,
			wantNoLeader:  500 * ms,
			wantChanges:   3,
		},
		{
			name:         "failed poll is not an election",
			states:       []state{{1, 2, 3 * s}, {0, 0, 200 * ms}, {1, 2, 3 * s}},
			to:           10 * s,
			wantNoLeader: 200 * ms,
			wantChanges:  3,
		},
		{
			name:          "same node re-elected in a new term",
			states:        []state{{1, 2, 3 * s}, {0, 2, 100 * ms}, {1, 3, 3 * s}},
			to:            10 * s,
			wantElections: 1,
			wantNoLeader:  100 * ms,
			wantChanges:   3,
		},
		{
			// etcd reports the term of its last applied entry.
			name:        "a leader's term catching up while it leads is no election",
			states:      []state{{1, 2, 3 * s}, {1, 3, 3 * s}},
			to:          10 * s,
			wantChanges: 2,
		},
		{
			name:          "a new leader first seen in its predecessor's term: one election",
			states:        []state{{1, 2, 3 * s}, {2, 2, 800 * ms}, {2, 3, 3 * s}},
			to:            10 * s,
			wantElections: 1,
			wantChanges:   3,
		},
		{
			name:          "two elections, one outside the window",
			states:        []state{{1, 1, 2 * s}, {2, 2, 2 * s}, {3, 3, 2 * s}},
			from:          3 * s,
			to:            10 * s,
			wantElections: 1,
			wantChanges:   3,
		},
		{
			name:        "polls nobody answered are neither a leader nor none",
			states:      []state{{1, 2, 3 * s}, {unanswered, 0, 2 * s}, {1, 2, 3 * s}},
			to:          10 * s,
			wantUnknown: 2 * s,
			wantChanges: 3,
		},
		{
			name:          "unanswered, then leaderless, then a new leader",
			states:        []state{{1, 2, 3 * s}, {unanswered, 0, 1 * s}, {0, 2, 500 * ms}, {2, 3, 2 * s}},
			to:            10 * s,
			wantElections: 1,
			wantNoLeader:  500 * ms,
			wantUnknown:   1 * s,
			wantChanges:   4,
		},
		{
			name:          "no leader at first, then one",
			states:        []state{{0, 0, 1 * s}, {1, 1, 2 * s}},
			to:            10 * s,
			wantElections: 1,
			wantNoLeader:  1 * s,
			wantChanges:   2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLeaderTimeline()
			poll(l, tt.states...)
			if got := l.Elections(tt.from, tt.to); got != tt.wantElections {
				t.Errorf("elections = %d, want %d", got, tt.wantElections)
			}
			if got := l.NoLeader(tt.from, tt.to); got != tt.wantNoLeader {
				t.Errorf("no leader = %v, want %v", got, tt.wantNoLeader)
			}
			if got := l.Unanswered(tt.from, tt.to); got != tt.wantUnknown {
				t.Errorf("unanswered = %v, want %v", got, tt.wantUnknown)
			}
			if got := len(l.Observations()); got != tt.wantChanges {
				t.Errorf("observations = %d, want %d: %+v", got, tt.wantChanges, l.Observations())
			}
		})
	}
}

func TestFirstLeaderAfter(t *testing.T) {
	l := NewLeaderTimeline()
	// n1 leads; killed at 3 s; the poll still sees it until 3.2 s; nobody
	// until 4.5 s; n2 from then on.
	poll(l, state{1, 2, 3200 * ms}, state{0, 2, 1300 * ms}, state{2, 3, 3 * s})
	tests := []struct {
		name      string
		at        time.Duration
		excluding int
		want      time.Duration
		wantOK    bool
	}{
		{"new leader after kill", 3 * s, 1, 1500 * ms, true},
		{"any leader, one in place", 1 * s, 0, 0, true},
		{"any leader from the gap", 4 * s, 0, 500 * ms, true},
		{"excluded leader stays", 7 * s, 2, 0, false},
		{"before the first poll", -1 * s, 1, 5500 * ms, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := l.FirstLeaderAfter(tt.at, tt.excluding)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("FirstLeaderAfter(%v, %d) = %v, %v; want %v, %v", tt.at, tt.excluding, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestFirstLeaderAfterReturn holds FirstLeaderAfter to a fault that elected
// nobody: the removed leader led again first.
func TestFirstLeaderAfterReturn(t *testing.T) {
	// n1 leads; paused at 2 s and back at 3 s before anyone is elected;
	// paused again at 5 s, and n3 elected at 6 s.
	l := NewLeaderTimeline()
	poll(l, state{1, 2, 2 * s}, state{0, 2, 1 * s}, state{1, 2, 2 * s}, state{unanswered, 0, 1 * s}, state{3, 3, 1 * s})
	if d, ok := l.FirstLeaderAfter(2*s, 1); ok {
		t.Errorf("first pause: a new leader after %v; want none, n1 led again first", d)
	}
	if d, ok := l.FirstLeaderAfter(5*s, 1); !ok || d != 1*s {
		t.Errorf("second pause: %v, %t; want n3 after 1s", d, ok)
	}
	if d, ok := l.FirstLeaderAfter(2*s, 0); !ok || d != 1*s {
		t.Errorf("any leader after the first pause: %v, %t; want n1 again after 1s", d, ok)
	}
}

func TestCollectorLeaderPerPhase(t *testing.T) {
	c := newTestCollector(span("a", 0, 5*s), span("b", 5*s, 5*s))
	var at time.Duration
	for ; at < 6*s; at += 100 * ms {
		c.ObserveLeader(at, 1, 1)
	}
	for ; at < 8*s; at += 100 * ms {
		c.ObserveLeader(at, 0, 1)
	}
	for ; at <= 10*s; at += 100 * ms {
		c.ObserveLeader(at, 3, 2)
	}
	r := c.Results()
	if r.Phases[0].Elections != 0 || r.Phases[0].NoLeaderMS != 0 {
		t.Errorf("phase a: elections %d, no leader %v; want 0, 0", r.Phases[0].Elections, r.Phases[0].NoLeaderMS)
	}
	if r.Phases[1].Elections != 1 || r.Phases[1].NoLeaderMS != 2000 {
		t.Errorf("phase b: elections %d, no leader %v; want 1, 2000", r.Phases[1].Elections, r.Phases[1].NoLeaderMS)
	}
	if r.Run.Elections != 1 || r.Run.NoLeaderMS != 2000 {
		t.Errorf("run: elections %d, no leader %v; want 1, 2000", r.Run.Elections, r.Run.NoLeaderMS)
	}
	if len(r.Leader) != 3 || r.Leader[2].Leader != 3 || r.Leader[2].AtMS != 8000 {
		t.Errorf("leader timeline %+v", r.Leader)
	}
}
