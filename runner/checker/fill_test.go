package checker

import (
	"testing"

	"github.com/coordlab/scenario/internal/results"
)

func TestFill(t *testing.T) {
	tests := []struct {
		name       string
		lin        *LinResult
		lost       *LostResult
		wantLin    *bool
		wantLost   *int64
		wantOps    int64
		wantViz    string
		wantDetail string
	}{
		{
			name:       "linearizable, nothing lost",
			lin:        &LinResult{Verdict: Linearizable, Operations: 10, Keys: 2, Detail: "10 operations on 2 keys are linearizable."},
			lost:       &LostResult{Checked: 2},
			wantLin:    new(true),
			wantLost:   new(int64(0)),
			wantOps:    10,
			wantDetail: "10 operations on 2 keys are linearizable; no acknowledged write was lost on 2 keys read back.",
		},
		{
			name:       "violation",
			lin:        &LinResult{Verdict: Violation, Operations: 3, Detail: "Bad.", Visualization: "/tmp/v.html"},
			wantLin:    new(false),
			wantOps:    3,
			wantViz:    "/tmp/v.html",
			wantDetail: "Bad.",
		},
		{
			name:       "unknown is not a pass",
			lin:        &LinResult{Verdict: Unknown, Operations: 7, Detail: "Gave up."},
			lost:       &LostResult{Checked: 4, Lost: 1, Keys: []string{"k"}},
			wantLost:   new(int64(1)),
			wantOps:    7,
			wantDetail: `Gave up; 1 of 4 keys read back lost an acknowledged write, first "k".`,
		},
		{
			name: "nothing ran",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c results.Correctness
			Fill(&c, tt.lin, tt.lost)
			if !eq(c.Linearizable, tt.wantLin) || !eq(c.LostWrites, tt.wantLost) {
				t.Errorf("linearizable %v lost %v, want %v %v", show(c.Linearizable), show(c.LostWrites), show(tt.wantLin), show(tt.wantLost))
			}
			if c.Operations != tt.wantOps || c.Visualization != tt.wantViz || c.Detail != tt.wantDetail {
				t.Errorf("got ops %d viz %q detail %q, want %d %q %q", c.Operations, c.Visualization, c.Detail, tt.wantOps, tt.wantViz, tt.wantDetail)
			}
		})
	}
}

func eq[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
