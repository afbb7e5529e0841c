package dsl

import (
	"maps"
	"slices"

	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
)

const blockClient = "client"

var clientSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "keepalive_time"}, {Name: "keepalive_timeout"}, {Name: "reconnect_backoff_max"}, {Name: "session_timeout"}, {Name: "retries"}, {Name: "require_leader"},
}}

// decodeClient reads a workload's client block into w.Spec.Client and
// remembers where each attribute was written, for the per-store check.
func decodeClient(block *hcl.Block, w *Workload, d *decoder) {
	content, diags := decodeBody(block.Body, clientSchema)
	d.diags = append(d.diags, diags...)
	w.clientRanges = map[string]hcl.Range{}
	c := &w.Spec.Client
	for _, attr := range sortedAttributes(content.Attributes) {
		w.clientRanges[attr.Name] = attr.NameRange
		switch attr.Name {
		case "retries":
			if n, ok := d.integer(attr, 0, plan.MaxRetries); ok {
				c.Retries = new(int(n))
			}
			continue
		case "require_leader":
			if b, ok := d.boolean(attr); ok {
				c.RequireLeader = new(b)
			}
			continue
		}
		v, _ := d.duration(attr, false)
		switch attr.Name {
		case "keepalive_time":
			c.KeepaliveTime = v
		case "keepalive_timeout":
			c.KeepaliveTimeout = v
		case "reconnect_backoff_max":
			c.ReconnectBackoffMax = v
		case "session_timeout":
			c.SessionTimeout = v
		}
	}
	if attr, ok := content.Attributes["keepalive_timeout"]; ok && c.KeepaliveTime == 0 {
		d.errorf(attr.NameRange, "Keepalive timeout without keepalive",
			"keepalive_timeout applies to keepalive pings; set keepalive_time too (clientv3 sends none by default).")
	}
}

// validateClient refuses client attributes the workload's store does not
// have.
func validateClient(w *Workload, store string, allowed []string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, name := range sortedRangeKeys(w.clientRanges) {
		if contains(allowed, name) {
			continue
		}
		have := "no client settings yet"
		if len(allowed) > 0 {
			have = "only " + quoteList(allowed)
		}
		diags = append(diags, errorAt(w.clientRanges[name], "Client setting not supported by the store",
			"%s clients have %s; %q is not one of them.", store, have, name))
	}
	return diags
}

func sortedRangeKeys(m map[string]hcl.Range) []string {
	return slices.Sorted(maps.Keys(m))
}
