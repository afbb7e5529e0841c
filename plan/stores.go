package plan

// storeDefaults lists the supported stores with the version used when a cluster
// names none.
var storeDefaults = []struct{ name, version string }{
	{StoreEtcd, "3.5.17"},
	{StoreZooKeeper, "3.8.0"},
	{StoreConsul, "1.20.2"},
}

// StoreNames lists the supported stores.
func StoreNames() []string {
	out := make([]string, len(storeDefaults))
	for i, s := range storeDefaults {
		out[i] = s.name
	}
	return out
}

// DefaultVersion is the version used for store when a cluster names none.
func DefaultVersion(store string) string {
	for _, s := range storeDefaults {
		if s.name == store {
			return s.version
		}
	}
	return ""
}

// DefaultRegion is where nodes sit when a cluster has no placement.
const DefaultRegion = "local"

// Read consistency modes, by store. The store packages name them after
// these, so each is spelled once.
const (
	EtcdLinearizable = "linearizable"
	EtcdSerializable = "serializable"
	ZooKeeperLocal   = "local"
	ZooKeeperSync    = "sync"
	ConsulDefault    = "default"
	ConsulConsistent = "consistent"
	ConsulStale      = "stale"
)

// consistencyModes lists each store's read modes; the first is the store's
// own default.
var consistencyModes = map[string][]string{
	StoreEtcd:      {EtcdLinearizable, EtcdSerializable},
	StoreZooKeeper: {ZooKeeperLocal, ZooKeeperSync},
	StoreConsul:    {ConsulDefault, ConsulConsistent, ConsulStale},
}

// ConsistencyModes lists the read consistency modes of store, its default first.
func ConsistencyModes(store string) []string { return consistencyModes[store] }
