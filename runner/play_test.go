package runner

import (
	"testing"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// TestKeyOrder: results.json says how sequential keys were walked when a
// workload has them, so that compare can tell runs from before the shared
// walk; other distributions say nothing.
func TestKeyOrder(t *testing.T) {
	tests := []struct {
		name  string
		dists []string
		want  string
	}{
		{name: "no workload", want: ""},
		{name: "uniform and zipfian", dists: []string{plan.DistUniform, plan.DistZipfian}, want: ""},
		{name: "the default distribution", dists: []string{""}, want: ""},
		{name: "one sequential among others", dists: []string{plan.DistUniform, plan.DistSequential}, want: results.SequentialKeysShared},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ws []plan.WorkloadSpec
			for i, d := range tt.dists {
				ws = append(ws, plan.WorkloadSpec{Name: string(rune('a' + i)), Distribution: d})
			}
			if got := keyOrder(ws); got != tt.want {
				t.Errorf("keyOrder = %q, want %q", got, tt.want)
			}
		})
	}
}
