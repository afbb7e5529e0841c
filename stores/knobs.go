package stores

import "github.com/coordlab/scenario/plan"

// KnobKind is the type of a knob's value in the scenario file.
type KnobKind int

// Knob kinds.
const (
	// KnobDuration: a duration above zero ("500ms"); Set gets a plan.Duration.
	KnobDuration KnobKind = iota + 1
	// KnobInt: a whole number in [Min, Max]; Set gets an int64.
	KnobInt
	// KnobSize: a number of bytes in [Min, Max] ("64MiB"); Set gets an int64.
	KnobSize
	// KnobDurationOrInt: either; Set gets a plan.Duration or an int64.
	KnobDurationOrInt
)

// Knob is one attribute of a store's knob block (`etcd { ... }`).
type Knob struct {
	Name string
	Kind KnobKind
	// Min and Max bound an int or size knob, and the int of a
	// KnobDurationOrInt.
	Min, Max int64
	// Set stores the decoded value in the cluster's knobs (made by
	// Driver.NewKnobs). An error is reported at the attribute.
	Set func(c *plan.ClusterSpec, v any) error
}

// KnobProblem is a combination of knobs the store refuses, or that is
// almost always a mistake.
type KnobProblem struct {
	// Knob is the attribute to point at; "" for the whole block.
	Knob    string
	Summary string
	Detail  string
}

// DurationKnob is a duration knob stored at field.
func DurationKnob(name string, field func(c *plan.ClusterSpec) *plan.Duration) Knob {
	return Knob{Name: name, Kind: KnobDuration, Set: func(c *plan.ClusterSpec, v any) error {
		*field(c) = v.(plan.Duration)
		return nil
	}}
}

// Int64Knob is a whole-number (KnobInt) or size (KnobSize) knob in [min,
// max] stored at field.
func Int64Knob(name string, kind KnobKind, min, max int64, field func(c *plan.ClusterSpec) *int64) Knob {
	return Knob{Name: name, Kind: kind, Min: min, Max: max, Set: func(c *plan.ClusterSpec, v any) error {
		*field(c) = v.(int64)
		return nil
	}}
}

// IntKnob is a whole-number knob in [min, max] stored at an int field.
func IntKnob(name string, min, max int64, field func(c *plan.ClusterSpec) *int) Knob {
	return Knob{Name: name, Kind: KnobInt, Min: min, Max: max, Set: func(c *plan.ClusterSpec, v any) error {
		*field(c) = int(v.(int64))
		return nil
	}}
}
