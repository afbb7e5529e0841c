package etcd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/stores"
)

func TestNodeIndex(t *testing.T) {
	for name, want := range map[string]int{"n1": 1, "n12": 12, "n0": 0, "n01": 0, "x1": 0, "n": 0, "n-1": 0, "default": 0} {
		got, ok := nodeIndex(name)
		if got != want || ok != (want > 0) {
			t.Errorf("nodeIndex(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
}

func TestNotReady(t *testing.T) {
	down := errors.New("connection refused")
	tests := []struct {
		name string
		sts  []stores.NodeStatus
		want []string // substrings; none means ready
	}{
		{"ready", []stores.NodeStatus{{Node: 1, Leader: 2}, {Node: 2, Leader: 2, IsLeader: true}, {Node: 3, Leader: 2}}, nil},
		{"one silent", []stores.NodeStatus{{Node: 1, Leader: 2}, {Node: 2, Leader: 2, IsLeader: true}, {Node: 3, Err: down}}, []string{"n3 did not answer", "connection refused"}},
		{"two silent", []stores.NodeStatus{{Node: 1, Err: down}, {Node: 2, Leader: 2, IsLeader: true}, {Node: 3, Err: down}}, []string{"n1 did not answer", "n3 did not answer"}},
		{"no leader", []stores.NodeStatus{{Node: 1}, {Node: 2}, {Node: 3}}, []string{"n1, n2, n3 know no leader"}},
		{"disagree", []stores.NodeStatus{{Node: 1, Leader: 1, IsLeader: true}, {Node: 2, Leader: 3}, {Node: 3, Leader: 3, IsLeader: true}}, []string{"disagree", "n1 name n1", "n2, n3 name n3"}},
		{"leader denies", []stores.NodeStatus{{Node: 1, Leader: 2}, {Node: 2, Leader: 2}}, []string{"does not say so"}},
		{"leader elsewhere", []stores.NodeStatus{{Node: 1, Leader: 4}, {Node: 2, Leader: 4}}, []string{"not among"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := notReady(tt.sts)
			if len(tt.want) == 0 && got != "" {
				t.Errorf("notReady = %q, want ready", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("notReady = %q, want it to mention %q", got, w)
				}
			}
		})
	}
}

func TestWaitReadyNamesSilentNodes(t *testing.T) {
	eps := []stores.Endpoint{{Node: 1, ClientAddr: freeAddr(t)}, {Node: 2, ClientAddr: freeAddr(t)}}
	err := WaitReady(context.Background(), eps, 500*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "n1 did not answer") || !strings.Contains(err.Error(), "n2 did not answer") {
		t.Errorf("WaitReady with nothing listening: %v", err)
	}
	for _, s := range Status(context.Background(), eps, 200*time.Millisecond) {
		if s.Err == nil {
			t.Errorf("Status of %d: no error with nothing listening", s.Node)
		}
	}
}
