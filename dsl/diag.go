package dsl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
// a likely typo. Among equally close candidates of the same length the one
// whose differing characters are nearest wins, so "p98" suggests "p99", not
// "p90".
func suggest(name string, candidates []string) string {
	lower := strings.ToLower(name)
	for _, c := range candidates {
		// "heartbeat" for "heartbeat_interval": a prefix is a strong hint.
		lc := strings.ToLower(c)
		if len(lower) >= 4 && len(lc) >= 4 && (strings.HasPrefix(lc, lower) || strings.HasPrefix(lower, lc)) {
			return c
		}
	}
	// A third of the name may be wrong (plus a transposition): "duration"
	// is not a typo of "region".
	best, bestDist, bestSpread := "", len(name)/3+2, 0
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := levenshtein.Distance(lower, lc, nil)
		spread := charSpread(lower, lc)
		if d < bestDist || d == bestDist && best != "" && spread < bestSpread {
			best, bestDist, bestSpread = c, d, spread
		}
	}
	return best
}

// charSpread sums how far apart the differing characters of two strings of
// the same length are; it is a tie-breaker only.
func charSpread(a, b string) int {
	if len(a) != len(b) {
		return 1 << 30
	}
	n := 0
	for i := 0; i < len(a); i++ {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		n += d
	}
	return n
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

// decodeBody decodes body against schema like hcl.Body.Content, but reports an
// unknown argument or block with the closest allowed name and the full list,
// since HCL only suggests names within a small edit distance and never lists
// the alternatives.
func decodeBody(body hcl.Body, schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	c, diags := body.Content(schema)
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return c, diags
	}
	var attrNames, blockNames []string
	for _, a := range schema.Attributes {
		attrNames = append(attrNames, a.Name)
	}
	for _, b := range schema.Blocks {
		blockNames = append(blockNames, b.Type)
	}
	replaced := map[hcl.Range]bool{}
	var ours hcl.Diagnostics
	for _, name := range sortedKeys(sb.Attributes) {
		attr := sb.Attributes[name]
		if contains(attrNames, name) {
			continue
		}
		replaced[attr.NameRange] = true
		hint := didYouMean(name, attrNames)
		if len(attrNames) == 0 {
			hint = "This block takes no arguments."
		}
		if contains(blockNames, name) {
			hint = fmt.Sprintf("%q is a block here: write `%s { ... }` without the equals sign.", name, name)
		}
		ours = append(ours, errorAt(attr.NameRange, "Unsupported argument", "An argument named %q is not expected here. %s", name, hint))
	}
	for _, blk := range sb.Blocks {
		if contains(blockNames, blk.Type) {
			continue
		}
		rng := blk.TypeRange
		replaced[rng] = true
		hint := fmt.Sprintf("Blocks allowed here: %s.", quoteList(blockNames))
		if s := suggest(blk.Type, blockNames); s != "" {
			hint = fmt.Sprintf("Did you mean %q? %s", s, hint)
		}
		if len(blockNames) == 0 {
			hint = "No blocks are allowed here."
		}
		if contains(attrNames, blk.Type) {
			hint = fmt.Sprintf("%q is an argument here: write `%s = ...`.", blk.Type, blk.Type)
		}
		ours = append(ours, errorAt(rng, "Unsupported block type", "Blocks of type %q are not expected here. %s", blk.Type, hint))
	}
	out := ours
	for _, d := range diags {
		if d.Subject != nil && replaced[*d.Subject] && (d.Summary == "Unsupported argument" || d.Summary == "Unsupported block type") {
			continue
		}
		out = append(out, d)
	}
	return c, out
}
