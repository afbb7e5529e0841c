package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/aclements/go-moremath/stats"

	"github.com/coordlab/scenario/internal/safefile"
)

// KindRepetitions is the kind of the results.json that scenario run
// --repeat N writes beside its repetitions: an Aggregate, not a Results.
const KindRepetitions = "repetitions"

// CheckPrefix starts the metric path of a check's status ("check.<name>",
// whose value is StatusPass, StatusFail or StatusError). Metrics does not
// yield these paths; Aggregate and compare add them.
const CheckPrefix = "check."

// Aggregate is the results.json of a repeated run (scenario run --repeat
// N): the same scenario, run N times, each time on a fresh cluster, each
// repetition's own results.json in a subdirectory (rep-1, rep-2, ...). It
// keeps, per metric path, every repetition's value and their median, so
// that compare can test a change against the spread of repeated runs.
//
// The file is small and flat:
//
//	{
//	  "schema_version": 1,
//	  "kind": "repetitions",
//	  "scenario": "...", "scenario_file": "...", "point": [...], "backend": {...},
//	  "phases": ["warmup", "steady"],
//	  "repetitions": [{"dir": "rep-1", "run_id": "...", "started": "...", "passed": true}, ...],
//	  "metrics": {
//	    "phase.steady.put.p99": {"values": [4.1, 3.9, null, 4.4, 4.0], "median": 4.05},
//	    "run.linearizable":     {"values": [true, true, true, true, true]},
//	    "check.available":      {"values": ["pass", "pass", "fail", "pass", "pass"]}
//	  }
//	}
//
// The metric paths are those of Results.Metrics, plus "check.<name>" with
// each check's status. values[i] belongs to repetitions[i]; it is null
// where that repetition did not measure the metric (a p99 where nothing
// succeeded). median is the median of the numbers present, absent for
// booleans and statuses.
type Aggregate struct {
	// SchemaVersion is the version of results.json this file belongs to.
	SchemaVersion int `json:"schema_version"`
	// Kind is KindRepetitions; a run's results.json has none.
	Kind string `json:"kind"`
	// Scenario, ScenarioFile, Point and Backend are the first repetition's
	// (every repetition runs the same plan).
	Scenario     string            `json:"scenario"`
	ScenarioFile string            `json:"scenario_file"`
	Point        []SweepValue      `json:"point,omitempty"`
	Backend      map[string]string `json:"backend,omitempty"`
	// Phases names the phases in timeline order.
	Phases []string `json:"phases"`
	// Repetitions lists the runs in the order they ran.
	Repetitions []Repetition `json:"repetitions"`
	// Metrics holds every metric path any repetition measured.
	Metrics map[string]*MetricSample `json:"metrics"`
}

// Repetition is one run of a repeated scenario.
type Repetition struct {
	// Dir holds the repetition's results.json, relative to the aggregate's
	// directory.
	Dir   string `json:"dir"`
	RunID string `json:"run_id"`
	// Started is the repetition's Results.Started.
	Started time.Time `json:"started"`
	// Passed is true when every check of the repetition passed.
	Passed bool `json:"passed"`
	// Failed names the checks that failed or could not be evaluated.
	Failed []string `json:"failed,omitempty"`
}

// MetricSample is one metric over the repetitions.
type MetricSample struct {
	// Values holds one value per repetition: a float64, a bool, a check
	// status, or nil where the repetition lacks the metric.
	Values []any `json:"values"`
	// Median is the median of the numbers in Values; nil for booleans and
	// statuses.
	Median *float64 `json:"median,omitempty"`
}

// Numbers returns the numbers among the values, in repetition order.
func (m *MetricSample) Numbers() []float64 {
	var out []float64
	for _, v := range m.Values {
		if f, ok := v.(float64); ok {
			out = append(out, f)
		}
	}
	return out
}

// Median is the median of xs (the mean of the middle two when there is
// an even number); NaN when xs is empty.
func Median(xs []float64) float64 {
	return stats.Sample{Xs: xs}.Quantile(0.5)
}

// NewAggregate gathers the repetitions runs, whose results.json files are
// in dirs (relative to the aggregate's directory), in the order they ran.
func NewAggregate(runs []*Results, dirs []string) *Aggregate {
	a := &Aggregate{SchemaVersion: SchemaVersion, Kind: KindRepetitions, Phases: []string{}, Metrics: map[string]*MetricSample{}}
	if len(runs) == 0 {
		return a
	}
	first := runs[0]
	a.Scenario, a.ScenarioFile, a.Point, a.Backend = first.Scenario, first.ScenarioFile, first.Point, first.Backend
	a.Phases = PhaseNames(runs)
	for i, r := range runs {
		rep := Repetition{Dir: dirs[i], RunID: r.RunID, Started: r.Started, Passed: r.Passed()}
		for _, c := range r.Checks {
			if c.Status() != StatusPass {
				rep.Failed = append(rep.Failed, c.Name)
			}
		}
		a.Repetitions = append(a.Repetitions, rep)
		m := r.Metrics()
		for _, c := range r.Checks {
			m[CheckPrefix+c.Name] = c.Status()
		}
		for path, v := range m {
			s := a.Metrics[path]
			if s == nil {
				s = &MetricSample{Values: make([]any, len(runs))}
				a.Metrics[path] = s
			}
			s.Values[i] = v
		}
	}
	for _, s := range a.Metrics {
		if xs := s.Numbers(); len(xs) > 0 {
			s.Median = Ptr(Median(xs))
		}
	}
	return a
}

// WriteAggregate writes a as results.json in dir.
func WriteAggregate(dir string, a *Aggregate) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(a); err != nil {
		return fmt.Errorf("encode aggregate results: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write aggregate results: %w", err)
	}
	if err := safefile.WriteAtomic(filepath.Join(dir, FileName), buf.Bytes(), 0o644, false); err != nil {
		return fmt.Errorf("write aggregate results: %w", err)
	}
	return nil
}

// ReadAny reads a results.json: a run's (r is set) or a repeated run's
// aggregate (a is set). It refuses what Read refuses.
func ReadAny(path string) (r *Results, a *Aggregate, err error) {
	b, err := safefile.ReadRegular(path, MaxFileBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("read results: %w", err)
	}
	var probe struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(b, &probe) != nil || probe.Kind == "" {
		r, err := Read(path)
		return r, nil, err
	}
	if probe.Kind != KindRepetitions {
		return nil, nil, fmt.Errorf("read results %s: kind %q is not one this build knows (%q); upgrade scenario", path, probe.Kind, KindRepetitions)
	}
	a, err = decodeAggregate(path, b)
	return nil, a, err
}

func decodeAggregate(path string, b []byte) (*Aggregate, error) {
	var a Aggregate
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("read results %s: %w", path, err)
	}
	switch {
	case a.SchemaVersion <= 0:
		return nil, fmt.Errorf("read results %s: no valid schema_version; is this a results.json?", path)
	case a.SchemaVersion > SchemaVersion:
		return nil, fmt.Errorf("read results %s: schema version %d is newer than this build understands (%d); upgrade scenario", path, a.SchemaVersion, SchemaVersion)
	case len(a.Repetitions) == 0:
		return nil, fmt.Errorf("read results %s: an aggregate of no repetitions; is this a complete results.json?", path)
	}
	for _, name := range slices.Sorted(maps.Keys(a.Metrics)) {
		s := a.Metrics[name]
		if s == nil || len(s.Values) != len(a.Repetitions) {
			return nil, fmt.Errorf("read results %s: metric %s does not hold one value per repetition (%d)", path, name, len(a.Repetitions))
		}
	}
	return &a, nil
}
