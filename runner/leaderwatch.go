package runner

import (
	"context"
	"sync"
	"time"

	"github.com/coordlab/scenario/stores"
)

const (
	// fastPollInterval is how often every node is asked while who leads is
	// in doubt (see fastPoll): it bounds how late time_to_leader_ms can
	// see a new leader, where pollInterval would make it up to 100 ms.
	fastPollInterval = 10 * time.Millisecond
	// faultPollFor is how long a fault keeps the poll fast while the
	// leadership it found stays, at least (see holdFor).
	faultPollFor = 2 * time.Second
	// maxFastPoll bounds one stretch of fast polls: a cluster left without
	// a leader longer is asked at pollInterval again until one is seen.
	maxFastPoll = 30 * time.Second
	// nodePollTimeout bounds one node's answer. A node that does not
	// answer in it is taken as down from the question on.
	nodePollTimeout = 5 * pollInterval
)

// leaderState is who led the cluster at one moment, as the status polls
// saw it: leader is 0 when the nodes that answered named none of
// themselves, and unanswered says no node answered at all. doubt says that
// at this moment a node began to answer that it knows no leader
// (stores.NodeStatus.Electing) while another led: an election under way.
type leaderState struct {
	at         time.Time
	leader     int // 1-based
	term       uint64
	unanswered bool
	doubt      bool
}

// leaderWatch asks every node for its status on a loop of its own, every
// pollInterval, or every fastPollInterval while the leadership is in
// doubt, and hands the cluster's states to observe in time order.
//
// Each node is asked on its own so that one that hangs (paused, cut off)
// holds up no other: asked together, every poll of a run with a paused
// leader waited out that leader's timeout, and a new leader was seen up to
// 500 ms after it was elected.
type leaderWatch struct {
	poller  stores.Poller
	observe func(leaderState)
	wake    []chan struct{}

	mu    sync.Mutex
	merge *leaderMerge // made by run
	fast  fastPoll
}

// newLeaderWatch watches nodes through p. electionWindow is how long the
// cluster may take to campaign once its leader is lost
// (stores.Driver.ElectionWindow).
func newLeaderWatch(p stores.Poller, nodes int, electionWindow time.Duration, observe func(leaderState)) *leaderWatch {
	w := &leaderWatch{poller: p, observe: observe, wake: make([]chan struct{}, nodes)}
	w.fast.holdFor = holdFor(electionWindow)
	for i := range w.wake {
		w.wake[i] = make(chan struct{}, 1)
	}
	return w
}

// run polls every node until ctx is done. It is called once.
func (w *leaderWatch) run(ctx context.Context) {
	w.mu.Lock()
	first := time.Now()
	w.merge = newLeaderMerge(len(w.wake), first)
	w.mu.Unlock()
	var wg sync.WaitGroup
	for i := range w.wake {
		wg.Go(func() { w.pollNode(ctx, i, first) })
	}
	wg.Wait()
}

// pollNode asks node i (0-based), first at asked, until ctx is done.
func (w *leaderWatch) pollNode(ctx context.Context, i int, asked time.Time) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, nodePollTimeout)
		st := w.poller.PollNode(actx, i)
		cancel()
		if ctx.Err() != nil {
			return
		}
		t.Reset(time.Until(asked.Add(w.answered(i, st))))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.wake[i]:
		}
		// Timed under the lock, so that no state already handed over is
		// later than a question that could change it.
		w.mu.Lock()
		asked = time.Now()
		w.merge.ask(i, asked)
		w.mu.Unlock()
	}
}

// answered merges node i's answer and returns how long after its question
// to ask it again.
func (w *leaderWatch) answered(i int, st stores.NodeStatus) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.merge.answer(i, st)
	// Observed under the lock: the nodes' loops would otherwise hand
	// states over out of order, and the timeline drops older ones.
	for _, s := range w.merge.states() {
		w.fast.seen(s)
		w.observe(s)
	}
	return w.fast.interval(time.Now())
}

// faultActs makes the poll fast for a while and asks every node now. It
// is called as a fault is applied or undone, before it acts: that is when
// the leadership may move, and a transfer moves it without a moment of no
// leader that would make the poll fast by itself.
func (w *leaderWatch) faultActs() {
	w.mu.Lock()
	w.fast.hold(time.Now())
	w.mu.Unlock()
	for _, c := range w.wake {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// leader is the leader now by every node's latest answer (leaderMerge.latest),
// 0 if none is known.
func (w *leaderWatch) leader() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.merge == nil {
		return 0
	}
	return w.merge.latest()
}

// fastPoll decides when the nodes are asked every fastPollInterval: a
// stretch begins at a fault, at a state without a leader, or at a state
// where a node began to say it knows no leader while another leads (an
// election that may hand the leadership over with no moment without a
// leader, as a contested term does); it ends when a leader other than the
// one before it (or the same in a new term) is seen, when holdFor has
// passed since the last fault or doubt with the leader unchanged, or after
// maxFastPoll.
type fastPoll struct {
	holdFor      time.Duration // how long a fault or a doubt keeps it fast
	since, until time.Time     // since is zero outside a stretch
	// before is the leadership the stretch began with, cur the last seen.
	before, cur leaderState
}

func (f *fastPoll) begin(now time.Time) {
	if f.since.IsZero() {
		f.since, f.before = now, f.cur
	}
}

// holdFor is how long a fault keeps the poll fast: faultPollFor, or the
// cluster's election window and a poll's timeout if that is longer. A
// leader cut off by a partition still answers that it leads, and its
// successor is elected up to an election window after the cut with no
// moment without a leader that a poll could catch (etcd's pre-vote and
// vote take a couple of milliseconds on loopback); at the usual pace it
// was seen up to 75 ms late in runs cutting an etcd leader off.
func holdFor(electionWindow time.Duration) time.Duration {
	return min(max(faultPollFor, electionWindow+nodePollTimeout), maxFastPoll)
}

// hold keeps the poll fast for holdFor from at, within the stretch's
// maxFastPoll.
func (f *fastPoll) hold(at time.Time) {
	f.begin(at)
	f.until = later(f.until, earlier(at.Add(f.holdFor), f.since.Add(maxFastPoll)))
}

func (f *fastPoll) seen(s leaderState) {
	if s.leader == 0 {
		f.begin(s.at)
		f.until = f.since.Add(maxFastPoll)
		return
	}
	if s.doubt {
		// Before cur moves on: the stretch begins from the leadership
		// in doubt, so that a state that already has another leader
		// ends it at once.
		f.hold(s.at)
	}
	f.cur = s
	switch {
	case f.since.IsZero():
	case s.leader != f.before.leader || s.term != f.before.term:
		f.since, f.until = time.Time{}, time.Time{}
	case !s.at.Before(f.until):
		f.since = time.Time{}
	}
}

func (f *fastPoll) interval(now time.Time) time.Duration {
	if !f.since.IsZero() && now.Before(f.until) {
		return fastPollInterval
	}
	return pollInterval
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// leaderMerge puts the answers of nodes asked at their own pace together
// into states of the whole cluster, one at each answer, in time order.
//
// The state at a moment t takes, for each node, the question that covered
// t (the last asked at or before it): if that failed, the node was down at
// t; if not, the node answered, and it led at t if its last answer by t
// said so. A state is produced only once every question asked by t has
// its answer, so a node that hangs until its timeout delays the states
// after its question instead of being counted up from the answers it held
// back. A leader is thus timed by its own answer, a failure by its
// question (a node that never answers was gone from when it was asked).
type leaderMerge struct {
	asks [][]pollAsk // per node, in the order asked; the last may be open
	last time.Time   // the latest state's time
	// electing is, per node, whether its latest answer merged said it
	// knows no leader.
	electing []bool
	prev     int // the latest state's leader
}

type pollAsk struct {
	asked    time.Time
	at       time.Time // when the answer came; the question's time for a failure
	done     bool
	ok       bool
	leads    bool
	term     uint64
	electing bool
	names    int  // the leader it named, 0 for none
	merged   bool // the state at its at has been produced
}

// newLeaderMerge starts with every node asked at first.
func newLeaderMerge(nodes int, first time.Time) *leaderMerge {
	m := &leaderMerge{asks: make([][]pollAsk, nodes), electing: make([]bool, nodes)}
	for i := range m.asks {
		m.asks[i] = []pollAsk{{asked: first}}
	}
	return m
}

// ask records node i (0-based) asked at t, after its last answer.
func (m *leaderMerge) ask(i int, t time.Time) {
	m.asks[i] = append(m.asks[i], pollAsk{asked: t})
}

// answer records node i's answer to its last question.
func (m *leaderMerge) answer(i int, st stores.NodeStatus) {
	a := &m.asks[i][len(m.asks[i])-1]
	a.done, a.ok, a.at = true, st.Err == nil, a.asked
	if a.ok {
		a.leads, a.term, a.electing, a.names = st.IsLeader, st.Term, st.Electing, st.Leader
		if st.At.After(a.asked) {
			a.at = st.At
		}
	}
}

// states returns the states no open question can change any more, and
// forgets the answers no later state needs.
func (m *leaderMerge) states() []leaderState {
	var out []leaderState
	for {
		i, a := m.earliest()
		if a == nil || m.open(a.at) {
			break
		}
		a.merged = true
		m.last = a.at
		began := a.electing && !m.electing[i]
		m.electing[i] = a.electing
		if s, ok := m.stateAt(a.at); ok {
			s.doubt = began && s.leader != 0
			m.prev = s.leader
			out = append(out, s)
		}
	}
	m.forget()
	return out
}

// earliest is the answer not yet merged with the earliest time, and its
// node (0-based).
func (m *leaderMerge) earliest() (node int, e *pollAsk) {
	for i := range m.asks {
		for j := range m.asks[i] {
			if a := &m.asks[i][j]; a.done && !a.merged && (e == nil || a.at.Before(e.at)) {
				node, e = i, a
			}
		}
	}
	return node, e
}

// open reports whether a question asked at or before t is unanswered.
func (m *leaderMerge) open(t time.Time) bool {
	for _, asks := range m.asks {
		if a := asks[len(asks)-1]; !a.done && !a.asked.After(t) {
			return true
		}
	}
	return false
}

// stateAt is the state at t. It is false when no node is known to lead
// at t while a node that answers has not said anything yet (its first
// answer, or the first since it failed, is still on its way): it may be
// the leader. Counting it as not leading made every run whose followers
// answered first begin with an election, and a cluster paused whole come
// back without a leader for a moment.
//
// Of two nodes that say they lead, the one in the higher term does. In one
// term, the one more nodes name as their leader does, and then the one
// that led before: etcd and ZooKeeper report the term of the last entry
// they applied, so a new leader says the term before its election until
// its first entry is applied (820 ms once), while the leader it replaced,
// cut off, still says it leads in that term; the followers name the new
// one as soon as they hear from it.
func (m *leaderMerge) stateAt(t time.Time) (leaderState, bool) {
	s := leaderState{at: t, unanswered: true}
	unknown := false
	said := make([]*pollAsk, len(m.asks)) // each node's answer in force at t, nil for none
	for i, asks := range m.asks {
		covered, last := m.at(i, t)
		if covered < 0 || !asks[covered].ok {
			continue
		}
		s.unanswered = false
		if last < 0 || !asks[last].ok {
			unknown = true
			continue
		}
		said[i] = &asks[last]
	}
	s.leader, s.term = m.pick(said)
	return s, s.leader != 0 || !unknown
}

// pick is the leader (1-based, 0 for none) and its term among said, each
// node's answer in force, nil for a node down or not heard from: of two
// that say they lead, the higher term, then the one more nodes name, then
// the one that led before (see stateAt).
func (m *leaderMerge) pick(said []*pollAsk) (leader int, term uint64) {
	named := func(node int) int {
		n := 0
		for _, a := range said {
			if a != nil && a.names == node {
				n++
			}
		}
		return n
	}
	for i, a := range said {
		if a == nil || !a.leads || a.term < term {
			continue
		}
		if a.term == term && leader != 0 {
			// A tie: keep the one chosen if more nodes name it,
			// or as many and it led before.
			if n, k := named(i+1), named(leader); n < k || (n == k && leader == m.prev) {
				continue
			}
		}
		leader, term = i+1, a.term
	}
	return leader, term
}

// latest is the leader (1-based, 0 for none) by each node's latest answer,
// whatever questions are still open: a node whose last question failed
// counts as down, one that hangs by what it said before. It runs ahead of
// states, which wait for a hung node's question to time out (up to
// nodePollTimeout), and is what a fault that needs the leader now goes by:
// a leader handed over while a follower was paused was still the old one
// in the states when a kill of the leader fired 150 ms later.
func (m *leaderMerge) latest() int {
	said := make([]*pollAsk, len(m.asks))
	for i, asks := range m.asks {
		for j := len(asks) - 1; j >= 0; j-- {
			if asks[j].done {
				if asks[j].ok {
					said[i] = &asks[j]
				}
				break
			}
		}
	}
	leader, _ := m.pick(said)
	return leader
}

// at returns the indexes of node i's question that covered t and of its
// last answer by t, -1 for none.
func (m *leaderMerge) at(i int, t time.Time) (covered, said int) {
	covered, said = -1, -1
	for j, a := range m.asks[i] {
		if a.asked.After(t) {
			break
		}
		covered = j
		if a.done && !a.at.After(t) {
			said = j
		}
	}
	return covered, said
}

// forget drops each node's questions older than the ones the latest state
// took: states come in time order, so no later one reaches further back.
func (m *leaderMerge) forget() {
	if m.last.IsZero() {
		return
	}
	for i := range m.asks {
		covered, said := m.at(i, m.last)
		keep := min(covered, said)
		if said < 0 {
			keep = covered
		}
		if keep > 0 {
			m.asks[i] = append(m.asks[i][:0], m.asks[i][keep:]...)
		}
	}
}
