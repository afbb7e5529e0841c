package dsl

import (
	"fmt"
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
		val, vdiags := attr.Expr.Value(evalContext(nil, nil))
		diags = append(diags, vdiags...)
		if !vdiags.HasErrors() {
			conv, err := convert.Convert(val, v.Type)
			if err != nil {
				diags = append(diags, errorAt(attr.Expr.Range(), "Invalid default value",
					"The default of variable %q does not match its type %s: %s.", v.Name, typeexpr.TypeString(v.Type), err))
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

// commandLine is a pseudo-range for diagnostics about command-line input.
func commandLine(what string) hcl.Range {
	return hcl.Range{Filename: what, Start: hcl.InitialPos, End: hcl.InitialPos}
}

// values resolves every variable: default, then var files, then -var flags.
func (f *File) values(opts VarOptions) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	byName := map[string]*Variable{}
	names := make([]string, 0, len(f.Variables))
	for _, v := range f.Variables {
		byName[v.Name] = v
		names = append(names, v.Name)
	}
	vals := map[string]cty.Value{}
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
		vals[v.Name] = conv
	}
	for _, path := range opts.VarFiles {
		file, fdiags := f.Parser.ParseHCLFile(path)
		diags = append(diags, fdiags...)
		if fdiags.HasErrors() {
			continue
		}
		attrs, adiags := file.Body.JustAttributes()
		diags = append(diags, adiags...)
		for _, attr := range sortedAttributes(attrs) {
			v, ok := byName[attr.Name]
			if !ok {
				diags = append(diags, errorAt(attr.NameRange, "Undeclared variable",
					"%q is not declared in %s. %s", attr.Name, f.Filename, didYouMean(attr.Name, names)))
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
		rng := commandLine("-var " + kv)
		name, raw, ok := strings.Cut(kv, "=")
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var option",
				Detail: fmt.Sprintf("-var %q has no '='; write -var name=value.", kv)})
			continue
		}
		v, ok := byName[name]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Undeclared variable",
				Detail: fmt.Sprintf("-var %s: no variable %q is declared in %s. %s", kv, name, f.Filename, didYouMean(name, names))})
			continue
		}
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
	return vals, diags
}

// parseVarValue reads a -var value: a raw string for string-typed (or
// untyped) variables, an HCL literal otherwise, so -var nodes=5 is a number.
func parseVarValue(v *Variable, raw string, rng hcl.Range) (cty.Value, hcl.Diagnostics) {
	if v.Type == cty.String || v.Type == cty.DynamicPseudoType && (!v.HasDefault || v.Default.Type() == cty.String) {
		return cty.StringVal(raw), nil
	}
	expr, diags := hclsyntax.ParseExpression([]byte(raw), rng.Filename, hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	return expr.Value(evalContext(nil, nil))
}

func sortedAttributes(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Range.Start.Byte < out[j].Range.Start.Byte })
	return out
}
