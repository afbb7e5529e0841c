package zookeeper

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// StatusPoller asks every node of one ensemble for its role with the srvr
// four-letter word. A server answers a four-letter word on a connection of
// its own and closes it, so every poll opens one short connection per
// node, through the endpoint's Dial (zk.FLWSrvr would dial directly, which
// cannot reach a node in a network namespace). It holds no connections
// and is safe for concurrent use.
type StatusPoller struct {
	eps []stores.Endpoint
}

// NewStatusPoller returns a poller of the nodes at eps.
func NewStatusPoller(eps []stores.Endpoint) (*StatusPoller, error) {
	if len(eps) == 0 {
		return nil, errors.New("zookeeper status: no endpoints")
	}
	return &StatusPoller{eps: eps}, nil
}

// Poll asks every node at once, each bounded by timeout (if positive) and
// ctx, and returns what each said in endpoint order:
//
//   - A leader (or a standalone server) has IsLeader and names itself.
//   - A follower names the leader of this poll whose epoch equals its
//     own, else the one with the highest newer epoch, else none. Its
//     epoch comes from the last transaction it applied, so after an
//     election it lags the new leader's until the first write: "same
//     epoch" alone would leave a quiet ensemble leaderless.
//   - A server without a quorum ("not currently serving requests") names
//     no leader, is Electing, and has no error.
//
// Term is the epoch of the zxid the node reports (zxid >> 32). A node that
// does not answer in time, or answers something unexpected, has Err set.
func (p *StatusPoller) Poll(ctx context.Context, timeout time.Duration) []stores.NodeStatus {
	sts, _ := p.poll(ctx, timeout)
	return sts
}

func (p *StatusPoller) poll(ctx context.Context, timeout time.Duration) ([]stores.NodeStatus, []srvrReport) {
	reps := make([]srvrReport, len(p.eps))
	sts := stores.PollEach(ctx, len(p.eps), timeout, func(ctx context.Context, i int) stores.NodeStatus {
		var st stores.NodeStatus
		st, reps[i] = p.srvr(ctx, i)
		return st
	})
	assignLeaders(sts, reps)
	return sts, reps
}

// PollNode asks the server at index i of the endpoints alone. A follower's
// Leader stays 0: srvr names no leader, Poll finds it by the others'
// epochs.
func (p *StatusPoller) PollNode(ctx context.Context, i int) stores.NodeStatus {
	st, rep := p.srvr(ctx, i)
	sts := []stores.NodeStatus{st}
	assignLeaders(sts, []srvrReport{rep})
	return stores.Stamp(sts[0])
}

// srvr asks the server at index i for its srvr report.
func (p *StatusPoller) srvr(ctx context.Context, i int) (stores.NodeStatus, srvrReport) {
	ep := p.eps[i]
	st := stores.NodeStatus{Node: ep.Node}
	b, err := fourLetterWord(ctx, ep, "srvr")
	var rep srvrReport
	if err == nil {
		rep, err = parseSrvr(b)
	}
	if err != nil {
		st.Err = fmt.Errorf("zookeeper srvr of %s (%s): %w", plan.NodeName(ep.Node), ep.ClientAddr, err)
	}
	return st, rep
}

// assignLeaders fills in IsLeader, Leader and Term from the nodes' srvr
// reports (see Poll).
func assignLeaders(sts []stores.NodeStatus, reps []srvrReport) {
	type leader struct {
		node  int
		epoch uint64
	}
	var leaders []leader
	for i, r := range reps {
		if sts[i].Err != nil {
			continue
		}
		if !r.serving {
			// No quorum: the server is looking for a leader.
			sts[i].Electing = true
			continue
		}
		sts[i].Term = r.epoch()
		if r.leads() {
			sts[i].IsLeader, sts[i].Leader = true, sts[i].Node
			leaders = append(leaders, leader{sts[i].Node, r.epoch()})
		}
	}
	for i, r := range reps {
		if sts[i].Err != nil || !r.serving || !r.follows() {
			continue
		}
		var newer *leader
		for j, l := range leaders {
			if l.epoch == r.epoch() {
				sts[i].Leader = l.node
				break
			}
			if l.epoch > r.epoch() && (newer == nil || l.epoch > newer.epoch) {
				newer = &leaders[j]
			}
		}
		if sts[i].Leader == 0 && newer != nil {
			sts[i].Leader = newer.node
		}
	}
}

// Close releases nothing (the poller holds no connections); it is there so
// that every store's poller is closed the same way.
func (p *StatusPoller) Close() error { return nil }

// srvrReport is what a node said to srvr.
type srvrReport struct {
	serving bool   // false: "not currently serving requests" (no quorum)
	mode    string // leader, follower, standalone, observer, read-only
	zxid    uint64
}

func (r srvrReport) epoch() uint64 { return r.zxid >> 32 }
func (r srvrReport) leads() bool   { return r.mode == "leader" || r.mode == "standalone" }
func (r srvrReport) follows() bool { return r.mode == "follower" || r.mode == "observer" }

// notServing is how a server without a quorum answers every four-letter
// word but a few (ruok, isro, ...).
const notServing = "This ZooKeeper instance is not currently serving requests"

// parseSrvr reads the Mode and Zxid lines of a srvr answer.
func parseSrvr(b []byte) (srvrReport, error) {
	if bytes.Contains(b, []byte(notServing)) {
		return srvrReport{}, nil
	}
	if bytes.Contains(b, []byte("not in the whitelist")) {
		return srvrReport{}, fmt.Errorf("srvr is refused (not in 4lw.commands.whitelist): %q", clip(b))
	}
	r := srvrReport{serving: true}
	var haveZxid bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch key {
		case "Mode":
			r.mode = value
		case "Zxid":
			z, err := strconv.ParseUint(value, 0, 64)
			if err != nil {
				return srvrReport{}, fmt.Errorf("srvr: bad Zxid %q", value)
			}
			r.zxid, haveZxid = z, true
		}
	}
	if err := sc.Err(); err != nil {
		return srvrReport{}, fmt.Errorf("srvr: %w", err)
	}
	switch {
	case r.mode == "" || !haveZxid:
		return srvrReport{}, fmt.Errorf("srvr: no Mode and Zxid in %q", clip(b))
	case !r.leads() && !r.follows() && r.mode != "read-only":
		return srvrReport{}, fmt.Errorf("srvr: unknown mode %q", r.mode)
	}
	return r, nil
}

// clip shortens an unexpected answer for an error message.
func clip(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// maxFourLetterReply bounds what is read from a four-letter word (mntr
// is about 10 KiB).
const maxFourLetterReply = 1 << 20

// fourLetterWord sends cmd to ep on a new connection and reads the answer
// until the server closes the connection, or ctx ends.
func fourLetterWord(ctx context.Context, ep stores.Endpoint, cmd string) ([]byte, error) {
	dial := ep.Dial
	if dial == nil {
		var d net.Dialer
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	conn, err := dial(ctx, ep.ClientAddr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// Unblocks the write and the read when ctx ends.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return nil, ctxOr(ctx, err)
	}
	b, err := io.ReadAll(io.LimitReader(conn, maxFourLetterReply))
	if err != nil {
		return nil, ctxOr(ctx, err)
	}
	return b, nil
}

// ctxOr returns ctx's error if it has ended (and so caused err), else err.
func ctxOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// WaitReady waits, up to timeout, until every node answers srvr, exactly
// one leads, every other follows it, and the leader counts every other
// node among its synced followers (mntr's zk_synced_followers). The last
// check is what proves the followers follow this leader: their srvr zxid
// lags the leader's epoch until the first write. The error names the
// nodes that were not ready at the last poll.
func WaitReady(ctx context.Context, eps []stores.Endpoint, timeout time.Duration) error {
	p, err := NewStatusPoller(eps)
	if err != nil {
		return err
	}
	defer p.Close()
	return stores.WaitReady(ctx, timeout, "zookeeper ensemble", func(ctx context.Context, each time.Duration) string {
		sts, reps := p.poll(ctx, each)
		if reason := notReady(sts, reps); reason != "" {
			return reason
		}
		return p.syncedFollowers(ctx, each, sts)
	})
}

// notReady says why a poll does not show a ready ensemble, or "" if it
// does.
func notReady(sts []stores.NodeStatus, reps []srvrReport) string {
	var reasons, notServing, leaders []string
	leader := 0
	for i, s := range sts {
		name := plan.NodeName(s.Node)
		switch {
		case s.Err != nil:
			reasons = append(reasons, fmt.Sprintf("%s did not answer (%v)", name, s.Err))
		case !reps[i].serving:
			notServing = append(notServing, name)
		case s.IsLeader:
			leaders = append(leaders, name)
			leader = s.Node
		}
	}
	if len(notServing) > 0 {
		reasons = append(reasons, strings.Join(notServing, ", ")+" not serving requests (no quorum yet)")
	}
	switch {
	case len(leaders) > 1:
		reasons = append(reasons, strings.Join(leaders, ", ")+" all say they lead")
	case len(leaders) == 0 && len(reasons) == 0:
		reasons = append(reasons, "no node leads")
	}
	if len(reasons) > 0 {
		return strings.Join(reasons, "; ")
	}
	for i, s := range sts {
		if s.Node != leader && s.Leader != leader {
			return fmt.Sprintf("%s is %s and does not follow %s (zxid %#x)", plan.NodeName(s.Node), reps[i].mode, plan.NodeName(leader), reps[i].zxid)
		}
	}
	return ""
}

// syncedFollowers asks the leader in sts how many followers are in sync
// with it and says why that is not all the others, or "" if it is.
func (p *StatusPoller) syncedFollowers(ctx context.Context, timeout time.Duration, sts []stores.NodeStatus) string {
	want := len(sts) - 1
	i := slices.IndexFunc(sts, func(s stores.NodeStatus) bool { return s.IsLeader })
	switch {
	case want == 0:
		return ""
	case i < 0:
		return "no node leads"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name := plan.NodeName(sts[i].Node)
	b, err := fourLetterWord(ctx, p.eps[i], "mntr")
	if err != nil {
		return fmt.Sprintf("leader %s did not answer mntr (%v)", name, err)
	}
	synced, err := mntrValue(b, "zk_synced_followers")
	if err != nil {
		return fmt.Sprintf("leader %s: %v", name, err)
	}
	if synced < want {
		return fmt.Sprintf("leader %s has %d of %d followers in sync", name, synced, want)
	}
	return ""
}

// mntrValue reads one integer metric of an mntr answer ("key\tvalue"
// lines).
func mntrValue(b []byte, key string) (int, error) {
	if bytes.Contains(b, []byte(notServing)) {
		return 0, errors.New("not serving requests")
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok && k == key {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0, fmt.Errorf("mntr: bad %s %q", key, v)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("mntr: no %s in %q", key, clip(b))
}
