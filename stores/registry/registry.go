// Package registry lists the stores scenario supports. Adding a store is a
// package with a Driver function, and one line here.
package registry

import (
	"slices"

	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/consul"
	"github.com/coordlab/scenario/stores/etcd"
	"github.com/coordlab/scenario/stores/zookeeper"
)

// All returns every store's driver, in the order they are listed to users.
func All() []stores.Driver {
	return []stores.Driver{
		etcd.Driver(),
		zookeeper.Driver(),
		consul.Driver(),
	}
}

// Lookup returns the driver of the store named name.
func Lookup(name string) (stores.Driver, bool) {
	all := All()
	i := slices.IndexFunc(all, func(d stores.Driver) bool { return d.Name == name })
	if i < 0 {
		return stores.Driver{}, false
	}
	return all[i], true
}

// Names lists the supported stores.
func Names() []string {
	var out []string
	for _, d := range All() {
		out = append(out, d.Name)
	}
	return out
}
