package dsl

import (
	"strings"

	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

const blockSweep = "sweep"

var sweepSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "matrix", Required: true}, {Name: "skip_invalid"},
}}

// Sweep runs the scenario once per combination of its dimensions' values.
type Sweep struct {
	Dimensions  []Dimension
	SkipInvalid bool
	DeclRange   hcl.Range
}

// Dimension is one swept variable and the values it takes, in source order.
type Dimension struct {
	Variable string
	Values   []cty.Value
	rng      hcl.Range
}

// Point is one combination of sweep values.
type Point []plan.SweepValue

func (p Point) String() string {
	parts := make([]string, len(p))
	for i, v := range p {
		parts[i] = v.Variable + "=" + v.Value
	}
	return strings.Join(parts, ", ")
}

func decodeSweep(block *hcl.Block, vars []*Variable) (*Sweep, hcl.Diagnostics) {
	s := &Sweep{DeclRange: block.DefRange}
	content, diags := decodeBody(block.Body, sweepSchema)
	d := &decoder{ctx: evalContext(nil, nil), diags: diags}
	if attr, ok := content.Attributes["skip_invalid"]; ok {
		s.SkipInvalid, _ = d.boolean(attr)
	}
	attr, ok := content.Attributes["matrix"]
	if !ok {
		return s, d.diags
	}
	pairs, mdiags := hcl.ExprMap(attr.Expr)
	if mdiags.HasErrors() || len(pairs) == 0 {
		d.errorf(attr.Expr.Range(), "Invalid sweep matrix",
			"Write the matrix as an object of lists, one per variable: `matrix = { election_timeout = [\"500ms\", \"1s\"] }`.")
		return s, d.diags
	}
	byName := map[string]*Variable{}
	var names []string
	for _, v := range vars {
		byName[v.Name] = v
		names = append(names, v.Name)
	}
	seen := duplicateCheck{}
	for _, p := range pairs {
		name := hcl.ExprAsKeyword(p.Key)
		if name == "" {
			d.errorf(p.Key.Range(), "Invalid sweep dimension", "Name a declared variable, without quotes.")
			continue
		}
		if diag := seen.check("sweep dimension", name, p.Key.Range()); diag != nil {
			d.add(diag)
			continue
		}
		v, ok := byName[name]
		if !ok {
			d.errorf(p.Key.Range(), "Sweep over an undeclared variable",
				"%q is not a declared variable: declare it with a `variable %q {}` block and use var.%s where it applies. %s", name, name, name, didYouMean(name, names))
			continue
		}
		val, ok := d.value(&hcl.Attribute{Name: "matrix." + name, Expr: p.Value, Range: p.Value.Range()})
		if !ok {
			continue
		}
		if !(val.Type().IsListType() || val.Type().IsTupleType()) || val.LengthInt() == 0 {
			d.errorf(p.Value.Range(), "Invalid sweep values", "List the values %q takes, such as `[\"50ms\", \"100ms\"]`.", name)
			continue
		}
		dim := Dimension{Variable: name, rng: p.Value.Range()}
		// Report a bad value at its element when the list is written out.
		elems, ediags := hcl.ExprList(p.Value)
		for i, el := range val.AsValueSlice() {
			rng := p.Value.Range()
			if !ediags.HasErrors() && len(elems) == val.LengthInt() {
				rng = elems[i].Range()
			}
			if diag := hugeNumber(el, rng); diag != nil {
				d.add(diag)
				continue
			}
			d.diags = append(d.diags, checkType(v, el, rng)...)
			dim.Values = append(dim.Values, el)
		}
		s.Dimensions = append(s.Dimensions, dim)
	}
	if n := s.size(); n > maxSweepPoints {
		d.errorf(attr.Expr.Range(), "Sweep too large",
			"The matrix has %.0f points; at most %d are allowed. Sweep fewer values, or pin a dimension with -var.", n, maxSweepPoints)
	}
	return s, d.diags
}

// maxSweepPoints bounds the size of a sweep's matrix.
const maxSweepPoints = 1000

// size is the number of points in the full matrix.
func (s *Sweep) size() float64 {
	n := 1.0
	for _, dim := range s.Dimensions {
		n *= float64(len(dim.Values))
	}
	return n
}

func checkType(v *Variable, val cty.Value, rng hcl.Range) hcl.Diagnostics {
	if _, err := convertTo(val, v.Type); err != nil {
		return hcl.Diagnostics{errorAt(rng, "Invalid sweep value", "Variable %q cannot take %s: %s.", v.Name, literal(val), err)}
	}
	return nil
}

// sweepPoint is one combination: its coordinates for reports and the values
// to bind.
type sweepPoint struct {
	coords Point
	values map[string]cty.Value
}

// points expands the matrix in order: the last dimension varies fastest.
// Dimensions pinned on the command line are left out.
func (s *Sweep) points(pinned map[string]bool) []sweepPoint {
	out := []sweepPoint{{values: map[string]cty.Value{}}}
	for _, dim := range s.Dimensions {
		if pinned[dim.Variable] {
			continue
		}
		var next []sweepPoint
		for _, p := range out {
			for _, v := range dim.Values {
				q := sweepPoint{
					coords: append(append(Point(nil), p.coords...), plan.SweepValue{Variable: dim.Variable, Value: literal(v)}),
					values: map[string]cty.Value{dim.Variable: v},
				}
				for k, pv := range p.values {
					q.values[k] = pv
				}
				next = append(next, q)
			}
		}
		out = next
	}
	return out
}
