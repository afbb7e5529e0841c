package dsl

import (
	"fmt"

	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

const (
	blockPhase = "phase"
	blockLoad  = "load"
	blockFault = "fault"
)

var phaseSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "duration", Required: true}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: blockLoad, LabelNames: []string{"workload"}},
		{Type: blockFault, LabelNames: []string{"kind"}},
	},
}

// Phase is a decoded phase block.
type Phase struct {
	Name          string
	Duration      plan.Duration
	DeclRange     hcl.Range
	durationRange hcl.Range
	Loads         []*PhaseLoad
	Faults        []*Fault
}

func decodePhase(block *hcl.Block, ctx *hcl.EvalContext) (*Phase, hcl.Diagnostics) {
	p := &Phase{Name: block.Labels[0], DeclRange: block.DefRange, durationRange: block.DefRange}
	content, diags := decodeBody(block.Body, phaseSchema)
	d := &decoder{ctx: ctx, diags: diags}
	if attr, ok := content.Attributes["duration"]; ok {
		p.durationRange = attr.Expr.Range()
		p.Duration, _ = d.duration(attr, false)
	}
	loads := map[string]hcl.Range{}
	for _, b := range content.Blocks {
		switch b.Type {
		case blockLoad:
			if prev, ok := loads[b.Labels[0]]; ok {
				d.errorf(b.DefRange, fmt.Sprintf("Duplicate load of workload %q", b.Labels[0]),
					"Workload %q already has a load in this phase at %s. A workload runs once per phase: merge the two loads, or declare a second workload.", b.Labels[0], prev)
			} else {
				loads[b.Labels[0]] = b.DefRange
			}
			p.Loads = append(p.Loads, decodeLoad(b, d))
		case blockFault:
			if f := decodeFault(b, d); f != nil {
				p.Faults = append(p.Faults, f)
			}
		}
	}
	return p, d.diags
}

var loadSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "clients"}, {Name: "rate"}}}

// PhaseLoad is what one workload does during a phase.
type PhaseLoad struct {
	Workload      string
	WorkloadRange hcl.Range
	DeclRange     hcl.Range
	// Closed loop: clients (a ramp when from != to); 0 means the workload's clients.
	ClientsFrom, ClientsTo int
	// Open loop: arrivals per second (a ramp when from != to).
	Open             bool
	RateFrom, RateTo float64
}

func decodeLoad(block *hcl.Block, d *decoder) *PhaseLoad {
	l := &PhaseLoad{Workload: block.Labels[0], WorkloadRange: block.LabelRanges[0], DeclRange: block.DefRange}
	content, diags := decodeBody(block.Body, loadSchema)
	d.diags = append(d.diags, diags...)
	clients, hasClients := content.Attributes["clients"]
	rate, hasRate := content.Attributes["rate"]
	if hasClients && hasRate {
		d.errorf(rate.Range, "Both clients and rate", "A load is either closed-loop (`clients = 10`: each client sends when its last request returned) or open-loop (`rate = 500`: requests per second, whatever the store does). Remove one of them.")
		return l
	}
	if hasClients {
		from, to, ok := rampOrNumber(clients, d)
		if ok {
			if from != float64(int(from)) || to != float64(int(to)) || from < 0 || to < 0 || from > 100000 || to > 100000 {
				d.errorf(clients.Expr.Range(), "Invalid clients", "Clients must be whole numbers between 0 and 100000.")
			} else if from == 0 && to == 0 {
				d.errorf(clients.Expr.Range(), "No clients", "A load needs at least one client; leave the workload out of this phase to idle it.")
			} else {
				l.ClientsFrom, l.ClientsTo = int(from), int(to)
			}
		}
	}
	if hasRate {
		l.Open = true
		from, to, ok := rampOrNumber(rate, d)
		if ok {
			if from < 0 || to < 0 || from > 1e7 || to > 1e7 {
				d.errorf(rate.Expr.Range(), "Invalid rate", "A rate is requests per second, between 0 and 10000000.")
			} else if from == 0 && to == 0 {
				d.errorf(rate.Expr.Range(), "Zero rate", "A rate of zero sends nothing; leave the workload out of this phase to idle it.")
			} else {
				l.RateFrom, l.RateTo = from, to
			}
		}
	}
	return l
}

// rampOrNumber reads `500` as a constant and `ramp(0, 500)` as a ramp.
func rampOrNumber(attr *hcl.Attribute, d *decoder) (from, to float64, ok bool) {
	v, ok := d.value(attr)
	if !ok {
		return 0, 0, false
	}
	if v.Type().IsObjectType() && v.Type().HasAttribute("from") && v.Type().HasAttribute("to") {
		f, okf := numberOf(v.GetAttr("from"))
		t, okt := numberOf(v.GetAttr("to"))
		if okf && okt {
			return f, t, true
		}
	} else if n, ok := numberOf(v); ok {
		return n, n, true
	}
	d.errorf(attr.Expr.Range(), fmt.Sprintf("Invalid %s", attr.Name), "Write a number, such as `%s = 100`, or a ramp, such as `%s = ramp(10, 100)`.", attr.Name, attr.Name)
	return 0, 0, false
}

func numberOf(v cty.Value) (float64, bool) {
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Number {
		return 0, false
	}
	f, _ := v.AsBigFloat().Float64()
	return f, true
}
