package dsl

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

const blockWorkload = "workload"

var workloadSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: blockClient}, {Type: blockRegistry}, {Type: blockLock}, {Type: blockWatches}}, Attributes: []hcl.AttributeSchema{
	{Name: "cluster"}, {Name: "region"}, {Name: "mix"}, {Name: "consistency"},
	{Name: "key_size"}, {Name: "value_size"}, {Name: "keyspace"}, {Name: "key_prefix"},
	{Name: "distribution"}, {Name: "zipf_s"}, {Name: "seed"},
	{Name: "clients"}, {Name: "conns"}, {Name: "timeout"}, {Name: "range_limit"}, {Name: "preload"},
	{Name: "endpoints"}, {Name: "workers"}, {Name: "watchers"},
}}

// maxKeyWatchers bounds a workload's watchers: each holds a connection
// (a session) of its own, and a watch on every key on ZooKeeper.
const maxKeyWatchers = 1000

// maxWorkers bounds a workload's load workers (kubernetes provider): each
// takes a block of workload.IDStride generator ids.
const maxWorkers = 64

// Workload defaults, chosen to be light enough for a laptop.
const (
	defaultClients   = 10
	defaultConns     = 1
	defaultKeySize   = 16
	defaultValueSize = 256
	defaultKeyspace  = 10000
	defaultTimeout   = 5 * time.Second
	defaultRangeLim  = 100
	defaultZipfS     = 1.1
)

// Workload is a decoded workload block.
type Workload struct {
	Spec         plan.WorkloadSpec
	DeclRange    hcl.Range
	clusterRange hcl.Range
	clusterSet   bool
	regionRange  hcl.Range
	regionSet    bool
	consistRange hcl.Range
	consistSet   bool
	mixRanges    map[string]hcl.Range
	keySizeRange hcl.Range
	// valueSizeRange is where value_size is written, when it is.
	valueSizeRange hcl.Range
	valueSizeSet   bool
	preloadSet     bool
	// clientRanges is where each client attribute is written.
	clientRanges map[string]hcl.Range
	// registryRanges is where a registry block is written, if any.
	registryRanges registryRanges
	// watchersRange is where watchers is written, if it is.
	watchersRange hcl.Range
}

func decodeWorkload(block *hcl.Block, ctx *hcl.EvalContext) (*Workload, hcl.Diagnostics) {
	name := block.Labels[0]
	w := &Workload{DeclRange: block.DefRange, mixRanges: map[string]hcl.Range{}, keySizeRange: block.DefRange}
	w.Spec = plan.WorkloadSpec{
		Name: name, KeySize: defaultKeySize, ValueSize: defaultValueSize, Keyspace: defaultKeyspace,
		KeyPrefix: "/scenario/" + name + "/", Distribution: plan.DistUniform, Clients: defaultClients,
		Conns: defaultConns, Timeout: plan.Duration(defaultTimeout), RangeLimit: defaultRangeLim,
	}
	content, diags := decodeBody(block.Body, workloadSchema)
	d := &decoder{ctx: ctx, diags: diags}
	for i, b := range content.Blocks.OfType(blockClient) {
		if i > 0 {
			d.errorf(b.DefRange, "Duplicate client block", "A workload has one client block; merge the two.")
			continue
		}
		decodeClient(b, w, d)
	}
	for i, b := range content.Blocks.OfType(blockRegistry) {
		if i > 0 {
			d.errorf(b.DefRange, "Duplicate registry block", "A workload has one registry block; merge the two.")
			continue
		}
		decodeRegistry(b, w, d)
	}
	for i, b := range content.Blocks.OfType(blockLock) {
		if i > 0 || w.Spec.Registry != nil {
			d.errorf(b.DefRange, "Second kind of workload", "A workload has at most one registry, lock or watches block; make a workload of its own for each.")
			continue
		}
		decodeLock(b, w, d)
	}
	for i, b := range content.Blocks.OfType(blockWatches) {
		if i > 0 || w.Spec.Registry != nil || w.Spec.Lock != nil {
			d.errorf(b.DefRange, "Second kind of workload", "A workload has at most one registry, lock or watches block; make a workload of its own for each.")
			continue
		}
		decodeWatches(b, w, d)
	}
	_, hasMix := content.Attributes["mix"]
	switch {
	case w.Spec.Registry != nil || w.Spec.Lock != nil || w.Spec.Watches != nil:
		kind := blockRegistry
		switch {
		case w.Spec.Lock != nil:
			kind = blockLock
		case w.Spec.Watches != nil:
			kind = blockWatches
		}
		for _, attr := range sortedAttributes(content.Attributes) {
			if why, ok := registryOnly[attr.Name]; ok {
				d.errorf(attr.NameRange, "Attribute not for a "+kind,
					"A workload with a %s block takes no %q: %s. Remove it, or make a workload of its own for it.", kind, attr.Name, why)
			}
		}
		// Registrations go spec.Clients at a time; a registry's keys
		// are its own, named by instance and generation.
		w.Spec.KeyPrefix = "/scenario/" + name + "/instances/"
		if w.Spec.Lock != nil || w.Spec.Watches != nil {
			w.Spec.KeyPrefix = "/scenario/" + name + "/"
		}
		w.Spec.Keyspace, w.Spec.Distribution, w.Spec.RangeLimit = 0, "", 0
	case !hasMix:
		d.errorf(block.DefRange, "Missing mix",
			"A workload needs `mix = { put = 0.8, get = 0.2 }` (the key-value operations it sends), a registry block (instances that register and heartbeat, watchers that watch them) or a lock block (contenders for one lock).")
	}
	keySizeSet := false
	for _, attr := range sortedAttributes(content.Attributes) {
		switch attr.Name {
		case "cluster":
			w.clusterSet = true
			w.Spec.Cluster, w.clusterRange = clusterRef(attr, d)
		case "region":
			w.regionRange, w.regionSet = attr.Expr.Range(), true
			w.Spec.Region, _ = d.str(attr)
		case "mix":
			w.Spec.Mix = decodeMix(attr, d, w.mixRanges)
		case "consistency":
			w.consistRange, w.consistSet = attr.Expr.Range(), true
			w.Spec.Consistency, _ = d.str(attr)
		case "key_size":
			w.keySizeRange, keySizeSet = attr.Expr.Range(), true
			n, _ := d.size(attr, 1, 64<<10)
			w.Spec.KeySize = int(n)
		case "value_size":
			w.valueSizeRange, w.valueSizeSet = attr.Expr.Range(), true
			n, _ := d.size(attr, 1, 64<<20)
			w.Spec.ValueSize = int(n)
		case "keyspace":
			w.Spec.Keyspace, _ = d.integer(attr, 1, 1<<40)
		case "key_prefix":
			w.Spec.KeyPrefix, _ = d.str(attr)
		case "distribution":
			w.Spec.Distribution, _ = d.oneOf(attr, []string{plan.DistSequential, plan.DistUniform, plan.DistZipfian})
		case "zipf_s":
			if s, ok := d.number(attr); ok {
				if s <= 1 {
					d.errorf(attr.Expr.Range(), "Invalid zipf_s", "The zipfian exponent must be greater than 1, such as 1.1 (mild skew) or 2 (strong skew).")
				}
				w.Spec.ZipfS = s
			}
		case "seed":
			w.Spec.Seed, _ = d.integer(attr, -1<<62, 1<<62)
		case "clients":
			n, _ := d.integer(attr, 1, 100000)
			w.Spec.Clients = int(n)
		case "conns":
			n, _ := d.integer(attr, 1, 10000)
			w.Spec.Conns = int(n)
		case "timeout":
			w.Spec.Timeout, _ = d.duration(attr, false)
		case "range_limit":
			n, _ := d.integer(attr, 1, 1<<20)
			w.Spec.RangeLimit = int(n)
		case "preload":
			w.preloadSet = true
			w.Spec.Preload, _ = d.boolean(attr)
		case "endpoints":
			w.Spec.Endpoints, _ = d.oneOf(attr, []string{plan.EndpointsAll, plan.EndpointsLocal})
		case "workers":
			n, _ := d.integer(attr, 1, maxWorkers)
			w.Spec.Workers = int(n)
		case "watchers":
			w.watchersRange = attr.NameRange
			n, _ := d.integer(attr, 1, maxKeyWatchers)
			w.Spec.Watchers = int(n)
		}
	}
	if w.Spec.Distribution == plan.DistZipfian && w.Spec.ZipfS == 0 {
		w.Spec.ZipfS = defaultZipfS
	}
	if !w.preloadSet {
		// Reads of keys nobody wrote measure "not found" paths, not the store:
		// fill the keyspace first whenever the mix reads.
		for _, m := range w.Spec.Mix {
			if m.Op == plan.OpGet || m.Op == plan.OpRange || m.Op == plan.OpDelete || m.Op == plan.OpTxn {
				w.Spec.Preload = true
			}
		}
	}
	if w.Spec.Registry != nil || w.Spec.Lock != nil || w.Spec.Watches != nil {
		return w, d.diags
	}
	if w.Spec.KeySize > 0 && w.Spec.Keyspace > 0 {
		need := len(w.Spec.KeyPrefix) + len(strconv.FormatInt(w.Spec.Keyspace-1, 10))
		if !keySizeSet && w.Spec.KeySize < need {
			// The default key size is a floor, not a limit: the default
			// prefix names the workload, so longer names need longer keys.
			w.Spec.KeySize = need
		}
		if w.Spec.KeySize < need {
			d.errorf(w.keySizeRange, "Keys too short for the keyspace",
				"Keys are the prefix %q plus a %d-digit index: key_size must be at least %d, or shorten key_prefix.", w.Spec.KeyPrefix, need-len(w.Spec.KeyPrefix), need)
		}
	}
	return w, d.diags
}

// clusterRef reads `cluster = cluster.NAME` as a reference, not a string, so
// a wrong name is reported at the reference. It returns the name and where
// the name was written.
func clusterRef(attr *hcl.Attribute, d *decoder) (string, hcl.Range) {
	trav, diags := hcl.AbsTraversalForExpr(attr.Expr)
	if diags.HasErrors() || len(trav) != 2 || trav.RootName() != blockCluster {
		example := "main"
		// A quoted name is the likely mistake: show the reference to write.
		if v, vdiags := attr.Expr.Value(nil); !vdiags.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() && hclsyntax.ValidIdentifier(v.AsString()) {
			example = v.AsString()
		}
		d.errorf(attr.Expr.Range(), "Invalid cluster reference", "Refer to a cluster by its block, such as `cluster = cluster.%s` (no quotes).", example)
		return "", attr.Expr.Range()
	}
	step, ok := trav[1].(hcl.TraverseAttr)
	if !ok {
		d.errorf(attr.Expr.Range(), "Invalid cluster reference", "Refer to a cluster by its block, such as `cluster = cluster.main`.")
		return "", attr.Expr.Range()
	}
	return step.Name, step.SrcRange
}

// decodeMix reads `mix = { put = 0.8, get = 0.2 }`. Weights are relative and
// normalised to sum to 1, so { put = 4, get = 1 } works too.
func decodeMix(attr *hcl.Attribute, d *decoder, rngs map[string]hcl.Range) []plan.OpWeight {
	pairs, diags := hcl.ExprMap(attr.Expr)
	if diags.HasErrors() {
		d.errorf(attr.Expr.Range(), "Invalid mix", "Write the operation mix as an object of weights, such as `mix = { put = 0.8, get = 0.2 }`.")
		return nil
	}
	weights := map[string]float64{}
	total := 0.0
	for _, p := range pairs {
		key := hcl.ExprAsKeyword(p.Key)
		if key == "" {
			keyAttr := &hcl.Attribute{Name: "mix key", Expr: p.Key, Range: p.Key.Range()}
			key, _ = d.str(keyAttr)
		}
		if !contains(plan.AllOps, key) {
			d.errorf(p.Key.Range(), "Unknown operation in mix", "%q is not an operation. %s", key, didYouMean(key, plan.AllOps))
			continue
		}
		if prev, ok := rngs[key]; ok {
			d.errorf(p.Key.Range(), "Duplicate operation in mix", "%q already has a weight at %s.", key, prev)
			continue
		}
		rngs[key] = p.Key.Range()
		w, ok := d.number(&hcl.Attribute{Name: "mix." + key, Expr: p.Value, Range: p.Value.Range()})
		if !ok {
			continue
		}
		if w < 0 {
			d.errorf(p.Value.Range(), "Negative weight in mix", "The weight of %q must be zero or more.", key)
			continue
		}
		weights[key] = w
		total += w
	}
	if len(pairs) > 0 && total == 0 && !d.diags.HasErrors() {
		d.errorf(attr.Expr.Range(), "Empty mix", "Give at least one operation a positive weight, such as `mix = { put = 1 }`.")
		return nil
	}
	if len(pairs) == 0 {
		d.errorf(attr.Expr.Range(), "Empty mix", "Give at least one operation a weight, such as `mix = { put = 0.8, get = 0.2 }`.")
		return nil
	}
	var out []plan.OpWeight
	for _, op := range plan.AllOps {
		if w, ok := weights[op]; ok && w > 0 {
			out = append(out, plan.OpWeight{Op: op, Weight: w / total})
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (w *Workload) describeMix() string {
	s := ""
	for i, m := range w.Spec.Mix {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s=%.2f", m.Op, m.Weight)
	}
	return s
}
