package compare

import (
	"path/filepath"
	"strings"

	"github.com/coordlab/scenario/internal/results"
)

// Side is one side of a comparison: a single run, or the repetitions of
// one (an aggregate results.json written by scenario run --repeat). Every
// metric holds one value per repetition; a single run is one repetition.
type Side struct {
	run      Run
	scenario string
	// backend is what results.json says of how the run ran (the
	// first repetition's, for an aggregate).
	backend map[string]string
	phases  []string
	// sole lists the per-workload prefixes of scopes with one workload
	// (see soleWorkloads).
	sole []string
	// values holds, per metric path, one value per repetition (nil where
	// a repetition lacks the metric).
	values map[string][]any
}

// FromResults makes a side of one run.
func FromResults(r *results.Results) *Side {
	s := &Side{run: identify(r), scenario: r.Scenario, backend: r.Backend, sole: soleWorkloads(r), values: map[string][]any{}}
	for _, p := range r.Phases {
		s.phases = append(s.phases, p.Name)
	}
	for path, v := range values(r) {
		s.values[path] = []any{v}
	}
	return s
}

// FromAggregate makes a side of a repeated run's repetitions.
func FromAggregate(a *results.Aggregate) *Side {
	s := &Side{scenario: a.Scenario, backend: a.Backend, phases: a.Phases, values: map[string][]any{}}
	s.run = Run{Scenario: a.Scenario, Store: a.Backend["store"], Point: pointText(a.Point), Repetitions: len(a.Repetitions)}
	if len(a.Repetitions) > 0 {
		s.run.RunID = a.Repetitions[0].RunID
	}
	for path, m := range a.Metrics {
		s.values[path] = m.Values
	}
	s.sole = soleFromPaths(s.phases, s.values)
	return s
}

// Repetitions is how many runs the side holds.
func (s *Side) Repetitions() int {
	return max(1, s.run.Repetitions)
}

// present returns the values of metric that some repetition measured.
func (s *Side) present(metric string) []any {
	var out []any
	for _, v := range s.values[metric] {
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}

// soleFromPaths finds the scopes with a single workload from the metric
// paths alone, as soleWorkloads does from a run: every workload w of a
// scope has "<scope>.workload.<w>.count", and workload names hold no dot.
func soleFromPaths(phases []string, values map[string][]any) []string {
	var out []string
	for _, scope := range append([]string{"run"}, prefixed("phase.", phases)...) {
		prefix := scope + ".workload."
		var ws []string
		for path := range values {
			w, ok := strings.CutPrefix(path, prefix)
			if !ok {
				continue
			}
			if w, ok = strings.CutSuffix(w, ".count"); ok && !strings.Contains(w, ".") {
				ws = append(ws, w)
			}
		}
		if len(ws) == 1 {
			out = append(out, prefix+ws[0]+".")
		}
	}
	return out
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// sameScenario reports whether the sides ran the same scenario file (by
// name: a baseline may have been run from another directory).
func sameScenario(base, next *Side) (b, n string, same bool) {
	b, n = filepath.Base(base.scenario), filepath.Base(next.scenario)
	return b, n, b == n
}
