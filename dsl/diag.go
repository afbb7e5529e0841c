package dsl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
)

func errorAt(rng hcl.Range, summary, detail string, args ...any) *hcl.Diagnostic {
	r := rng
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(detail, args...),
		Subject:  &r,
	}
}

// errorIn is errorAt with the enclosing block shown as context.
func errorIn(subject, context hcl.Range, summary, detail string, args ...any) *hcl.Diagnostic {
	d := errorAt(subject, summary, detail, args...)
	c := context
	d.Context = &c
	return d
}

// suggest returns the candidate closest to name, if it is close enough to be
// a likely typo.
func suggest(name string, candidates []string) string {
	best, bestDist := "", len(name)/2+2
	for _, c := range candidates {
		d := levenshtein.Distance(strings.ToLower(name), strings.ToLower(c), nil)
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// didYouMean renders a hint for an unknown name: a close match if there is
// one, and the full list of allowed names either way.
func didYouMean(name string, allowed []string) string {
	list := quoteList(allowed)
	if s := suggest(name, allowed); s != "" {
		return fmt.Sprintf("Did you mean %q? Allowed: %s.", s, list)
	}
	return fmt.Sprintf("Allowed: %s.", list)
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// SortDiagnostics orders diagnostics by file and position so output is stable
// and reads top to bottom; diagnostics without a subject come first.
func SortDiagnostics(diags hcl.Diagnostics) {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i].Subject, diags[j].Subject
		switch {
		case a == nil && b == nil:
			return false
		case a == nil:
			return true
		case b == nil:
			return false
		case a.Filename != b.Filename:
			return a.Filename < b.Filename
		case a.Start.Byte != b.Start.Byte:
			return a.Start.Byte < b.Start.Byte
		}
		return diags[i].Summary < diags[j].Summary
	})
}

// duplicateCheck remembers where each name was first defined so a second
// definition can point at the first.
type duplicateCheck map[string]hcl.Range

func (d duplicateCheck) check(kind, name string, rng hcl.Range) *hcl.Diagnostic {
	if prev, ok := d[name]; ok {
		return errorAt(rng, fmt.Sprintf("Duplicate %s %q", kind, name),
			"A %s named %q was already defined at %s. Give each %s a unique name.", kind, name, prev, kind)
	}
	d[name] = rng
	return nil
}
