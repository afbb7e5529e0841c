package registry

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// TestDriversComplete holds every registered driver to the whole contract:
// the language, the runner and the commands call each field without
// checking it, so a missing one would panic in the middle of a run.
func TestDriversComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range All() {
		t.Run(d.Name, func(t *testing.T) {
			if d.Name == "" || seen[d.Name] {
				t.Fatalf("name %q empty or registered twice", d.Name)
			}
			seen[d.Name] = true
			v := reflect.ValueOf(d)
			for i := range v.NumField() {
				f := v.Type().Field(i)
				if f.Name == "Benchmark" || f.Name == "ClientKnobs" || f.Name == "NewWatchHolder" || f.Name == "TransferLeader" {
					continue // optional: a store may have no load tool, no client settings, no watches by the hundred thousand, no leadership transfer
				}
				if v.Field(i).IsZero() {
					t.Errorf("field %s is not set", f.Name)
				}
			}
			img := reflect.ValueOf(d.Image)
			for i := range img.NumField() {
				f := img.Type().Field(i)
				if f.Name == "TagPrefix" || (f.Name == "Server" && d.Image.Layout != stores.ImageGoBinary) {
					continue
				}
				if img.Field(i).IsZero() {
					t.Errorf("field Image.%s is not set", f.Name)
				}
			}
			if err := d.CheckVersion(d.DefaultVersion); err != nil {
				t.Errorf("default version %s refused: %v", d.DefaultVersion, err)
			}
			if err := d.Image.Buildable(d.DefaultVersion); err != nil {
				t.Errorf("default version's image cannot be built: %v", err)
			}
			if d.CheckVersion("latest") == nil {
				t.Error(`version "latest" accepted`)
			}
			if !slices.Contains(d.Modes, d.StrongRead) {
				t.Errorf("strong read mode %q is not one of the modes %v", d.StrongRead, d.Modes)
			}
			// Every knob decodes into the spec NewKnobs makes.
			spec := plan.ClusterSpec{Store: d.Name}
			d.NewKnobs(&spec)
			names := map[string]bool{}
			for _, k := range d.Knobs {
				if k.Name == "" || names[k.Name] || k.Kind == 0 || k.Set == nil {
					t.Errorf("knob %+v: no name, a name twice, no kind or no Set", k)
					continue
				}
				names[k.Name] = true
				v := map[stores.KnobKind]any{stores.KnobDuration: plan.Duration(time.Second), stores.KnobInt: k.Min + 1,
					stores.KnobSize: k.Min + 1, stores.KnobDurationOrInt: plan.Duration(time.Second)}[k.Kind]
				if err := k.Set(&spec, v); err != nil {
					t.Errorf("knob %s refuses %v: %v", k.Name, v, err)
				}
			}
			if len(d.Ports) < 2 {
				t.Errorf("ports %v: want at least the client and the peer port", d.Ports)
			}
			if limit, why := d.ValueLimit(plan.ClusterSpec{Store: d.Name}); limit <= 0 || why == "" {
				t.Errorf("value limit %d (%q)", limit, why)
			}
			if got, ok := Lookup(d.Name); !ok || got.Name != d.Name {
				t.Errorf("Lookup(%q) = %q, %v", d.Name, got.Name, ok)
			}
		})
	}
	if want := []string{plan.StoreEtcd, plan.StoreZooKeeper, plan.StoreConsul}; !slices.Equal(Names(), want) {
		t.Errorf("Names() = %v, want %v", Names(), want)
	}
	if _, ok := Lookup("redis"); ok {
		t.Error("Lookup of an unknown store succeeded")
	}
}

// TestElectionWindow holds each store's election window to its followers'
// longest randomised timeout, from its defaults and from its knobs.
func TestElectionWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    plan.ClusterSpec
		want time.Duration
	}{
		{"etcd defaults: 2 x 1 s and a 100 ms heartbeat", plan.ClusterSpec{Store: plan.StoreEtcd}, 2100 * time.Millisecond},
		{"etcd tuned", plan.ClusterSpec{Store: plan.StoreEtcd, Etcd: &plan.EtcdKnobs{HeartbeatInterval: plan.Duration(500 * time.Millisecond), ElectionTimeout: plan.Duration(5 * time.Second)}}, 10500 * time.Millisecond},
		{"consul defaults: raft_multiplier 5, 2 x 5 s", plan.ClusterSpec{Store: plan.StoreConsul}, 10 * time.Second},
		{"consul raft_multiplier 1", plan.ClusterSpec{Store: plan.StoreConsul, Consul: &plan.ConsulKnobs{RaftMultiplier: 1}}, 2 * time.Second},
		{"zookeeper defaults: (5 + 1) ticks of 2 s", plan.ClusterSpec{Store: plan.StoreZooKeeper}, 12 * time.Second},
		{"zookeeper tuned", plan.ClusterSpec{Store: plan.StoreZooKeeper, ZooKeeper: &plan.ZooKeeperKnobs{TickTime: plan.Duration(200 * time.Millisecond), SyncLimit: 2}}, 600 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := Lookup(tc.c.Store)
			if !ok {
				t.Fatalf("no driver %q", tc.c.Store)
			}
			if got := d.ElectionWindow(tc.c); got != tc.want {
				t.Errorf("ElectionWindow = %v, want %v", got, tc.want)
			}
		})
	}
}
