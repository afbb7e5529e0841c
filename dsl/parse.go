// Package dsl reads scenario files. Decoding runs in stages, each stopping on
// errors so later stages never see half-decoded input: parse and the
// top-level schema, variables, per-block decoding with an evaluation context,
// semantic validation across blocks, and compilation to a Plan (one per sweep
// point). Every diagnostic points at the attribute or list element at fault.
package dsl

import (
	"fmt"
	"hash/fnv"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

var rootSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "seed"}, {Name: "description"}, {Name: attrRepeat}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: blockVariable, LabelNames: []string{"name"}},
		{Type: blockCluster, LabelNames: []string{"name"}},
		{Type: blockNetwork},
		{Type: blockWorkload, LabelNames: []string{"name"}},
		{Type: blockPhase, LabelNames: []string{"name"}},
		{Type: blockCheck, LabelNames: []string{"name"}},
		{Type: blockSweep},
	},
}

// File is a parsed scenario file with its variables and sweep decoded: the
// input to per-point decoding.
type File struct {
	Filename    string
	Parser      *hclparse.Parser
	Variables   []*Variable
	Sweep       *Sweep
	Description string
	src         []byte
	content     *hcl.BodyContent
	// Repeat is the file's repeat attribute: how many times run runs the
	// scenario, each time on a fresh cluster; 0 when the file does not say.
	Repeat int
}

// Parse reads the file's syntax, its top-level structure, its variables and
// its sweep. The parser keeps the source so diagnostics can show it.
func Parse(parser *hclparse.Parser, filename string, src []byte) (*File, hcl.Diagnostics) {
	if diags := CheckSource(filename, src); diags.HasErrors() {
		// The source is not given to the parser, so diagnostics do not
		// echo a line of binary or a 200 KB line of brackets.
		return nil, diags
	}
	hf, diags := parser.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diags
	}
	content, cdiags := decodeBody(hf.Body, rootSchema)
	diags = append(diags, cdiags...)
	if sb, ok := hf.Body.(*hclsyntax.Body); ok {
		if sdiags := checkSyntax(sb, declaredVariables(content)); sdiags.HasErrors() {
			// Evaluating anything now could write out a huge number.
			return nil, append(diags, sdiags...)
		}
	}
	diags = append(diags, checkLabels(content.Blocks)...)
	f := &File{Filename: filename, Parser: parser, src: src, content: content}
	if attr, ok := content.Attributes["description"]; ok {
		d := &decoder{ctx: evalContext(nil, nil)}
		f.Description, _ = d.str(attr)
		diags = append(diags, d.diags...)
	}
	if attr, ok := content.Attributes[attrRepeat]; ok {
		var rdiags hcl.Diagnostics
		f.Repeat, rdiags = decodeRepeat(attr)
		diags = append(diags, rdiags...)
	}
	vars := duplicateCheck{}
	for _, b := range content.Blocks.OfType(blockVariable) {
		diags = append(diags, nonNil(vars.check("variable", b.Labels[0], b.DefRange))...)
		v, vdiags := decodeVariable(b)
		diags = append(diags, vdiags...)
		f.Variables = append(f.Variables, v)
	}
	sweeps := content.Blocks.OfType(blockSweep)
	for i, b := range sweeps {
		if i > 0 {
			diags = append(diags, errorAt(b.DefRange, "Duplicate sweep block",
				"A scenario has one sweep, declared at %s; put every dimension in its matrix.", sweeps[0].DefRange))
			continue
		}
		s, sdiags := decodeSweep(b, f.Variables)
		diags = append(diags, sdiags...)
		f.Sweep = s
	}
	return f, diags
}

func nonNil(d *hcl.Diagnostic) hcl.Diagnostics {
	if d == nil {
		return nil
	}
	return hcl.Diagnostics{d}
}

// Scenario is a fully decoded and validated scenario for one set of variable
// values.
type Scenario struct {
	Filename    string
	Description string
	Seed        int64
	Variables   map[string]cty.Value
	Clusters    []*Cluster
	Network     *Network
	Workloads   []*Workload
	Phases      []*Phase
	Checks      []*Check
}

// identifier is what checks can name after a dot (phase.NAME.put.p99):
// HCL's identifiers.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// checkLabels refuses block names that checks, the plan table or a
// terminal cannot take: clusters, workloads, phases and variables are
// reached by name in expressions, so they are identifiers; a check's name
// is free text, but not empty and on one line.
func checkLabels(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		if len(b.Labels) == 0 {
			continue
		}
		name, rng := b.Labels[0], b.LabelRanges[0]
		switch b.Type {
		case blockCluster, blockWorkload, blockPhase, blockVariable:
			if !identifier.MatchString(name) {
				diags = append(diags, errorAt(rng, fmt.Sprintf("Invalid %s name", b.Type),
					"%s names are read in checks (%s), so they are identifiers: letters, digits, '_' and '-', starting with a letter or '_', such as %q. %q is not.",
					b.Type, labelExample(b.Type), "steady-state", name))
			}
		case blockCheck:
			if strings.TrimSpace(name) == "" || strings.ContainsFunc(name, unicode.IsControl) {
				diags = append(diags, errorAt(rng, "Invalid check name",
					"Name the check with text on one line, such as \"steady write p99\"; it names the check in the summary, junit.xml and compare."))
			}
		}
	}
	return diags
}

func labelExample(blockType string) string {
	switch blockType {
	case blockCluster:
		return "cluster.NAME"
	case blockWorkload:
		return "phase.steady.workload.NAME.p99"
	case blockVariable:
		return "var.NAME"
	}
	return "phase.NAME.put.p99"
}

// DefaultSeed seeds every random choice when a scenario sets no seed.
const DefaultSeed = 1

// Decode decodes every block with vars bound, then validates the blocks
// against each other.
func (f *File) Decode(vars map[string]cty.Value) (*Scenario, hcl.Diagnostics) {
	ctx := evalContext(vars, nil)
	s := &Scenario{Filename: f.Filename, Description: f.Description, Seed: DefaultSeed, Variables: vars}
	var diags hcl.Diagnostics
	if attr, ok := f.content.Attributes["seed"]; ok {
		d := &decoder{ctx: ctx}
		s.Seed, _ = d.integer(attr, -1<<62, 1<<62)
		diags = append(diags, d.diags...)
	}
	names := map[string]duplicateCheck{}
	dup := func(kind, name string, rng hcl.Range) {
		if names[kind] == nil {
			names[kind] = duplicateCheck{}
		}
		diags = append(diags, nonNil(names[kind].check(kind, name, rng))...)
	}
	for _, b := range f.content.Blocks {
		switch b.Type {
		case blockCluster:
			dup("cluster", b.Labels[0], b.DefRange)
			c, cdiags := decodeCluster(b, ctx)
			diags = append(diags, cdiags...)
			s.Clusters = append(s.Clusters, c)
		case blockNetwork:
			if s.Network != nil {
				diags = append(diags, errorAt(b.DefRange, "Duplicate network block",
					"The network was already declared at %s; put every link in one network block.", s.Network.DeclRange))
				continue
			}
			n, ndiags := decodeNetwork(b, ctx)
			diags = append(diags, ndiags...)
			s.Network = n
		case blockWorkload:
			dup("workload", b.Labels[0], b.DefRange)
			w, wdiags := decodeWorkload(b, ctx)
			diags = append(diags, wdiags...)
			s.Workloads = append(s.Workloads, w)
		case blockPhase:
			dup("phase", b.Labels[0], b.DefRange)
			p, pdiags := decodePhase(b, ctx)
			diags = append(diags, pdiags...)
			s.Phases = append(s.Phases, p)
		case blockCheck:
			dup("check", b.Labels[0], b.DefRange)
			c, cdiags := decodeCheck(b, ctx, f.src)
			diags = append(diags, cdiags...)
			s.Checks = append(s.Checks, c)
		}
	}
	if s.Network == nil {
		s.Network = &Network{}
	}
	if diags.HasErrors() {
		return s, diags
	}
	diags = append(diags, s.validate(f)...)
	return s, diags
}

// Build is every Plan a file compiles to: one, or one per sweep point.
type Build struct {
	File    *File
	Plans   []*plan.Plan
	Skipped []Skipped
}

// Skipped is a sweep point left out because it is invalid (skip_invalid).
type Skipped struct {
	Point  Point  `json:"point"`
	Reason string `json:"reason"`
}

// Load parses, decodes, validates and compiles a scenario file. opts carries
// -var and -var-file values; a -var on a swept variable pins it.
func Load(parser *hclparse.Parser, filename string, src []byte, opts VarOptions) (*Build, hcl.Diagnostics) {
	f, diags := Parse(parser, filename, src)
	if diags.HasErrors() {
		SortDiagnostics(diags)
		return nil, capErrors(diags)
	}
	base, setByOption, vdiags := f.values(opts)
	diags = append(diags, vdiags...)
	if diags.HasErrors() {
		SortDiagnostics(diags)
		return nil, capErrors(diags)
	}
	b := &Build{File: f}
	points := []sweepPoint{{values: map[string]cty.Value{}}}
	if f.Sweep != nil {
		// A value given on the command line, by -var or -var-file alike,
		// pins its sweep dimension.
		points = f.Sweep.points(setByOption)
	}
	for _, pt := range points {
		vals := map[string]cty.Value{}
		for k, v := range base {
			vals[k] = v
		}
		for k, v := range pt.values {
			vals[k] = v
		}
		var pdiags hcl.Diagnostics
		for _, v := range f.Variables {
			if _, ok := pt.values[v.Name]; ok {
				pdiags = append(pdiags, checkType(v, vals[v.Name], f.Sweep.DeclRange)...)
				conv, err := convertTo(vals[v.Name], v.Type)
				if err == nil {
					vals[v.Name] = conv
				}
			}
		}
		var s *Scenario
		if !pdiags.HasErrors() {
			var sdiags hcl.Diagnostics
			s, sdiags = f.Decode(vals)
			pdiags = append(pdiags, sdiags...)
		}
		var pl *plan.Plan
		if !pdiags.HasErrors() {
			var cdiags hcl.Diagnostics
			pl, cdiags = s.Compile(pt.coords)
			pdiags = append(pdiags, cdiags...)
		}
		if pdiags.HasErrors() {
			if len(pt.coords) > 0 && f.Sweep.SkipInvalid {
				b.Skipped = append(b.Skipped, Skipped{Point: pt.coords, Reason: diagsText(pdiags)})
				continue
			}
			if len(pt.coords) > 0 {
				for _, d := range pdiags {
					d.Detail += " (sweep point " + pt.coords.String() + "; set skip_invalid = true in the sweep block to leave such points out)"
				}
			}
			diags = append(diags, pdiags...)
			break
		}
		diags = append(diags, pdiags...)
		pl.Repeat = f.Repeat
		b.Plans = append(b.Plans, pl)
	}
	if !diags.HasErrors() && len(b.Plans) == 0 && f.Sweep != nil {
		diags = append(diags, errorAt(f.Sweep.DeclRange, "Every sweep point is invalid",
			"skip_invalid left out all %d points; the first failed with: %s", len(b.Skipped), b.Skipped[0].Reason))
	}
	SortDiagnostics(diags)
	return b, capErrors(diags)
}

// derivedSeed gives each random choice its own stream, stable across runs.
func derivedSeed(seed int64, parts ...string) int64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return seed ^ int64(h.Sum64()&(1<<62-1))
}

func baseName(path string) string { return filepath.Base(path) }

func declaredVariables(content *hcl.BodyContent) map[string]bool {
	out := map[string]bool{}
	for _, b := range content.Blocks.OfType(blockVariable) {
		out[b.Labels[0]] = true
	}
	return out
}

// checkSyntax looks at every expression before any is evaluated. A var.NAME
// that names no declared variable is reported at the reference (HCL's own
// "This object does not have an attribute" says nothing of variables), and a
// number literal beyond float64's range is refused: converting 1e300000000 to
// a string, as any string attribute or template would, writes out every
// digit. declared is nil where variables cannot be referenced.
func checkSyntax(node hclsyntax.Node, declared map[string]bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var names []string
	for n := range declared {
		names = append(names, n)
	}
	sort.Strings(names)
	_ = hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		switch e := n.(type) {
		case *hclsyntax.LiteralValueExpr:
			if e.Val.Type() == cty.Number && e.Val.IsKnown() && !e.Val.IsNull() {
				if f, _ := e.Val.AsBigFloat().Float64(); math.IsInf(f, 0) {
					diags = append(diags, errorAt(e.SrcRange, "Number out of range", "Numbers must be within ±1.8e308."))
				}
			}
		case *hclsyntax.ScopeTraversalExpr:
			if declared == nil || e.Traversal.RootName() != "var" || len(e.Traversal) < 2 {
				return nil
			}
			var name string
			switch step := e.Traversal[1].(type) {
			case hcl.TraverseAttr:
				name = step.Name
			case hcl.TraverseIndex:
				if step.Key.Type() == cty.String && step.Key.IsKnown() && !step.Key.IsNull() {
					name = step.Key.AsString()
				}
			}
			if name != "" && !declared[name] {
				hint := didYouMean(name, names)
				if len(names) == 0 {
					hint = "This file declares no variables."
				}
				diags = append(diags, errorAt(e.Traversal[:2].SourceRange(), "Undeclared variable",
					"No variable %q is declared: declare it with `variable %q { default = ... }`. %s", name, name, hint))
			}
		}
		return nil
	})
	return diags
}
