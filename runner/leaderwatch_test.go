package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/stores"
)

// pollStep is one event of a scripted poll: node (1-based) asked at ms,
// or answering its last question at ms.
type pollStep struct {
	node     int
	ask      bool
	ms       int
	fail     bool
	leads    bool
	electing bool
	names    int // the leader the node names
	term     uint64
	expect   []string // the states the step lets out, as stateString has them
	// latest is the leader leaderMerge.latest gives after the step, -1
	// for none; 0 leaves it unchecked.
	latest int
}

func stateString(s leaderState, base time.Time) string {
	ms := s.at.Sub(base).Milliseconds()
	switch {
	case s.unanswered:
		return fmt.Sprintf("%d:unanswered", ms)
	case s.leader == 0:
		return fmt.Sprintf("%d:none", ms)
	}
	if s.doubt {
		return fmt.Sprintf("%d:n%d/%d+doubt", ms, s.leader, s.term)
	}
	return fmt.Sprintf("%d:n%d/%d", ms, s.leader, s.term)
}

func TestLeaderMerge(t *testing.T) {
	base := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	// Every script starts with the three nodes asked at 0.
	tests := []struct {
		name  string
		steps []pollStep
	}{
		{"a paused leader is down from the question it leaves unanswered, and the next leader is timed by its own answer", []pollStep{
			{node: 1, ms: 1, leads: true, term: 2},
			{node: 2, ms: 1, term: 2},
			{node: 3, ms: 2, term: 2, expect: []string{"1:n1/2", "1:n1/2", "2:n1/2"}},
			{node: 1, ask: true, ms: 100},
			{node: 2, ask: true, ms: 100},
			{node: 3, ask: true, ms: 100},
			{node: 2, ms: 101, term: 2},
			{node: 3, ms: 102, term: 2},
			{node: 2, ask: true, ms: 110, latest: 1},
			// Held back from the states, but the latest answers have it.
			{node: 2, ms: 111, leads: true, term: 3, latest: 2},
			// n1's question at 100 fails after its timeout, which lets
			// out every state held behind it.
			{node: 1, ms: 600, fail: true, expect: []string{"100:none", "101:none", "102:none", "111:n2/3"}, latest: 2},
		}},
		{"a leader handed over while a follower hangs is the latest at once, and in the states after the follower's timeout", []pollStep{
			{node: 1, ms: 1, leads: true, term: 2, names: 1},
			{node: 2, ms: 1, term: 2, names: 1},
			{node: 3, ms: 2, term: 2, names: 1, expect: []string{"1:n1/2", "1:n1/2", "2:n1/2"}, latest: 1},
			{node: 1, ask: true, ms: 100},
			{node: 2, ask: true, ms: 100},
			{node: 3, ask: true, ms: 100},
			{node: 1, ms: 101, leads: true, term: 2, names: 1},
			{node: 2, ms: 102, term: 2, names: 1, latest: 1},
			{node: 1, ask: true, ms: 110},
			{node: 2, ask: true, ms: 110},
			// The transfer: n2 leads, n1 names it.
			{node: 2, ms: 111, leads: true, term: 3, names: 2, latest: 2},
			{node: 1, ms: 112, term: 3, names: 2, latest: 2},
			{node: 3, ms: 600, fail: true, expect: []string{"100:n1/2", "101:n1/2", "102:n1/2", "111:n2/3", "112:n2/3"}, latest: 2},
		}},
		{"a slow leader stays leader while its answer is on its way", []pollStep{
			{node: 1, ms: 1, leads: true, term: 2},
			{node: 2, ms: 1, term: 2},
			{node: 3, ms: 1, term: 2, expect: []string{"1:n1/2", "1:n1/2", "1:n1/2"}},
			{node: 1, ask: true, ms: 100},
			{node: 2, ask: true, ms: 100},
			{node: 2, ms: 101, term: 2},
			{node: 1, ms: 300, leads: true, term: 2, expect: []string{"101:n1/2", "300:n1/2"}},
		}},
		{"a leader is seen from its own answer, not from a follower's before it", []pollStep{
			{node: 1, ms: 1},
			{node: 2, ms: 1},
			{node: 3, ms: 1, expect: []string{"1:none", "1:none", "1:none"}},
			{node: 1, ask: true, ms: 100},
			{node: 2, ask: true, ms: 100},
			{node: 2, ms: 105},
			{node: 1, ms: 110, leads: true, term: 1, expect: []string{"105:none", "110:n1/1"}},
		}},
		{"no node answering is unanswered from the question", []pollStep{
			{node: 1, ms: 500, fail: true},
			{node: 2, ms: 500, fail: true},
			{node: 3, ms: 501, fail: true, expect: []string{"0:unanswered", "0:unanswered", "0:unanswered"}, latest: -1},
			{node: 1, ask: true, ms: 501},
			{node: 1, ms: 502, leads: true, term: 4, expect: []string{"502:n1/4"}},
		}},
		{"a cluster paused whole comes back with its leader, not without one", []pollStep{
			{node: 1, ms: 1, leads: true, term: 2},
			{node: 2, ms: 1, term: 2},
			{node: 3, ms: 1, term: 2, expect: []string{"1:n1/2", "1:n1/2", "1:n1/2"}},
			{node: 1, ask: true, ms: 100},
			{node: 2, ask: true, ms: 100},
			{node: 3, ask: true, ms: 100},
			{node: 1, ms: 600, fail: true},
			{node: 2, ms: 600, fail: true},
			{node: 3, ms: 600, fail: true, expect: []string{"100:unanswered", "100:unanswered", "100:unanswered"}},
			{node: 1, ask: true, ms: 600},
			{node: 2, ask: true, ms: 600},
			{node: 3, ask: true, ms: 600},
			// Resumed at 900: the followers answer first.
			{node: 2, ms: 900, term: 2},
			{node: 3, ms: 901, term: 2},
			{node: 1, ms: 919, leads: true, term: 2, expect: []string{"919:n1/2"}},
		}},
		{"the highest term wins between two leaders", []pollStep{
			{node: 1, ms: 1, leads: true, term: 2},
			{node: 2, ms: 2, leads: true, term: 3},
			// Nothing is known at n3's question: n1 and n2 have not
			// answered by then.
			{node: 3, ms: 3, fail: true, expect: []string{"1:n1/2", "2:n2/3"}},
		}},
		{"two leaders in one reported term: the one the others name, else the one before", []pollStep{
			{node: 1, ms: 1, leads: true, term: 4, names: 1},
			{node: 2, ms: 1, term: 4, names: 1},
			{node: 3, ms: 2, term: 4, names: 1, expect: []string{"1:n1/4", "1:n1/4", "2:n1/4"}},
			{node: 1, ask: true, ms: 100},
			{node: 2, ask: true, ms: 100},
			{node: 3, ask: true, ms: 100},
			// n1 is cut off and still says it leads; n2 was elected in
			// term 5 but says the term of its last applied entry.
			{node: 1, ms: 101, leads: true, term: 4, names: 1},
			{node: 2, ms: 102, leads: true, term: 4, names: 2},
			{node: 3, ms: 103, term: 4, names: 2, expect: []string{"101:n1/4", "102:n1/4", "103:n2/4"}, latest: 2},
			{node: 3, ask: true, ms: 110},
			// n3 names nobody: as many name each, and n2 led before.
			{node: 3, ms: 111, term: 4, expect: []string{"111:n2/4"}},
			{node: 2, ask: true, ms: 120},
			{node: 2, ms: 121, leads: true, term: 5, names: 2, expect: []string{"121:n2/5"}},
		}},
		{"a node that begins to campaign while the leader leads is a doubt, once", []pollStep{
			{node: 1, ms: 1, leads: true, term: 2},
			{node: 2, ms: 1, term: 2},
			{node: 3, ms: 2, term: 2, expect: []string{"1:n1/2", "1:n1/2", "2:n1/2"}},
			{node: 1, ask: true, ms: 100},
			{node: 2, ask: true, ms: 100},
			{node: 3, ask: true, ms: 100},
			{node: 1, ms: 101, leads: true, term: 2},
			{node: 2, ms: 102, electing: true, term: 3},
			{node: 3, ms: 103, term: 2, expect: []string{"101:n1/2", "102:n1/2+doubt", "103:n1/2"}},
			{node: 2, ask: true, ms: 110},
			{node: 2, ms: 111, electing: true, term: 3, expect: []string{"111:n1/2"}},
			{node: 2, ask: true, ms: 120},
			{node: 2, ms: 121, leads: true, term: 3, expect: []string{"121:n2/3"}},
			// Down, then back without a leader: a doubt again.
			{node: 3, ask: true, ms: 200},
			{node: 3, ms: 700, fail: true, expect: []string{"200:n2/3"}},
			{node: 3, ask: true, ms: 700},
			{node: 3, ms: 701, electing: true, term: 3, expect: []string{"701:n2/3+doubt"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newLeaderMerge(3, base)
			checkLatest := func(k int, st pollStep) {
				if want := max(st.latest, 0); st.latest != 0 && m.latest() != want {
					t.Errorf("step %d (n%d at %d ms): latest n%d, want n%d", k, st.node, st.ms, m.latest(), want)
				}
			}
			for k, st := range tc.steps {
				if st.ask {
					m.ask(st.node-1, ms(st.ms))
					checkLatest(k, st)
					continue
				}
				ns := stores.NodeStatus{Node: st.node, IsLeader: st.leads, Electing: st.electing, Leader: st.names, Term: st.term, At: ms(st.ms)}
				if st.fail {
					ns = stores.NodeStatus{Node: st.node, Err: errors.New("deadline exceeded")}
				}
				m.answer(st.node-1, ns)
				var got []string
				for _, s := range m.states() {
					got = append(got, stateString(s, base))
				}
				if !slices.Equal(got, st.expect) {
					t.Errorf("step %d (n%d at %d ms): states %q, want %q", k, st.node, st.ms, got, st.expect)
				}
				checkLatest(k, st)
			}
		})
	}
}

// TestLeaderMergeForgets checks that a long run keeps only the questions
// that later states can still need.
func TestLeaderMergeForgets(t *testing.T) {
	base := time.Now()
	m := newLeaderMerge(3, base)
	for k := range 10_000 {
		at := base.Add(time.Duration(k) * 10 * time.Millisecond)
		for i := range 3 {
			if k > 0 {
				m.ask(i, at)
			}
			m.answer(i, stores.NodeStatus{Node: i + 1, IsLeader: i == 0, Term: 1, At: at.Add(time.Millisecond)})
		}
		if n := len(m.states()); n != 3 {
			t.Fatalf("round %d: %d states, want 3", k, n)
		}
	}
	for i, asks := range m.asks {
		if len(asks) > 2 {
			t.Errorf("node %d: %d questions kept", i+1, len(asks))
		}
	}
}

func TestFastPoll(t *testing.T) {
	base := time.Now()
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	leader := func(ms, n int, term uint64) leaderState { return leaderState{at: at(ms), leader: n, term: term} }
	none := func(ms int) leaderState { return leaderState{at: at(ms)} }
	doubt := func(ms, n int, term uint64) leaderState {
		return leaderState{at: at(ms), leader: n, term: term, doubt: true}
	}
	type step struct {
		fault bool
		state leaderState
		ms    int // when to ask for the interval, after the step
		want  time.Duration
	}
	tests := []struct {
		name   string
		window time.Duration // the cluster's election window
		steps  []step
	}{
		{"a steady leader is polled at the usual pace", 0, []step{
			{state: leader(0, 1, 2), ms: 0, want: pollInterval},
			{state: leader(100, 1, 2), ms: 100, want: pollInterval},
		}},
		{"a leader kill: fast from the fault until the next leader", 0, []step{
			{state: leader(0, 1, 2), ms: 0, want: pollInterval},
			{fault: true, ms: 1000, want: fastPollInterval},
			{state: none(1005), ms: 2500, want: fastPollInterval}, // past the fault's 2 s: no leader keeps it fast
			{state: leader(2600, 2, 3), ms: 2600, want: pollInterval},
		}},
		{"a transfer: fast until the new leader", 0, []step{
			{state: leader(0, 1, 2), ms: 0, want: pollInterval},
			{fault: true, ms: 1000, want: fastPollInterval},
			{state: leader(1010, 1, 2), ms: 1010, want: fastPollInterval},
			{state: leader(1030, 2, 3), ms: 1030, want: pollInterval},
		}},
		{"a leader re-elected in a new term ends the stretch", 0, []step{
			{state: leader(0, 1, 2), ms: 0, want: pollInterval},
			{state: none(100), ms: 100, want: fastPollInterval},
			{state: leader(900, 1, 3), ms: 900, want: pollInterval},
		}},
		{"a fault that leaves the leader in place: fast for faultPollFor", 0, []step{
			{state: leader(0, 1, 2), ms: 0, want: pollInterval},
			{fault: true, ms: 1000, want: fastPollInterval},
			{state: leader(2900, 1, 2), ms: 2900, want: fastPollInterval},
			{state: leader(3000, 1, 2), ms: 3000, want: pollInterval},
			// A later loss begins a stretch of its own.
			{state: none(5000), ms: 5000, want: fastPollInterval},
		}},
		{"a node that begins an election: fast until the new leader", 0, []step{
			{state: leader(0, 1, 2), ms: 0, want: pollInterval},
			{state: doubt(1000, 1, 2), ms: 1000, want: fastPollInterval},
			{state: leader(1010, 1, 2), ms: 1010, want: fastPollInterval},
			{state: leader(1150, 2, 3), ms: 1150, want: pollInterval},
		}},
		{"a doubt that comes to nothing: fast for faultPollFor", 0, []step{
			{state: leader(0, 1, 2), ms: 0, want: pollInterval},
			{state: doubt(1000, 1, 2), ms: 1000, want: fastPollInterval},
			{state: leader(2900, 1, 2), ms: 2900, want: fastPollInterval},
			{state: leader(3000, 1, 2), ms: 3000, want: pollInterval},
		}},
		{"a cut-off leader's successor, elected within the cluster's window after the fault", 4100 * time.Millisecond, []step{
			{state: leader(0, 1, 2), ms: 0, want: pollInterval},
			{fault: true, ms: 1000, want: fastPollInterval},
			{state: leader(4000, 1, 2), ms: 4000, want: fastPollInterval}, // past faultPollFor
			{state: leader(5590, 1, 2), ms: 5590, want: fastPollInterval},
			{state: leader(5600, 1, 2), ms: 5600, want: pollInterval},
		}},
		{"a doubt seen with the next leader already in office ends at once", 0, []step{
			{state: leader(0, 1, 2), ms: 0, want: pollInterval},
			{state: doubt(100, 2, 3), ms: 100, want: pollInterval},
		}},
		{"no leader for longer than maxFastPoll: the usual pace until one is seen", 0, []step{
			{state: leader(0, 1, 2), ms: 0, want: pollInterval},
			{state: none(100), ms: 100, want: fastPollInterval},
			{state: none(30_099), ms: 30_099, want: fastPollInterval},
			{state: none(30_100), ms: 30_100, want: pollInterval},
			{state: none(60_000), ms: 60_000, want: pollInterval},
			{fault: true, ms: 60_100, want: pollInterval},
			{state: leader(70_000, 2, 3), ms: 70_000, want: pollInterval},
			{state: none(80_000), ms: 80_000, want: fastPollInterval},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fastPoll{holdFor: holdFor(tc.window)}
			for k, s := range tc.steps {
				if s.fault {
					f.hold(at(s.ms))
				} else {
					f.seen(s.state)
				}
				if got := f.interval(at(s.ms)); got != s.want {
					t.Errorf("step %d: interval %v at %d ms, want %v", k, got, s.ms, s.want)
				}
			}
		})
	}
}

func TestHoldFor(t *testing.T) {
	for _, tc := range []struct{ window, want time.Duration }{
		{0, faultPollFor},
		{time.Second, faultPollFor},
		{4100 * time.Millisecond, 4600 * time.Millisecond}, // etcd, election timeout 2 s
		{time.Minute, maxFastPoll},
	} {
		if got := holdFor(tc.window); got != tc.want {
			t.Errorf("holdFor(%v) = %v, want %v", tc.window, got, tc.want)
		}
	}
}

// hangingPoller is a three-node cluster whose leader, n1, hangs from
// pause on (every question to it waits for its context), and whose n2
// leads from elected on.
type hangingPoller struct {
	pause, elected time.Time
	mu             sync.Mutex
	asks           []int // per node
}

func (p *hangingPoller) Poll(context.Context, time.Duration) []stores.NodeStatus { return nil }
func (p *hangingPoller) Close() error                                            { return nil }

func (p *hangingPoller) PollNode(ctx context.Context, i int) stores.NodeStatus {
	p.mu.Lock()
	p.asks[i]++
	p.mu.Unlock()
	now := time.Now()
	st := stores.NodeStatus{Node: i + 1, Term: 2}
	switch {
	case i == 0 && now.After(p.pause):
		<-ctx.Done()
		return stores.NodeStatus{Node: 1, Err: ctx.Err()}
	case i == 0:
		st.IsLeader = true
	case i == 1 && now.After(p.elected):
		st.IsLeader, st.Term = true, 3
	}
	return stores.Stamp(st)
}

// TestLeaderWatchPausedLeader runs the watch's loops against a leader that
// hangs: the new leader must be seen about when it is elected, not when
// the hung question times out, and the others asked fast meanwhile.
func TestLeaderWatchPausedLeader(t *testing.T) {
	start := time.Now()
	p := &hangingPoller{pause: start.Add(300 * time.Millisecond), elected: start.Add(1200 * time.Millisecond), asks: make([]int, 3)}
	var mu sync.Mutex
	var states []leaderState
	w := newLeaderWatch(p, 3, 0, func(s leaderState) {
		mu.Lock()
		defer mu.Unlock()
		states = append(states, s)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()
	time.Sleep(time.Until(p.pause))
	w.faultActs()
	time.Sleep(2200 * time.Millisecond)
	cancel()
	<-done

	mu.Lock()
	defer mu.Unlock()
	var seen time.Time
	for k, s := range states {
		if k > 0 && s.at.Before(states[k-1].at) {
			t.Fatalf("state %d at %v is before the one ahead of it at %v", k, s.at.Sub(start), states[k-1].at.Sub(start))
		}
		if s.leader == 2 && seen.IsZero() {
			seen = s.at
		}
	}
	if seen.IsZero() {
		t.Fatalf("n2 never seen leading: %d states", len(states))
	}
	// Asked every 10 ms from the fault on, n2 is seen within a few polls
	// of its election however long n1 hangs. A poll that waited on n1
	// would see it up to 500 ms late.
	if late := seen.Sub(p.elected); late < 0 || late > 60*time.Millisecond {
		t.Errorf("n2 seen leading %v after its election, want within 60 ms", late)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asks[1] < 50 {
		t.Errorf("n2 asked %d times in 2.5 s, want fast polls after the fault", p.asks[1])
	}
	t.Logf("n2 seen leading %v after its election; asked n1 %d, n2 %d, n3 %d times", seen.Sub(p.elected), p.asks[0], p.asks[1], p.asks[2])
}
