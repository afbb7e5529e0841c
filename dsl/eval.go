package dsl

import (
	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions are available in every expression of a scenario. Time helpers
// return milliseconds, the unit every duration metric uses, so
// `phase.steady.put.p99 < ms(250)` reads as written.
func functions() map[string]function.Function {
	return map[string]function.Function{
		"us":       scaleFunc(0.001),
		"ms":       scaleFunc(1),
		"seconds":  scaleFunc(1000),
		"minutes":  scaleFunc(60000),
		"duration": durationFunc,
		"ramp":     rampFunc,
		"min":      stdlib.MinFunc,
		"max":      stdlib.MaxFunc,
		"abs":      stdlib.AbsoluteFunc,
		"floor":    stdlib.FloorFunc,
		"ceil":     stdlib.CeilFunc,
		"format":   stdlib.FormatFunc,
		"lower":    stdlib.LowerFunc,
		"upper":    stdlib.UpperFunc,
		"length":   stdlib.LengthFunc,
		"concat":   stdlib.ConcatFunc,
		"range":    stdlib.RangeFunc,
	}
}

func scaleFunc(factor float64) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "n", Type: cty.Number}},
		Type:   function.StaticReturnType(cty.Number),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			f, _ := args[0].AsBigFloat().Float64()
			return cty.NumberFloatVal(f * factor), nil
		},
	})
}

// durationFunc turns "1m30s" into milliseconds, for checks.
var durationFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "d", Type: cty.String}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		d, err := plan.ParseDuration(args[0].AsString())
		if err != nil {
			return cty.UnknownVal(cty.Number), function.NewArgError(0, err)
		}
		return cty.NumberFloatVal(float64(d) / 1e6), nil
	},
})

var rampType = cty.Object(map[string]cty.Type{"from": cty.Number, "to": cty.Number})

// rampFunc describes a linear change over a phase: `rate = ramp(0, 500)`.
var rampFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "from", Type: cty.Number}, {Name: "to", Type: cty.Number}},
	Type:   function.StaticReturnType(rampType),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.ObjectVal(map[string]cty.Value{"from": args[0], "to": args[1]}), nil
	},
})

// evalContext is the one constructor of evaluation scopes: variables and
// functions, plus extra top-level names (check namespaces).
func evalContext(vars map[string]cty.Value, extra map[string]cty.Value) *hcl.EvalContext {
	v := map[string]cty.Value{"var": cty.EmptyObjectVal}
	if len(vars) > 0 {
		v["var"] = cty.ObjectVal(vars)
	}
	for k, val := range extra {
		v[k] = val
	}
	return &hcl.EvalContext{Variables: v, Functions: functions()}
}
