package dsl

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// decoder evaluates attributes into Go values, collecting one diagnostic per
// problem with the attribute's value as its subject.
type decoder struct {
	ctx   *hcl.EvalContext
	diags hcl.Diagnostics
}

func (d *decoder) add(diags ...*hcl.Diagnostic) {
	for _, diag := range diags {
		if diag != nil {
			d.diags = append(d.diags, diag)
		}
	}
}

func (d *decoder) errorf(rng hcl.Range, summary, detail string, args ...any) {
	d.add(errorAt(rng, summary, detail, args...))
}

// value evaluates attr, reporting evaluation errors and refusing null and
// unknown results.
func (d *decoder) value(attr *hcl.Attribute) (cty.Value, bool) {
	v, diags := attr.Expr.Value(d.ctx)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return cty.NilVal, false
	}
	if v.IsNull() {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Missing value for %q", attr.Name), "%q must not be null.", attr.Name)
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Unknown value for %q", attr.Name), "%q must be known before the run starts.", attr.Name)
		return cty.NilVal, false
	}
	return v, true
}

func (d *decoder) convert(attr *hcl.Attribute, v cty.Value, ty cty.Type, what string) (cty.Value, bool) {
	out, err := convert.Convert(v, ty)
	if err != nil {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid value for %q", attr.Name), "%q must be %s: %s.", attr.Name, what, err)
		return cty.NilVal, false
	}
	return out, true
}

func (d *decoder) str(attr *hcl.Attribute) (string, bool) {
	v, ok := d.value(attr)
	if !ok {
		return "", false
	}
	if v, ok = d.convert(attr, v, cty.String, "a string"); !ok {
		return "", false
	}
	return v.AsString(), true
}

func (d *decoder) boolean(attr *hcl.Attribute) (bool, bool) {
	v, ok := d.value(attr)
	if !ok {
		return false, false
	}
	if v, ok = d.convert(attr, v, cty.Bool, "true or false"); !ok {
		return false, false
	}
	return v.True(), true
}

func (d *decoder) number(attr *hcl.Attribute) (float64, bool) {
	v, ok := d.value(attr)
	if !ok {
		return 0, false
	}
	if v, ok = d.convert(attr, v, cty.Number, "a number"); !ok {
		return 0, false
	}
	f, _ := v.AsBigFloat().Float64()
	if math.IsInf(f, 0) || math.IsNaN(f) {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid value for %q", attr.Name), "%q must be a finite number.", attr.Name)
		return 0, false
	}
	return f, true
}

// integer reads a whole number within [min, max].
func (d *decoder) integer(attr *hcl.Attribute, min, max int64) (int64, bool) {
	v, ok := d.value(attr)
	if !ok {
		return 0, false
	}
	if v, ok = d.convert(attr, v, cty.Number, "a whole number"); !ok {
		return 0, false
	}
	return d.bigInt(attr, v.AsBigFloat(), min, max)
}

func (d *decoder) bigInt(attr *hcl.Attribute, bf *big.Float, min, max int64) (int64, bool) {
	if !bf.IsInt() {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid value for %q", attr.Name), "%q must be a whole number.", attr.Name)
		return 0, false
	}
	n, acc := bf.Int64()
	if acc != big.Exact || n < min || n > max {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid value for %q", attr.Name), "%q must be between %d and %d.", attr.Name, min, max)
		return 0, false
	}
	return n, true
}

// duration reads a duration string such as "250ms". Zero and negative
// durations are refused unless allowZero.
func (d *decoder) duration(attr *hcl.Attribute, allowZero bool) (plan.Duration, bool) {
	v, ok := d.value(attr)
	if !ok {
		return 0, false
	}
	if v.Type() == cty.Number {
		// Formatted from a float64: a literal such as 1e300000000 must not
		// be written out digit by digit.
		f, _ := v.AsBigFloat().Float64()
		example := "250ms"
		if math.Abs(f) < 1e15 {
			example = strconv.FormatFloat(f, 'f', -1, 64) + "ms"
		}
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid duration for %q", attr.Name),
			"A duration is a string with a unit: write %q rather than a bare number.", example)
		return 0, false
	}
	if v, ok = d.convert(attr, v, cty.String, "a duration string such as \"250ms\""); !ok {
		return 0, false
	}
	dur, err := plan.ParseDuration(v.AsString())
	if err != nil {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid duration for %q", attr.Name), "%s.", err)
		return 0, false
	}
	if dur < 0 && allowZero {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid duration for %q", attr.Name), "%q must not be negative: write \"0s\" or more, such as \"100ms\".", attr.Name)
		return 0, false
	}
	if dur < 0 || dur == 0 && !allowZero {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid duration for %q", attr.Name), "%q must be greater than zero, such as \"100ms\".", attr.Name)
		return 0, false
	}
	return plan.Duration(dur), true
}

// size reads a byte size given as a number or a string such as "1KiB".
func (d *decoder) size(attr *hcl.Attribute, min, max int64) (int64, bool) {
	v, ok := d.value(attr)
	if !ok {
		return 0, false
	}
	var n int64
	switch v.Type() {
	case cty.Number:
		if n, ok = d.bigInt(attr, v.AsBigFloat(), math.MinInt64, math.MaxInt64); !ok {
			return 0, false
		}
	case cty.String:
		var err error
		if n, err = plan.ParseSize(v.AsString()); err != nil {
			d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid size for %q", attr.Name), "%s.", err)
			return 0, false
		}
	default:
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid size for %q", attr.Name), "%q must be a number of bytes or a string such as \"1KiB\".", attr.Name)
		return 0, false
	}
	if n < min || n > max {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid size for %q", attr.Name), "%q must be between %s and %s.", attr.Name, plan.FormatBytes(min), plan.FormatBytes(max))
		return 0, false
	}
	return n, true
}

func (d *decoder) bandwidth(attr *hcl.Attribute) (int64, bool) {
	s, ok := d.str(attr)
	if !ok {
		return 0, false
	}
	bps, err := plan.ParseBandwidth(s)
	if err != nil {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid bandwidth for %q", attr.Name), "%s.", err)
		return 0, false
	}
	if bps <= 0 {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid bandwidth for %q", attr.Name), "%q must be greater than zero, such as \"10mbit\".", attr.Name)
		return 0, false
	}
	return bps, true
}

// percent reads a loss rate in percent: 10 or "10%".
func (d *decoder) percent(attr *hcl.Attribute) (float64, bool) {
	v, ok := d.value(attr)
	if !ok {
		return 0, false
	}
	var p float64
	switch v.Type() {
	case cty.Number:
		p, _ = v.AsBigFloat().Float64()
	case cty.String:
		var err error
		if p, err = plan.ParsePercent(v.AsString()); err != nil {
			d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid percentage for %q", attr.Name), "%s.", err)
			return 0, false
		}
	default:
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid percentage for %q", attr.Name), "%q must be a number between 0 and 100.", attr.Name)
		return 0, false
	}
	if p < 0 || p > 100 {
		d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid percentage for %q", attr.Name), "%q must be between 0 and 100 (percent), not %g.", attr.Name, p)
		return 0, false
	}
	return p, true
}

// oneOf reads a string that must be one of allowed.
func (d *decoder) oneOf(attr *hcl.Attribute, allowed []string) (string, bool) {
	s, ok := d.str(attr)
	if !ok {
		return "", false
	}
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid value for %q", attr.Name), "%q is not a valid %s. %s", s, attr.Name, didYouMean(s, allowed))
	return "", false
}

// stringList reads a list of strings, reporting bad elements at the element.
func (d *decoder) stringList(attr *hcl.Attribute) ([]string, []hcl.Range, bool) {
	exprs, diags := hcl.ExprList(attr.Expr)
	if diags.HasErrors() {
		// Not a literal list: evaluate it whole, then element ranges are the attribute's.
		v, ok := d.value(attr)
		if !ok {
			return nil, nil, false
		}
		lv, ok := d.convert(attr, v, cty.List(cty.String), "a list of strings")
		if !ok {
			return nil, nil, false
		}
		var out []string
		var rngs []hcl.Range
		for _, e := range lv.AsValueSlice() {
			if e.IsNull() {
				d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid value for %q", attr.Name), "%q must not contain null.", attr.Name)
				return nil, nil, false
			}
			out = append(out, e.AsString())
			rngs = append(rngs, attr.Expr.Range())
		}
		return out, rngs, true
	}
	out := make([]string, 0, len(exprs))
	rngs := make([]hcl.Range, 0, len(exprs))
	ok := true
	for _, e := range exprs {
		s, good := d.str(&hcl.Attribute{Name: attr.Name + " element", Expr: e, Range: e.Range()})
		if !good {
			ok = false
			continue
		}
		out = append(out, s)
		rngs = append(rngs, e.Range())
	}
	return out, rngs, ok
}

func convertTo(v cty.Value, ty cty.Type) (cty.Value, error) { return convert.Convert(v, ty) }
