package etcd

import (
	"context"
	"strings"
	"sync"
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

// TestMemberIndex learns members while other goroutines look them up, as
// a client's responses do while the background member list arrives; run
// with -race.
func TestMemberIndex(t *testing.T) {
	var m memberIndex
	if n, ok := m.node(7); ok || n != 0 {
		t.Fatalf("empty index: node(7) = %d, %v", n, ok)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				if n, ok := m.node(0xa1); ok && n != 1 {
					t.Errorf("node(0xa1) = %d, want 1", n)
					return
				}
			}
		})
	}
	for id := uint64(0xa1); id < 0xa4; id++ {
		m.learn(id, int(id-0xa0))
		m.learn(id, int(id-0xa0)) // again, as a second refresh does
	}
	wg.Wait()
	for id, want := range map[uint64]int{0xa1: 1, 0xa2: 2, 0xa3: 3} {
		if n, ok := m.node(id); !ok || n != want {
			t.Errorf("node(%#x) = %d, %v; want %d", id, n, ok, want)
		}
	}
	m.learn(0xa2, 5) // a member renamed: the newer answer wins
	if n, _ := m.node(0xa2); n != 5 {
		t.Errorf("after relearning, node(0xa2) = %d, want 5", n)
	}
	if _, ok := m.node(0xff); ok {
		t.Errorf("node(0xff) found, never learnt")
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
