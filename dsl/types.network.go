package dsl

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

const (
	blockNetwork = "network"
	blockDefault = "default"
	blockLink    = "link"
)

var networkSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: blockDefault},
		{Type: blockLink, LabelNames: []string{"region_a", "region_b"}},
	},
}

var linkSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "rtt"}, {Name: "jitter"}, {Name: "loss"}, {Name: "bandwidth"},
}}

// Network is the decoded network block.
type Network struct {
	Spec       NetworkSpec
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
	var defaultSeen *hcl.Range
	for _, b := range content.Blocks {
		switch b.Type {
		case blockDefault:
			if defaultSeen != nil {
				d.errorf(b.DefRange, "Duplicate default link", "The default link was already given at %s; merge the two blocks.", *defaultSeen)
				continue
			}
			r := b.DefRange
			defaultSeen = &r
			n.Spec.Default = decodeLink(b.Body, d)
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

func decodeLink(body hcl.Body, d *decoder) LinkSpec {
	content, diags := decodeBody(body, linkSchema)
	d.diags = append(d.diags, diags...)
	var l LinkSpec
	a := content.Attributes
	if attr, ok := a["rtt"]; ok {
		l.RTT, _ = d.duration(attr, true)
	}
	if attr, ok := a["jitter"]; ok {
		l.Jitter, _ = d.duration(attr, true)
	}
	if attr, ok := a["loss"]; ok {
		l.Loss, _ = d.percent(attr)
	}
	if attr, ok := a["bandwidth"]; ok {
		l.Bandwidth, _ = d.bandwidth(attr)
	}
	return l
}
