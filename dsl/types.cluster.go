package dsl

import (
	"fmt"
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
	Blocks: []hcl.BlockHeaderSchema{
		{Type: plan.StoreEtcd},
		{Type: plan.StoreZooKeeper},
		{Type: plan.StoreConsul},
	},
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
		c.Spec.Provider, _ = d.oneOf(attr, []string{plan.ProviderProcess, plan.ProviderDocker})
	}
	if attr, ok := a["binary"]; ok {
		c.Spec.Binary, _ = d.str(attr)
		if c.Spec.Provider == plan.ProviderDocker {
			d.errorf(attr.NameRange, "Binary with the docker provider", "`binary` names a server on this machine, for provider = %q. In containers the store runs from `image` (by default the official image of the store and version): remove `binary`, or set `image`.", plan.ProviderProcess)
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
		switch kb.Type {
		case plan.StoreEtcd:
			c.Spec.Etcd = decodeEtcdKnobs(kb, d, c.knobs)
		case plan.StoreZooKeeper:
			c.Spec.ZooKeeper = decodeZooKeeperKnobs(kb, d, c.knobs)
		case plan.StoreConsul:
			c.Spec.Consul = decodeConsulKnobs(kb, d, c.knobs)
		}
	}
	c.validateKnobs(d)
	return c, d.diags
}

var etcdKnobSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "heartbeat_interval"}, {Name: "election_timeout"}, {Name: "snapshot_count"},
	{Name: "quota_backend_bytes"}, {Name: "max_request_bytes"}, {Name: "auto_compaction"},
}}

func decodeEtcdKnobs(block *hcl.Block, d *decoder, rngs knobRanges) *plan.EtcdKnobs {
	content, diags := decodeBody(block.Body, etcdKnobSchema)
	d.diags = append(d.diags, diags...)
	k := &plan.EtcdKnobs{}
	for _, attr := range sortedAttributes(content.Attributes) {
		rngs.attrs[attr.Name] = attr.Expr.Range()
		switch attr.Name {
		case "heartbeat_interval":
			k.HeartbeatInterval, _ = d.duration(attr, false)
		case "election_timeout":
			k.ElectionTimeout, _ = d.duration(attr, false)
		case "snapshot_count":
			k.SnapshotCount, _ = d.integer(attr, 1, 1<<40)
		case "quota_backend_bytes":
			k.QuotaBackendBytes, _ = d.size(attr, 1, 1<<40)
		case "max_request_bytes":
			k.MaxRequestBytes, _ = d.size(attr, 1, 1<<31)
		case "auto_compaction":
			// A duration keeps that much history (periodic mode); a number
			// keeps that many revisions (revision mode).
			v, ok := d.value(attr)
			if !ok {
				continue
			}
			if v.Type() == cty.Number {
				if n, ok := d.integer(attr, 1, 1<<40); ok {
					k.AutoCompactionMode, k.AutoCompactionRetention = "revision", fmt.Sprint(n)
				}
			} else if dur, ok := d.duration(attr, false); ok {
				k.AutoCompactionMode, k.AutoCompactionRetention = "periodic", dur.String()
			}
		}
	}
	return k
}

var zookeeperKnobSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "tick_time"}, {Name: "init_limit"}, {Name: "sync_limit"},
	{Name: "snap_count"}, {Name: "max_client_cnxns"}, {Name: "jvm_heap"},
}}

func decodeZooKeeperKnobs(block *hcl.Block, d *decoder, rngs knobRanges) *plan.ZooKeeperKnobs {
	content, diags := decodeBody(block.Body, zookeeperKnobSchema)
	d.diags = append(d.diags, diags...)
	k := &plan.ZooKeeperKnobs{}
	for _, attr := range sortedAttributes(content.Attributes) {
		rngs.attrs[attr.Name] = attr.Expr.Range()
		switch attr.Name {
		case "tick_time":
			if t, ok := d.duration(attr, false); ok {
				if t.D()%time.Millisecond != 0 {
					d.errorf(attr.Expr.Range(), "Invalid tick_time", "ZooKeeper counts tickTime in whole milliseconds: write %q.", t.D().Round(time.Millisecond).String())
				}
				k.TickTime = t
			}
		case "init_limit":
			n, _ := d.integer(attr, 1, 1000)
			k.InitLimit = int(n)
		case "sync_limit":
			n, _ := d.integer(attr, 1, 1000)
			k.SyncLimit = int(n)
		case "snap_count":
			k.SnapCount, _ = d.integer(attr, 1, 1<<40)
		case "max_client_cnxns":
			n, _ := d.integer(attr, 0, 1<<20)
			k.MaxClientCnxns = int(n)
		case "jvm_heap":
			k.JVMHeap, _ = d.size(attr, 32<<20, 64<<30)
		}
	}
	return k
}

var consulKnobSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "raft_multiplier"}, {Name: "heartbeat_timeout"}, {Name: "election_timeout"},
	{Name: "leader_lease_timeout"}, {Name: "raft_snapshot_threshold"}, {Name: "raft_snapshot_interval"},
}}

func decodeConsulKnobs(block *hcl.Block, d *decoder, rngs knobRanges) *plan.ConsulKnobs {
	content, diags := decodeBody(block.Body, consulKnobSchema)
	d.diags = append(d.diags, diags...)
	k := &plan.ConsulKnobs{}
	for _, attr := range sortedAttributes(content.Attributes) {
		rngs.attrs[attr.Name] = attr.Expr.Range()
		switch attr.Name {
		case "raft_multiplier":
			n, _ := d.integer(attr, 1, 10)
			k.RaftMultiplier = int(n)
		case "heartbeat_timeout":
			k.HeartbeatTimeout, _ = d.duration(attr, false)
		case "election_timeout":
			k.ElectionTimeout, _ = d.duration(attr, false)
		case "leader_lease_timeout":
			k.LeaderLeaseTimeout, _ = d.duration(attr, false)
		case "raft_snapshot_threshold":
			k.RaftSnapshotThreshold, _ = d.integer(attr, 1, 1<<40)
		case "raft_snapshot_interval":
			k.RaftSnapshotInterval, _ = d.duration(attr, false)
		}
	}
	return k
}

// validateConsulTiming points at a Consul raft timing knob that Consul
// cannot run with. Outside dev mode Consul 1.20 derives heartbeat and
// election timeouts as raft_multiplier x 1s and the leader lease as
// raft_multiplier x 500ms (stores/consul.RaftTiming, which the driver
// applies, explains why), so each knob names a multiplier from 1 to 10 and
// all of them must name the same one.
func (c *Cluster) validateConsulTiming(d *decoder, k *plan.ConsulKnobs) {
	from, mult := "", 0
	if k.RaftMultiplier > 0 {
		from, mult = "raft_multiplier", k.RaftMultiplier
	}
	for _, knob := range []struct {
		name string
		v    plan.Duration
		base time.Duration
	}{
		{"heartbeat_timeout", k.HeartbeatTimeout, time.Second},
		{"election_timeout", k.ElectionTimeout, time.Second},
		{"leader_lease_timeout", k.LeaderLeaseTimeout, 500 * time.Millisecond},
	} {
		v := knob.v.D()
		if v == 0 {
			continue
		}
		if v%knob.base != 0 || v/knob.base < 1 || v/knob.base > 10 {
			d.add(errorIn(c.knobs.at(knob.name), c.knobs.block, "Consul cannot run this raft timing",
				"Consul scales its %s only through raft_multiplier: it is a multiple of %s from %s to %s; got %s.",
				knob.name, knob.base, knob.base, 10*knob.base, v))
			continue
		}
		m := int(v / knob.base)
		if from != "" && m != mult {
			d.add(errorIn(c.knobs.at(knob.name), c.knobs.block, "Conflicting Consul raft timing",
				"%s %s means raft_multiplier %d, but %s means %d: Consul scales heartbeat (1s), election (1s) and leader lease (500ms) by one multiplier.",
				knob.name, v, m, from, mult))
			continue
		}
		from, mult = knob.name, m
	}
}

// etcd's own limits (server/embed/config.go): it refuses to start outside them.
const (
	etcdDefaultHeartbeat = 100 * time.Millisecond
	etcdDefaultElection  = 1000 * time.Millisecond
	etcdMaxElection      = 50 * time.Second
)

func (c *Cluster) validateKnobs(d *decoder) {
	if k := c.Spec.Etcd; k != nil {
		hb, el := k.HeartbeatInterval.D(), k.ElectionTimeout.D()
		if hb == 0 {
			hb = etcdDefaultHeartbeat
		}
		if el == 0 {
			el = etcdDefaultElection
		}
		if (k.HeartbeatInterval > 0 || k.ElectionTimeout > 0) && el < 5*hb {
			// Point at the knob that was written: with only a heartbeat
			// set, it is what pushed past etcd's default election timeout.
			at, elText := c.knobs.at("election_timeout"), el.String()
			if k.ElectionTimeout == 0 {
				at, elText = c.knobs.at("heartbeat_interval"), el.String()+", the default"
			}
			d.add(errorIn(at, c.knobs.block, "Election timeout too short for the heartbeat",
				"etcd refuses an election_timeout (%s) below 5 x heartbeat_interval (%s): set election_timeout to at least %s, or lower heartbeat_interval. The etcd tuning guide suggests about 10 x the heartbeat.",
				elText, hb, 5*hb))
		}
		if el > etcdMaxElection {
			d.add(errorIn(c.knobs.at("election_timeout"), c.knobs.block, "Election timeout too long",
				"etcd refuses an election_timeout above %s; got %s.", etcdMaxElection, el))
		}
		for _, kv := range []struct {
			name string
			v    plan.Duration
		}{{"heartbeat_interval", k.HeartbeatInterval}, {"election_timeout", k.ElectionTimeout}} {
			if kv.v.D()%time.Millisecond != 0 {
				d.add(errorAt(c.knobs.at(kv.name), "Sub-millisecond etcd timing",
					"etcd takes %s in whole milliseconds: write %q.", kv.name, kv.v.D().Round(time.Millisecond).String()))
			}
		}
	}
	if k := c.Spec.Consul; k != nil {
		c.validateConsulTiming(d, k)
	}
	if k := c.Spec.ZooKeeper; k != nil && k.SyncLimit > 0 && k.InitLimit > 0 && k.SyncLimit > k.InitLimit {
		d.add(errorIn(c.knobs.at("sync_limit"), c.knobs.block, "sync_limit above init_limit",
			"A follower gets init_limit (%d ticks) to connect and sync_limit (%d ticks) to stay in sync: sync_limit above init_limit is almost always a mistake.", k.InitLimit, k.SyncLimit))
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
