package dsl

import (
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/hashicorp/hcl/v2"
)

const (
	blockRegistry = "registry"
	blockLock     = "lock"
	blockWatches  = "watches"
)

var watchesSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "keys", Required: true}}}

// maxWatchKeys bounds a watches workload: a watch costs the runner a few
// KiB (etcd's client keeps a goroutine per watch).
const maxWatchKeys = 1000000

// decodeWatches reads a workload's watches block: `watches { keys = 100000 }`.
func decodeWatches(b *hcl.Block, w *Workload, d *decoder) {
	content, diags := decodeBody(b.Body, watchesSchema)
	d.diags = append(d.diags, diags...)
	w.Spec.Watches = &plan.WatchesSpec{}
	w.registryRanges = registryRanges{block: b.DefRange, ttl: b.DefRange, heartbeat: b.DefRange}
	if attr, ok := content.Attributes["keys"]; ok {
		n, _ := d.integer(attr, 0, maxWatchKeys)
		w.Spec.Watches.Keys = int(n)
	}
}

var lockSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "contenders"}, {Name: "ttl", Required: true}, {Name: "hold"}, {Name: "recipe"},
}}

const (
	defaultContenders = 3
	maxContenders     = 1000
	defaultHold       = time.Second
)

// decodeLock reads a workload's lock block:
//
//	lock {
//	  contenders = 3     # default 3
//	  ttl        = "5s"  # each contender's lease or session
//	  hold       = "1s"  # how long a holder keeps the lock; default 1s
//	}
func decodeLock(b *hcl.Block, w *Workload, d *decoder) {
	content, diags := decodeBody(b.Body, lockSchema)
	d.diags = append(d.diags, diags...)
	l := &plan.LockSpec{Contenders: defaultContenders, Hold: plan.Duration(defaultHold), Recipe: plan.LockMutex}
	w.registryRanges = registryRanges{block: b.DefRange, ttl: b.DefRange, heartbeat: b.DefRange}
	for _, attr := range sortedAttributes(content.Attributes) {
		switch attr.Name {
		case "contenders":
			n, _ := d.integer(attr, 2, maxContenders)
			l.Contenders = int(n)
		case "ttl":
			w.registryRanges.ttl = attr.Expr.Range()
			l.TTL, _ = d.duration(attr, false)
		case "hold":
			l.Hold, _ = d.duration(attr, false)
		case "recipe":
			l.Recipe, _ = d.oneOf(attr, plan.LockRecipes)
		}
	}
	w.Spec.Lock = l
}

var registrySchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "instances", Required: true}, {Name: "ttl", Required: true}, {Name: "heartbeat"},
	{Name: "watchers"}, {Name: "churn"}, {Name: "recipe"},
}}

// Registry bounds: a registry lives in the runner, an instance a lease or
// session and a heartbeat goroutine, a watcher a connection of its own.
const (
	maxInstances     = 100000
	maxWatchers      = 10000
	defaultWatchers  = 1
	maxRegistryChurn = 10000
)

// registryRanges is where a registry block's attributes are written.
type registryRanges struct {
	block, ttl, heartbeat, recipe hcl.Range
}

// decodeRegistry reads a workload's registry block:
//
//	registry {
//	  instances = 100
//	  ttl       = "10s"
//	  heartbeat = "3s"   # default: a third of the TTL
//	  watchers  = 10     # default 1
//	  churn     = 2      # re-registrations a second; default 0
//	}
func decodeRegistry(b *hcl.Block, w *Workload, d *decoder) {
	content, diags := decodeBody(b.Body, registrySchema)
	d.diags = append(d.diags, diags...)
	r := &plan.RegistrySpec{Watchers: defaultWatchers}
	w.registryRanges = registryRanges{block: b.DefRange, ttl: b.DefRange, heartbeat: b.DefRange}
	for _, attr := range sortedAttributes(content.Attributes) {
		switch attr.Name {
		case "instances":
			n, _ := d.integer(attr, 1, maxInstances)
			r.Instances = int(n)
		case "ttl":
			w.registryRanges.ttl = attr.Expr.Range()
			r.TTL, _ = d.duration(attr, false)
		case "heartbeat":
			w.registryRanges.heartbeat = attr.Expr.Range()
			r.Heartbeat, _ = d.duration(attr, false)
		case "watchers":
			n, _ := d.integer(attr, 0, maxWatchers)
			r.Watchers = int(n)
		case "recipe":
			w.registryRanges.recipe = attr.Expr.Range()
			r.Recipe, _ = d.str(attr)
		case "churn":
			if v, ok := d.number(attr); ok {
				if v < 0 || v > maxRegistryChurn {
					d.errorf(attr.Expr.Range(), "Invalid churn", "churn is re-registrations a second, between 0 and %d, such as 2.", maxRegistryChurn)
				}
				r.Churn = v
			}
		}
	}
	if r.Heartbeat == 0 && r.TTL > 0 {
		r.Heartbeat = r.TTL / 3
	}
	if r.TTL > 0 && r.Heartbeat >= r.TTL {
		d.errorf(w.registryRanges.heartbeat, "Heartbeat not shorter than the TTL",
			"Instances heartbeat every %s but expire after %s without one: every instance would flap. Write a heartbeat below the TTL, such as %q.",
			r.Heartbeat, r.TTL, plan.Duration(r.TTL.D()/3).D().Truncate(time.Millisecond).String())
	}
	w.Spec.Registry = r
}

// registryOnly are workload attributes that mean nothing to a registry or
// a lock workload.
var registryOnly = map[string]string{
	"mix":          "a registry's operations are its own (register, keepalive, deregister)",
	"consistency":  "watchers read as the store's watch recipe does",
	"keyspace":     "instances, not a keyspace, size a registry",
	"distribution": "instances, not a keyspace, size a registry",
	"zipf_s":       "instances, not a keyspace, size a registry",
	"range_limit":  "a registry sends no ranges",
	"preload":      "a registry writes its own keys",
	"workers":      "a registry runs in the runner",
	"endpoints":    "a registry spreads its instances and watchers over every member",
	"watchers":     "a registry's watchers go in its block (`registry { watchers = 10 }`); locks and watches have none",
}

// validateRecipe checks a registry's recipe against its store's.
func validateRecipe(w *Workload, c plan.ClusterSpec, drv stores.Driver) hcl.Diagnostics {
	r := w.Spec.Registry
	if r == nil || r.Recipe == "" || contains(drv.RegistryRecipes, r.Recipe) {
		return nil
	}
	return hcl.Diagnostics{errorAt(w.registryRanges.recipe, "Unknown registry recipe",
		"%s has no registry recipe %q. %s", c.Store, r.Recipe, didYouMean(r.Recipe, drv.RegistryRecipes))}
}

// validateWatches refuses a watches workload on a store that cannot hold
// its watches by the hundred thousand.
func validateWatches(w *Workload, c plan.ClusterSpec, drv stores.Driver) hcl.Diagnostics {
	if w.Spec.Watches == nil || drv.NewWatchHolder != nil {
		return nil
	}
	return hcl.Diagnostics{errorAt(w.registryRanges.block, "Store cannot hold many watches",
		"%s has no watch a client can hold by the hundred thousand: a Consul blocking query is an HTTP request held open, and Consul allows 200 connections per client address (limits.http_max_conns_per_client). Use etcd or ZooKeeper here, or a registry block, whose watchers Consul serves.", c.Store)}
}

// validateKeyWatchers checks watchers on a key-value workload: its store
// must watch keys with their values, and its mix must write, or the
// watchers would wait for nothing.
func validateKeyWatchers(w *Workload, c plan.ClusterSpec, drv stores.Driver) hcl.Diagnostics {
	if w.Spec.Watchers == 0 {
		return nil
	}
	if drv.NewKeyWatcher == nil {
		return hcl.Diagnostics{errorAt(w.watchersRange, "Store cannot watch keys",
			"%s has no key watch recipe here. Remove watchers.", c.Store)}
	}
	for _, m := range w.Spec.Mix {
		if m.Op == plan.OpPut || m.Op == plan.OpTxn || m.Op == plan.OpDelete {
			return nil
		}
	}
	return hcl.Diagnostics{errorAt(w.watchersRange, "Watchers of a workload that never writes",
		"Watchers are told of this workload's writes, and its mix sends none: add put (or txn, delete) to the mix, such as `mix = { put = 1 }`, or remove watchers.")}
}

// validateRegistry checks a registry or lock workload's TTL against its
// store.
func validateRegistry(w *Workload, c plan.ClusterSpec, minTTL func(plan.ClusterSpec) (time.Duration, string), recipes []string) hcl.Diagnostics {
	var ttl plan.Duration
	switch {
	case w.Spec.Registry != nil && w.Spec.Registry.Recipe != "" && len(recipes) > 0 && w.Spec.Registry.Recipe != recipes[0]:
		// MinTTL is the default recipe's: Consul's TTL checks take any
		// positive TTL, its sessions 10 s and more.
		return nil
	case w.Spec.Registry != nil:
		ttl = w.Spec.Registry.TTL
	case w.Spec.Lock != nil:
		ttl = w.Spec.Lock.TTL
	}
	if ttl == 0 || minTTL == nil {
		return nil
	}
	if min, why := minTTL(c); ttl.D() < min {
		return hcl.Diagnostics{errorAt(w.registryRanges.ttl, "TTL too short for the store",
			"%s cannot hold a lease or session for only %s: %s. Write a ttl of at least %q.", c.Store, ttl, why, plan.Duration(min).String())}
	}
	return nil
}
