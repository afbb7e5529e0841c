package dsl

import (
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/coordlab/scenario/plan"
)

const blockKubernetes = "kubernetes"

var kubernetesSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "storage_class"},
		{Name: "storage_size"},
		{Name: "region_label"},
		{Name: "regions"},
	},
}

// Kubernetes names, as the API server checks them, so that a typo is
// found here rather than by a pod that never schedules.
var (
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	labelName    = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelValue   = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
	quantity     = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$`)
)

// validLabelKey checks a label key: an optional DNS subdomain prefix and a
// slash, then a name.
func validLabelKey(k string) bool {
	prefix, name, found := strings.Cut(k, "/")
	if !found {
		return labelName.MatchString(k)
	}
	return len(prefix) <= 253 && dnsSubdomain.MatchString(prefix) && labelName.MatchString(name)
}

// decodeKubernetes decodes a cluster's kubernetes block: where its pods go
// and what their data sits on.
func decodeKubernetes(block *hcl.Block, c *Cluster, d *decoder) *plan.KubernetesSpec {
	content, diags := decodeBody(block.Body, kubernetesSchema)
	d.diags = append(d.diags, diags...)
	k := &plan.KubernetesSpec{}
	a := content.Attributes
	if attr, ok := a["storage_class"]; ok {
		if s, ok := d.str(attr); ok {
			if len(s) > 253 || !dnsSubdomain.MatchString(s) {
				d.errorf(attr.Expr.Range(), "Invalid storage class", "%q is not a Kubernetes object name: write the name of a StorageClass of the cluster, such as \"standard\" (kubectl get storageclass lists them).", s)
			}
			k.StorageClass = s
		}
	}
	if attr, ok := a["storage_size"]; ok {
		if s, ok := d.str(attr); ok {
			if !quantity.MatchString(s) {
				d.errorf(attr.Expr.Range(), "Invalid storage size", "%q is not a Kubernetes quantity: write a size such as \"10Gi\".", s)
			}
			if k.StorageClass == "" {
				d.errorf(attr.NameRange, "Storage size without a storage class", "storage_size sizes the volume claim of each member, which storage_class asks for; without one the data is on an emptyDir. Set storage_class, or remove storage_size.")
			}
			k.StorageSize = s
		}
	}
	if attr, ok := a["region_label"]; ok {
		if s, ok := d.str(attr); ok {
			if !validLabelKey(s) {
				d.errorf(attr.Expr.Range(), "Invalid region label", "%q is not a Kubernetes label key: write one such as %q or \"topology.kubernetes.io/zone\".", s, plan.DefaultRegionLabel)
			}
			k.RegionLabel = s
		}
	}
	if attr, ok := a["regions"]; ok {
		k.Regions = decodeRegionMap(attr, c, d)
		if k.RegionLabel == "" {
			k.RegionLabel = plan.DefaultRegionLabel
		}
	}
	return k
}

// decodeRegionMap reads regions = { <scenario region> = "<label value>" }:
// every region a member is placed in must be mapped, and every region
// mapped must be one of them.
func decodeRegionMap(attr *hcl.Attribute, c *Cluster, d *decoder) map[string]string {
	v, ok := d.value(attr)
	if !ok {
		return nil
	}
	mv, ok := d.convert(attr, v, cty.Map(cty.String), "a map of region to node label value, such as { us-east = \"us-east-1\" }")
	if !ok {
		return nil
	}
	out := map[string]string{}
	for key, val := range mv.AsValueMap() {
		if val.IsNull() {
			d.errorf(attr.Expr.Range(), "Invalid region mapping", "Region %q maps to null: write the label value of the Kubernetes nodes it stands for.", key)
			continue
		}
		// Kept even when invalid: the region is mapped, wrongly, and
		// said so once.
		out[key] = val.AsString()
		if s := val.AsString(); s == "" || !labelValue.MatchString(s) {
			d.errorf(attr.Expr.Range(), "Invalid region mapping", "Region %q maps to %q, which is not a Kubernetes label value (up to 63 letters, digits, '-', '_' or '.').", key, s)
		}
	}
	placed := slices.Compact(slices.Sorted(slices.Values(c.Spec.Placement)))
	var missing, unknown []string
	for _, r := range placed {
		if _, ok := out[r]; !ok {
			missing = append(missing, r)
		}
	}
	for r := range out {
		if !slices.Contains(placed, r) {
			unknown = append(unknown, r)
		}
	}
	sort.Strings(unknown)
	if len(missing) > 0 {
		d.errorf(attr.Expr.Range(), "Region without a mapping", "The cluster's members sit in %q, which regions does not map: add %s = \"<label value>\" for each.", missing, missing[0])
	}
	if len(unknown) > 0 {
		d.errorf(attr.Expr.Range(), "Mapping for a region no member is in", "regions maps %q, but the cluster's placement is %q: remove it, or fix the name.", unknown, placed)
	}
	return out
}
