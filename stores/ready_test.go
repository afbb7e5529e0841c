package stores

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLeaderAgreement(t *testing.T) {
	down := errors.New("connection refused")
	tests := []struct {
		name string
		sts  []NodeStatus
		want []string // substrings; none means ready
	}{
		{"ready", []NodeStatus{{Node: 1, Leader: 2}, {Node: 2, Leader: 2, IsLeader: true}, {Node: 3, Leader: 2}}, nil},
		{"one silent", []NodeStatus{{Node: 1, Leader: 2}, {Node: 2, Leader: 2, IsLeader: true}, {Node: 3, Err: down}}, []string{"n3 did not answer", "connection refused"}},
		{"two silent", []NodeStatus{{Node: 1, Err: down}, {Node: 2, Leader: 2, IsLeader: true}, {Node: 3, Err: down}}, []string{"n1 did not answer", "n3 did not answer"}},
		{"no leader", []NodeStatus{{Node: 1}, {Node: 2}, {Node: 3}}, []string{"n1, n2, n3 know no leader"}},
		{"disagree", []NodeStatus{{Node: 1, Leader: 1, IsLeader: true}, {Node: 2, Leader: 3}, {Node: 3, Leader: 3, IsLeader: true}}, []string{"disagree", "n1 name n1", "n2, n3 name n3"}},
		{"leader denies", []NodeStatus{{Node: 1, Leader: 2}, {Node: 2, Leader: 2}}, []string{"does not say so"}},
		{"leader elsewhere", []NodeStatus{{Node: 1, Leader: 4}, {Node: 2, Leader: 4}}, []string{"not among"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LeaderAgreement(tt.sts)
			if len(tt.want) == 0 && got != "" {
				t.Errorf("LeaderAgreement = %q, want ready", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("LeaderAgreement = %q, want it to mention %q", got, w)
				}
			}
		})
	}
}

// PollEach asks every node at once, each bounded by the timeout, and
// returns when all have answered.
func TestPollEach(t *testing.T) {
	var asked [5]atomic.Bool
	var bounded atomic.Int32
	before := time.Now()
	sts := PollEach(context.Background(), len(asked), time.Second, func(ctx context.Context, i int) NodeStatus {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= time.Second {
			bounded.Add(1)
		}
		asked[i].Store(true)
		if i == 0 {
			return NodeStatus{Node: 1, Err: errors.New("no answer")}
		}
		return NodeStatus{Node: i + 1}
	})
	after := time.Now()
	for i, st := range sts {
		switch {
		case i == 0 && !st.At.IsZero():
			t.Errorf("a node that did not answer has an answer time: %+v", st)
		case i > 0 && (st.At.Before(before) || st.At.After(after) || st.Node != i+1):
			t.Errorf("answer %d = %+v, want node %d answered between %v and %v", i, st, i+1, before, after)
		}
	}
	for i := range asked {
		if !asked[i].Load() {
			t.Errorf("node %d not asked", i)
		}
	}
	if bounded.Load() != int32(len(asked)) {
		t.Errorf("%d of %d polls had the timeout", bounded.Load(), len(asked))
	}
	PollEach(context.Background(), 2, 0, func(ctx context.Context, i int) NodeStatus {
		if _, ok := ctx.Deadline(); ok {
			t.Errorf("poll %d has a deadline without a timeout", i)
		}
		return NodeStatus{}
	})
}
