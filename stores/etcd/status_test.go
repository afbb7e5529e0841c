package etcd

import (
	"context"
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
