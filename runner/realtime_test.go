package runner

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/results"
)

// TestRealtimeNote checks the notes of --realtime and --busy-poll: what
// each did, and the phases in which the runner took a quarter or more of
// the machine's CPUs.
func TestRealtimeNote(t *testing.T) {
	notes := []struct {
		name string
		note func(*results.Results) (string, []string)
		says string // what the note always says
		warn string // what it says only with heavy phases
	}{
		{"realtime", realtimeNote, "SCHED_FIFO 1", "for light loads"},
		{"busy-poll", func(r *results.Results) (string, []string) { return busyPollNote(r, 200*time.Microsecond) },
			"spun through the last 200µs before each due time (--busy-poll)", "for machines with cores to spare"},
	}
	phase := func(name string, runnerCPU float64) results.Phase {
		return results.Phase{Name: name, Resources: map[string]results.ResourceSummary{
			results.RunnerNode: {Samples: 5, CPUMeanPercent: runnerCPU},
			"n1":               {Samples: 5, CPUMeanPercent: 90},
		}}
	}
	for _, tc := range []struct {
		name   string
		cpus   int
		phases []results.Phase
		heavy  []string
	}{
		{"light loads", 2, []results.Phase{phase("warmup", 12), phase("steady", 37)}, nil},
		{"no runner samples", 2, []results.Phase{{Name: "steady"}}, nil},
		{"one heavy phase", 2, []results.Phase{phase("warmup", 20), phase("load", 101.4)}, []string{"load (101% of a core)"}},
		{"at the bound", 2, []results.Phase{phase("a", 50), phase("b", 49.9)}, []string{"a (50% of a core)"}},
		{"a core of eight", 8, []results.Phase{phase("a", 101.4), phase("b", 200)}, []string{"b (200% of a core)"}},
		{"one CPU", 1, []results.Phase{phase("a", 25), phase("b", 24)}, []string{"a (25% of a core)"}},
	} {
		for _, n := range notes {
			t.Run(n.name+"/"+tc.name, func(t *testing.T) {
				res := &results.Results{Phases: tc.phases, Machine: &results.Machine{CPUs: tc.cpus}}
				note, heavy := n.note(res)
				if strings.Join(heavy, "|") != strings.Join(tc.heavy, "|") {
					t.Errorf("heavy = %q, want %q", heavy, tc.heavy)
				}
				if !strings.Contains(note, n.says) {
					t.Errorf("note does not say %q: %s", n.says, note)
				}
				if warned := strings.Contains(note, n.warn); warned != (len(tc.heavy) > 0) {
					t.Errorf("note warns = %v, want %v: %s", warned, len(tc.heavy) > 0, note)
				}
				if len(tc.heavy) > 0 && !strings.Contains(note, fmt.Sprintf("machine's %d CPUs", tc.cpus)) {
					t.Errorf("note does not say the machine's %d CPUs: %s", tc.cpus, note)
				}
				for _, h := range tc.heavy {
					if !strings.Contains(note, h) {
						t.Errorf("note does not name %s: %s", h, note)
					}
				}
			})
		}
	}
}
