package dsl

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// attrRepeat is the top-level attribute that runs the scenario several
// times, each repetition on a fresh cluster (scenario run --repeat wins
// over it).
const attrRepeat = "repeat"

// MaxRepeat bounds repeat and --repeat: each repetition brings a cluster
// up, plays the whole timeline and tears it down, and the statistics of
// compare need no more than a few dozen.
const MaxRepeat = 100

// decodeRepeat reads repeat = N. It is evaluated without variables, as
// description is: the number of runs is fixed before any sweep point is
// decoded, and --repeat sets it from the command line.
func decodeRepeat(attr *hcl.Attribute) (int, hcl.Diagnostics) {
	if vars := attr.Expr.Variables(); len(vars) > 0 {
		return 0, hcl.Diagnostics{errorAt(vars[0].SourceRange(), `Invalid value for "repeat"`,
			"repeat is read before variables are: write a number, such as repeat = 5, and use scenario run --repeat N to choose it from the command line.")}
	}
	d := &decoder{ctx: evalContext(nil, nil)}
	n, ok := d.integer(attr, 1, MaxRepeat)
	if !ok {
		for _, diag := range d.diags {
			if diag.Subject != nil && *diag.Subject == attr.Expr.Range() {
				diag.Detail += fmt.Sprintf(" repeat is how many times the scenario runs, each time on a fresh cluster: a whole number from 1 to %d, such as repeat = 5.", MaxRepeat)
			}
		}
		return 0, d.diags
	}
	return int(n), d.diags
}
