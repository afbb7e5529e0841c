package dsl

import (
	"math"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

const blockVariable = "variable"

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"},
		{Name: "default"},
		{Name: "description"},
	},
}

// Variable is a declared input of the scenario.
type Variable struct {
	Name        string
	Type        cty.Type // cty.DynamicPseudoType when not declared
	Default     cty.Value
	HasDefault  bool
	Description string
	DeclRange   hcl.Range
	typeRange   hcl.Range
}

func decodeVariable(block *hcl.Block) (*Variable, hcl.Diagnostics) {
	v := &Variable{Name: block.Labels[0], Type: cty.DynamicPseudoType, DeclRange: block.DefRange}
	content, diags := decodeBody(block.Body, variableSchema)
	if !hclsyntax.ValidIdentifier(v.Name) {
		diags = append(diags, errorAt(block.LabelRanges[0], "Invalid variable name",
			"%q is not a valid name: use letters, digits, underscores and dashes, starting with a letter.", v.Name))
	}
	if attr, ok := content.Attributes["type"]; ok {
		ty, tdiags := typeexpr.TypeConstraint(attr.Expr)
		diags = append(diags, tdiags...)
		if !tdiags.HasErrors() {
			v.Type = ty
			v.typeRange = attr.Expr.Range()
		}
	}
	if attr, ok := content.Attributes["description"]; ok {
		d := &decoder{}
		v.Description, _ = d.str(attr)
		diags = append(diags, d.diags...)
	}
	if attr, ok := content.Attributes["default"]; ok {
		if refs := attr.Expr.Variables(); len(refs) > 0 {
			diags = append(diags, errorAt(refs[0].SourceRange(), "Reference in a default",
				"A variable's default is a constant: it is read before any variable has a value."))
			return v, diags
		}
		val, vdiags := attr.Expr.Value(evalContext(nil, nil))
		diags = append(diags, vdiags...)
		if !vdiags.HasErrors() {
			conv, err := convert.Convert(val, v.Type)
			if err != nil {
				diags = append(diags, errorAt(attr.Expr.Range(), "Invalid default value",
					"The default of variable %q does not match its type %s: %s.", v.Name, typeexpr.TypeString(v.Type), err))
			} else if d := hugeNumber(conv, attr.Expr.Range()); d != nil {
				diags = append(diags, d)
			} else {
				v.Default, v.HasDefault = conv, true
			}
		}
	}
	return v, diags
}

// VarOptions are the values given on the command line.
type VarOptions struct {
	// Vars are -var name=value pairs in the order given.
	Vars []string
	// VarFiles are -var-file paths in the order given; later files and then
	// Vars override earlier ones.
	VarFiles []string
}

// span is the range of bytes [from, to) on the one line of a command-line
// pseudo-file.
func span(file string, from, to int) hcl.Range {
	return hcl.Range{Filename: file,
		Start: hcl.Pos{Line: 1, Column: from + 1, Byte: from},
		End:   hcl.Pos{Line: 1, Column: to + 1, Byte: to}}
}

// values resolves every variable: default, then var files, then -var flags.
// values returns every variable's value, and which of them -var or
// -var-file set.
func (f *File) values(opts VarOptions) (map[string]cty.Value, map[string]bool, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	byName := map[string]*Variable{}
	names := make([]string, 0, len(f.Variables))
	for _, v := range f.Variables {
		byName[v.Name] = v
		names = append(names, v.Name)
	}
	vals := map[string]cty.Value{}
	setByOption := map[string]bool{}
	for _, v := range f.Variables {
		if v.HasDefault {
			vals[v.Name] = v.Default
		}
	}
	set := func(v *Variable, val cty.Value, rng hcl.Range) {
		conv, err := convert.Convert(val, v.Type)
		if err != nil {
			diags = append(diags, errorAt(rng, "Invalid value for variable",
				"Variable %q must be %s: %s.", v.Name, typeexpr.TypeString(v.Type), err))
			return
		}
		if d := hugeNumber(conv, rng); d != nil {
			diags = append(diags, d)
			return
		}
		vals[v.Name] = conv
		setByOption[v.Name] = true
	}
	for _, path := range opts.VarFiles {
		file, fdiags := f.parseVarFile(path)
		diags = append(diags, fdiags...)
		if fdiags.HasErrors() {
			continue
		}
		attrs, adiags := file.Body.JustAttributes()
		diags = append(diags, adiags...)
		if sb, ok := file.Body.(*hclsyntax.Body); ok {
			if sdiags := checkSyntax(sb, nil); sdiags.HasErrors() {
				diags = append(diags, sdiags...)
				continue
			}
		}
		for _, attr := range sortedAttributes(attrs) {
			v, ok := byName[attr.Name]
			if !ok {
				diags = append(diags, errorAt(attr.NameRange, "Undeclared variable",
					"%q is not declared in %s. %s", attr.Name, f.Filename, declaredHint(names)(attr.Name)))
				continue
			}
			val, vdiags := attr.Expr.Value(evalContext(nil, nil))
			diags = append(diags, vdiags...)
			if !vdiags.HasErrors() {
				set(v, val, attr.Expr.Range())
			}
		}
	}
	for _, kv := range opts.Vars {
		// The option's text becomes a pseudo-file, so that diagnostics can
		// point into it and show it: "on -var nodes=many line 1".
		file := "-var " + kv
		f.Parser.AddFile(file, &hcl.File{Bytes: []byte(kv)})
		name, raw, ok := strings.Cut(kv, "=")
		if !ok {
			diags = append(diags, errorAt(span(file, 0, len(kv)), "Invalid -var option", "-var %q has no '='; write -var name=value.", kv))
			continue
		}
		v, ok := byName[name]
		if !ok {
			diags = append(diags, errorAt(span(file, 0, len(name)), "Undeclared variable",
				"-var %s: no variable %q is declared in %s. %s", kv, name, f.Filename, declaredHint(names)(name)))
			continue
		}
		rng := span(file, len(name)+1, len(kv))
		val, vdiags := parseVarValue(v, raw, rng)
		diags = append(diags, vdiags...)
		if !vdiags.HasErrors() {
			set(v, val, rng)
		}
	}
	for _, v := range f.Variables {
		if _, ok := vals[v.Name]; !ok {
			diags = append(diags, errorAt(v.DeclRange, "Missing value for variable",
				"Variable %q has no default: give it one with `default = ...`, or pass -var %s=VALUE.", v.Name, v.Name))
		}
	}
	return vals, setByOption, diags
}

// declaredHint suggests a declared variable for a misspelt one, or says
// that the file declares none (rather than "Allowed: .").
func declaredHint(names []string) func(string) string {
	return func(name string) string {
		if len(names) == 0 {
			return "The file declares no variables: add a `variable \"" + name + "\" { default = ... }` block to make it settable."
		}
		return didYouMean(name, names)
	}
}

// parseVarFile reads and parses a -var-file with the scenario's own limits.
// A file that cannot be read is reported at the option, with the reason.
func (f *File) parseVarFile(path string) (*hcl.File, hcl.Diagnostics) {
	src, err := ReadSource(path)
	if err != nil {
		opt := "-var-file " + path
		f.Parser.AddFile(opt, &hcl.File{Bytes: []byte(opt)})
		return nil, hcl.Diagnostics{errorAt(span(opt, len("-var-file "), len(opt)), "Cannot read variable file",
			"%s. Pass -var-file the path of an HCL file of name = value lines.", err)}
	}
	if diags := CheckSource(path, src); diags.HasErrors() {
		return nil, diags
	}
	return f.Parser.ParseHCL(src, path)
}

// parseVarValue reads a -var value: a raw string for string-typed (or
// untyped) variables, an HCL literal otherwise, so -var nodes=5 is a number.
func parseVarValue(v *Variable, raw string, rng hcl.Range) (cty.Value, hcl.Diagnostics) {
	if v.Type == cty.String || v.Type == cty.DynamicPseudoType && (!v.HasDefault || v.Default.Type() == cty.String) {
		return cty.StringVal(raw), nil
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), rng.Filename, rng.Start)
	if !diags.HasErrors() {
		if sdiags := checkSyntax(expr, nil); sdiags.HasErrors() {
			return cty.NilVal, sdiags
		}
		var val cty.Value
		if val, diags = expr.Value(evalContext(nil, nil)); !diags.HasErrors() {
			return val, nil
		}
	}
	if v.Type == cty.DynamicPseudoType {
		// Untyped, with a non-string default: take what is not a literal
		// as a string, as for any untyped variable.
		return cty.StringVal(raw), nil
	}
	// HCL's own message here ("There is no variable named ...") would send
	// the reader looking for the wrong thing.
	return cty.NilVal, hcl.Diagnostics{errorAt(rng, "Invalid value for variable",
		"-var %s=%s: variable %q is %s, and %q is not a literal of that type; write it as in HCL, such as %s.",
		v.Name, raw, v.Name, typeexpr.TypeString(v.Type), raw, typeExample(v.Type))}
}

// typeExample shows a literal of type t.
func typeExample(t cty.Type) string {
	switch {
	case t == cty.Number:
		return "5 or 0.5"
	case t == cty.Bool:
		return "true or false"
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		return `["a", "b"]`
	case t.IsMapType() || t.IsObjectType():
		return `{ a = 1 }`
	}
	return `"text"`
}

func sortedAttributes(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Range.Start.Byte < out[j].Range.Start.Byte })
	return out
}

// hugeNumber refuses numbers beyond float64's range anywhere in a variable's
// value. Variables are rendered into plans as HCL literals, and a literal
// such as 1e300000000 would be written out digit by digit.
func hugeNumber(v cty.Value, rng hcl.Range) *hcl.Diagnostic {
	var bad *hcl.Diagnostic
	_ = cty.Walk(v, func(_ cty.Path, el cty.Value) (bool, error) {
		if bad != nil || !el.IsKnown() || el.IsNull() {
			return false, nil
		}
		if el.Type() == cty.Number {
			if f, _ := el.AsBigFloat().Float64(); math.IsInf(f, 0) {
				bad = errorAt(rng, "Number out of range", "Numbers in variables must be within ±1.8e308.")
			}
		}
		return true, nil
	})
	return bad
}
