package runner

import "testing"

// TestExitExpected holds the node watcher to what faults did around its
// look at the nodes: an exit is expected when a fault held the node down
// at the look's start or holds it now, or came and went in between.
func TestExitExpected(t *testing.T) {
	type step struct {
		node, delta int
	}
	for _, tc := range []struct {
		name          string
		before, after []step // faults counted in or out before the look began, and during it
		want          bool
	}{
		{name: "no fault", want: false},
		{name: "a fault on another node", after: []step{{2, 1}}, want: false},
		{name: "a fault that ended before the look", before: []step{{1, 1}, {1, -1}}, want: false},
		{name: "a fault holding it down", before: []step{{1, 1}}, want: true},
		{name: "a fault that began during the look", after: []step{{1, 1}}, want: true},
		{name: "a fault that ended during the look", before: []step{{1, 1}}, after: []step{{1, -1}}, want: true},
		// A restart between the read of the node's state and the check.
		{name: "a fault that came and went during the look", after: []step{{1, 1}, {1, -1}}, want: true},
		{name: "a restart before the look, another during it", before: []step{{1, 1}, {1, -1}}, after: []step{{1, 1}, {1, -1}}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clusterRun{}
			for _, s := range tc.before {
				c.expectDown([]int{s.node}, s.delta)
			}
			look := c.downCounts()
			for _, s := range tc.after {
				c.expectDown([]int{s.node}, s.delta)
			}
			if got := c.exitExpected(1, look[1]); got != tc.want {
				t.Errorf("exitExpected = %v, want %v", got, tc.want)
			}
		})
	}
}
