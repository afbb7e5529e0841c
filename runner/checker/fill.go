package checker

import (
	"fmt"
	"strings"

	"github.com/coordlab/scenario/internal/results"
)

// Fill records the checks' outcomes in c. A nil result means that check did
// not run and leaves its fields null; an Unknown verdict leaves Linearizable
// null too, so that no check can pass on a history nobody proved correct.
func Fill(c *results.Correctness, lin *LinResult, lost *LostResult) {
	var parts []string
	if lin != nil {
		c.Linearizable = nil
		switch lin.Verdict {
		case Linearizable:
			c.Linearizable = new(true)
		case Violation:
			c.Linearizable = new(false)
		}
		c.Operations = int64(lin.Operations)
		c.Visualization = lin.Visualization
		if d := strings.TrimSuffix(lin.Detail, "."); d != "" {
			parts = append(parts, d)
		}
	}
	if lost != nil {
		c.LostWrites = new(int64(lost.Lost))
		parts = append(parts, lostDetail(lost))
	}
	if len(parts) > 0 {
		c.Detail = strings.Join(parts, "; ") + "."
	}
}

func lostDetail(lost *LostResult) string {
	if lost.Lost == 0 {
		return fmt.Sprintf("no acknowledged write was lost on %d keys read back", lost.Checked)
	}
	return fmt.Sprintf("%d of %d keys read back lost an acknowledged write, first %q", lost.Lost, lost.Checked, firstOr(lost.Keys, ""))
}
