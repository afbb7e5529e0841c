package dsl

import (
	"fmt"

	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
)

const (
	blockNetwork = "network"
	blockDefault = "default"
	blockWithin  = "within"
	blockLink    = "link"
)

var networkSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: blockDefault},
		{Type: blockWithin},
		{Type: blockLink, LabelNames: []string{"region_a", "region_b"}},
	},
}

var linkSchema = &hcl.BodySchema{Attributes: attributeSchemas(plan.ShapingParams)}

func attributeSchemas(names []string) []hcl.AttributeSchema {
	out := make([]hcl.AttributeSchema, len(names))
	for i, n := range names {
		out[i] = hcl.AttributeSchema{Name: n}
	}
	return out
}

// Network is the decoded network block.
type Network struct {
	Spec       plan.NetworkSpec
	DeclRange  hcl.Range
	linkRanges []linkRef // per Spec.Links entry: where its regions were named
}

type linkRef struct {
	a, b hcl.Range
}

func decodeNetwork(block *hcl.Block, ctx *hcl.EvalContext) (*Network, hcl.Diagnostics) {
	n := &Network{DeclRange: block.DefRange}
	content, diags := decodeBody(block.Body, networkSchema)
	d := &decoder{ctx: ctx, diags: diags}
	seen := map[[2]string]hcl.Range{}
	// The default and within links are given once each.
	single := map[string]hcl.Range{}
	once := func(b *hcl.Block, what string, into *plan.LinkSpec) {
		if prev, ok := single[b.Type]; ok {
			d.errorf(b.DefRange, "Duplicate "+b.Type+" link", "The link %s was already given at %s; merge the two blocks.", what, prev)
			return
		}
		single[b.Type] = b.DefRange
		*into = decodeLink(b.Body, d)
	}
	for _, b := range content.Blocks {
		switch b.Type {
		case blockWithin:
			once(b, "within a region", &n.Spec.Within)
		case blockDefault:
			once(b, "between regions", &n.Spec.Default)
		case blockLink:
			a, bb := b.Labels[0], b.Labels[1]
			key := [2]string{a, bb}
			if bb < a {
				key = [2]string{bb, a}
			}
			if prev, ok := seen[key]; ok {
				d.errorf(b.DefRange, fmt.Sprintf("Duplicate link %q %q", a, bb),
					"The link between %q and %q was already declared at %s. Links are symmetric: declare each pair once.", a, bb, prev)
				continue
			}
			seen[key] = b.DefRange
			l := decodeLink(b.Body, d)
			l.A, l.B = a, bb
			n.Spec.Links = append(n.Spec.Links, l)
			n.linkRanges = append(n.linkRanges, linkRef{a: b.LabelRanges[0], b: b.LabelRanges[1]})
		}
	}
	return n, d.diags
}

func decodeLink(body hcl.Body, d *decoder) plan.LinkSpec {
	content, diags := decodeBody(body, linkSchema)
	d.diags = append(d.diags, diags...)
	s, _ := decodeShaping(content.Attributes, d)
	if attr, ok := content.Attributes["jitter"]; ok {
		checkJitter(d, attr, s.RTT, s.Jitter)
	}
	return plan.LinkSpec{Shaping: s}
}

// decodeShaping reads the shaping parameters among a and counts those set.
func decodeShaping(a hcl.Attributes, d *decoder) (s plan.Shaping, set int) {
	for _, name := range plan.ShapingParams {
		attr, ok := a[name]
		if !ok {
			continue
		}
		set++
		switch name {
		case "rtt":
			s.RTT, _ = d.duration(attr, true)
		case "jitter":
			s.Jitter, _ = d.duration(attr, true)
		case "loss":
			s.Loss, _ = d.percent(attr)
		case "bandwidth":
			s.Bandwidth, _ = d.bandwidth(attr)
		}
	}
	return s, set
}

// checkJitter refuses more jitter than latency: the delay of a round trip
// cannot go below zero, so such a link would have neither the declared
// mean nor the declared spread.
func checkJitter(d *decoder, attr *hcl.Attribute, rtt, jitter plan.Duration) {
	if jitter > rtt {
		d.errorf(attr.Expr.Range(), "Jitter larger than the RTT",
			"jitter = %q on an rtt of %q: round trips cannot vary by more than they last. Set rtt to at least %q, or lower the jitter.", jitter, rtt, jitter)
	}
}
