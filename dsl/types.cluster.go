package dsl

import (
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/registry"
)

const blockCluster = "cluster"

const (
	maxNodes            = 9
	defaultReadyTimeout = 90 * time.Second
)

var clusterSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "store", Required: true},
		{Name: "version"},
		{Name: "nodes"},
		{Name: "placement"},
		{Name: "provider"},
		{Name: "binary"},
		{Name: "image"},
		{Name: "ready_timeout"},
	},
	Blocks: append(knobBlocks(), hcl.BlockHeaderSchema{Type: blockKubernetes}),
}

// knobBlocks are the knob blocks a cluster may hold: one per store, named
// like it.
func knobBlocks() []hcl.BlockHeaderSchema {
	var out []hcl.BlockHeaderSchema
	for _, name := range registry.Names() {
		out = append(out, hcl.BlockHeaderSchema{Type: name})
	}
	return out
}

// Cluster is a decoded cluster block.
type Cluster struct {
	Spec            plan.ClusterSpec
	DeclRange       hcl.Range
	storeRange      hcl.Range
	nodesRange      hcl.Range
	placementRanges []hcl.Range // per node, when placement was given
	knobs           knobRanges
}

// knobRanges remembers where timing knobs were written, for cross-knob checks.
type knobRanges struct {
	block hcl.Range
	attrs map[string]hcl.Range
}

func (k knobRanges) at(name string) hcl.Range {
	if r, ok := k.attrs[name]; ok {
		return r
	}
	return k.block
}

func decodeCluster(block *hcl.Block, ctx *hcl.EvalContext) (*Cluster, hcl.Diagnostics) {
	c := &Cluster{DeclRange: block.DefRange}
	c.Spec = plan.ClusterSpec{
		Name:         block.Labels[0],
		Nodes:        3,
		Provider:     plan.ProviderProcess,
		ReadyTimeout: plan.Duration(defaultReadyTimeout),
	}
	content, diags := decodeBody(block.Body, clusterSchema)
	d := &decoder{ctx: ctx, diags: diags}
	a := content.Attributes
	if attr, ok := a["store"]; ok {
		c.storeRange = attr.Expr.Range()
		c.Spec.Store, _ = d.oneOf(attr, registry.Names())
	}
	drv := storeDriver(c.Spec.Store)
	c.Spec.Version = drv.DefaultVersion
	if attr, ok := a["version"]; ok {
		if v, ok := d.str(attr); ok {
			if v == "" {
				d.errorf(attr.Expr.Range(), "Invalid version", "Write a version such as %q, or leave `version` out for the default.", drv.DefaultVersion)
			} else if err := checkVersion(drv, v); err != nil {
				// The one release grammar of every command (stores
				// install, images build), checked where it is written.
				d.errorf(attr.Expr.Range(), "Invalid version", "%s. Write a full release number such as %q (v is optional), or leave `version` out for the default.", err, drv.DefaultVersion)
			}
			c.Spec.Version = v
		}
	}
	c.nodesRange = block.DefRange
	if attr, ok := a["nodes"]; ok {
		c.nodesRange = attr.Expr.Range()
		n, ok := d.integer(attr, 1, maxNodes)
		if ok {
			c.Spec.Nodes = int(n)
		}
	}
	if attr, ok := a["provider"]; ok {
		c.Spec.Provider, _ = d.oneOf(attr, plan.Providers)
	}
	if attr, ok := a["binary"]; ok {
		c.Spec.Binary, _ = d.str(attr)
		if p := c.Spec.Provider; p == plan.ProviderDocker || p == plan.ProviderKubernetes {
			d.errorf(attr.NameRange, "Binary with the "+p+" provider", "`binary` names a server on this machine, for provider = %q. In containers the store runs from `image` (by default the official image of the store and version): remove `binary`, or set `image`.", plan.ProviderProcess)
		}
	}
	if attr, ok := a["image"]; ok {
		c.Spec.Image, _ = d.str(attr)
	}
	if attr, ok := a["ready_timeout"]; ok {
		c.Spec.ReadyTimeout, _ = d.duration(attr, false)
	}
	c.Spec.Placement = make([]string, c.Spec.Nodes)
	for i := range c.Spec.Placement {
		c.Spec.Placement[i] = plan.DefaultRegion
	}
	if attr, ok := a["placement"]; ok {
		regions, rngs, ok := d.stringList(attr)
		switch {
		case !ok:
		case len(regions) != c.Spec.Nodes:
			d.errorf(attr.Expr.Range(), "Placement does not match nodes",
				"The cluster has %d nodes but placement lists %d regions: list one region per node, in node order (n1 first).", c.Spec.Nodes, len(regions))
		default:
			for i, r := range regions {
				if r == "" {
					d.errorf(rngs[i], "Empty region name", "Name the region node n%d sits in, such as \"us-east\".", i+1)
				}
			}
			c.Spec.Placement, c.placementRanges = regions, rngs
		}
	}
	seen := map[string]hcl.Range{}
	for _, kb := range content.Blocks {
		if kb.Type == blockKubernetes {
			if prev, ok := seen[kb.Type]; ok {
				d.errorf(kb.DefRange, "Duplicate kubernetes block", "The cluster's kubernetes settings were already given at %s; merge the two blocks.", prev)
				continue
			}
			seen[kb.Type] = kb.DefRange
			c.Spec.Kubernetes = decodeKubernetes(kb, c, d)
			continue
		}
		if prev, ok := seen[kb.Type]; ok {
			d.errorf(kb.DefRange, fmt.Sprintf("Duplicate %s block", kb.Type), "The %s knobs were already given at %s; merge the two blocks.", kb.Type, prev)
			continue
		}
		seen[kb.Type] = kb.DefRange
		if c.Spec.Store != "" && kb.Type != c.Spec.Store {
			d.errorf(kb.DefRange, "Knobs for another store",
				"This cluster runs %s, so %s knobs do not apply here: write its knobs in `%s { ... }`.", c.Spec.Store, kb.Type, c.Spec.Store)
			continue
		}
		c.knobs = knobRanges{block: kb.DefRange, attrs: map[string]hcl.Range{}}
		c.decodeKnobs(kb, storeDriver(kb.Type), d)
	}
	c.validateKnobs(d)
	return c, d.diags
}

// decodeKnobs decodes a store's knob block by the schema its driver
// declares.
func (c *Cluster) decodeKnobs(block *hcl.Block, drv stores.Driver, d *decoder) {
	schema := &hcl.BodySchema{}
	for _, k := range drv.Knobs {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: k.Name})
	}
	content, diags := decodeBody(block.Body, schema)
	d.diags = append(d.diags, diags...)
	drv.NewKnobs(&c.Spec)
	for _, attr := range sortedAttributes(content.Attributes) {
		c.knobs.attrs[attr.Name] = attr.Expr.Range()
		i := slices.IndexFunc(drv.Knobs, func(k stores.Knob) bool { return k.Name == attr.Name })
		k := drv.Knobs[i] // the schema admits only these
		v, ok := d.knobValue(attr, k)
		if !ok {
			continue
		}
		if err := k.Set(&c.Spec, v); err != nil {
			d.errorf(attr.Expr.Range(), "Invalid "+k.Name, "%s", err)
		}
	}
}

// knobValue decodes a knob's attribute by its kind.
func (d *decoder) knobValue(attr *hcl.Attribute, k stores.Knob) (any, bool) {
	switch k.Kind {
	case stores.KnobDuration:
		return d.duration(attr, false)
	case stores.KnobInt:
		return d.integer(attr, k.Min, k.Max)
	case stores.KnobSize:
		return d.size(attr, k.Min, k.Max)
	case stores.KnobDurationOrInt:
		v, ok := d.value(attr)
		if !ok {
			return nil, false
		}
		if v.Type() == cty.Number {
			return d.integer(attr, k.Min, k.Max)
		}
		return d.duration(attr, false)
	}
	return nil, false
}

// validateKnobs reports the knob combinations the cluster's store
// refuses, at the knob to change.
func (c *Cluster) validateKnobs(d *decoder) {
	drv := storeDriver(c.Spec.Store)
	if drv.CheckKnobs == nil {
		return
	}
	for _, p := range drv.CheckKnobs(c.Spec) {
		d.add(errorIn(c.knobs.at(p.Knob), c.knobs.block, p.Summary, "%s", p.Detail))
	}
}

// storeDriver is the driver of store, or none (no version) for a store the
// file names wrongly, which is reported where it is written.
func storeDriver(store string) stores.Driver {
	d, _ := registry.Lookup(store)
	return d
}

// checkVersion checks version against the grammar of drv's store, if the
// store is known.
func checkVersion(drv stores.Driver, version string) error {
	if drv.CheckVersion == nil {
		return nil
	}
	return drv.CheckVersion(version)
}
