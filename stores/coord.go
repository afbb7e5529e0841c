package stores

import (
	"context"
	"time"
)

// Registry is a store's service-registry recipe, as services built on it
// use it: an instance registers a key held by a lease or session of a TTL
// and heartbeats it; consumers watch the keys under a prefix. Safe for
// concurrent use.
type Registry interface {
	// Register makes key (under the registry's prefix) exist with value,
	// held by a new lease or session of the registry's TTL.
	Register(ctx context.Context, key string, value []byte) (Instance, error)
	// Watch calls fn with what one consumer learns of the keys under
	// prefix, from its first listing on, until ctx ends; it returns nil
	// then. Watchers are spread over the members by watcher, their index.
	// fn is called from one goroutine at a time.
	Watch(ctx context.Context, watcher int, prefix string, fn func(WatchEvent)) error
	// List reads the keys under prefix now, as a linearizable read.
	List(ctx context.Context, prefix string) ([]string, error)
	// Semantics is what the store's watch promises (the checker's model).
	Semantics() WatchSemantics
	Close() error
}

// Instance is one registered instance.
type Instance interface {
	// KeepAlive sends one heartbeat. Expired is true when the store no
	// longer holds the instance (its lease or session is gone).
	KeepAlive(ctx context.Context) (expired bool, err error)
	// Deregister says goodbye: the key and its lease or session go.
	Deregister(ctx context.Context) error
	// Vanish stops the instance without a word: no heartbeat, nothing
	// closed that the store would hear of. Its resources are released,
	// still without a word, by Close.
	Vanish()
	// Close releases what the instance holds in the runner.
	Close()
}

// WatchSemantics names a watch model.
type WatchSemantics string

const (
	// WatchEvents: every change after the first listing, in order, once
	// (etcd watch: ordered by revision, no duplicates, no gaps, resumed
	// from the next revision after a disconnect).
	WatchEvents WatchSemantics = "events"
	// WatchSnapshots: a series of listings, each at least as new as the
	// one before; changes between two may be missed (ZooKeeper's one-shot
	// child watches, re-registered after each firing; Consul's blocking
	// queries, which return the latest index).
	WatchSnapshots WatchSemantics = "snapshots"
	// WatchHealth: listings of the healthy, as WatchSnapshots, except that
	// an instance may leave and come back (Consul's health queries: a
	// check that missed its TTL, or an agent that restarted, turns
	// critical, and passes again at the next heartbeat).
	WatchHealth WatchSemantics = "health"
)

// Watch event kinds.
const (
	WatchList   = "list"   // Keys is the whole listing
	WatchPut    = "put"    // Key was created
	WatchDelete = "delete" // Key was removed
)

// WatchEvent is what one watcher learned.
type WatchEvent struct {
	Kind string
	Key  string   // put, delete
	Keys []string // list
	// Revision orders what a watcher sees: etcd's revision of the change
	// (of the listing for list), ZooKeeper's child version of the parent,
	// Consul's index. 0 when unknown.
	Revision int64
	// Value is the key's new value (put) on a KeyWatcher; Values are a
	// listing's values in the order of Keys, and Revisions each listed
	// key's own revision (etcd's mod revision, ZooKeeper's mzxid, Consul's
	// ModifyIndex). A registry's watch leaves them empty.
	Value     []byte
	Values    [][]byte
	Revisions []int64
	// Err is a watch failure the store reported (the watch is then
	// started again); the other fields are empty.
	Err error
}

// RegistryOptions configure a registry's connections.
type RegistryOptions struct {
	ClientOptions
	// Prefix is where the instances' keys live; Register and Watch take
	// keys under it.
	Prefix string
	// TTL is every instance's lease or session TTL.
	TTL time.Duration
	// Watchers is how many consumers will watch, each on connections of
	// its own.
	Watchers int
	// Recipe picks among a store's registry recipes: "" is its first
	// (see Driver.RegistryRecipes).
	Recipe string
}

// Locker is a store's standard lock recipe: etcd's concurrency.Mutex,
// ZooKeeper's lock recipe (sequential ephemeral nodes, each watching the
// one before it), Consul's session lock (api.Lock). Safe for concurrent
// use.
type Locker interface {
	// Contender opens contender id's own session (lease, session) of the
	// locker's TTL, on connections of its own opened through dial (so
	// that a pause of it is a pause of its connections alone).
	Contender(ctx context.Context, id int, dial DialFunc) (Contender, error)
	Close() error
}

// Contender is one process competing for the lock.
type Contender interface {
	// Acquire blocks until the contender holds the lock, or ctx ends.
	Acquire(ctx context.Context) error
	// Release gives the lock up.
	Release(ctx context.Context) error
	// Lost is closed when the contender learns that its session (and so
	// any lock it held) is gone; a fresh channel after each Acquire.
	Lost() <-chan struct{}
	// Close ends the contender's session and connections.
	Close()
}

// LockerOptions configure a locker.
type LockerOptions struct {
	ClientOptions
	// Key is the lock's name: a key (etcd, Consul) or node path
	// (ZooKeeper) under which the recipe keeps its state.
	Key string
	// TTL is every contender's lease or session TTL.
	TTL time.Duration
	// Recipe is "mutex" (or "") or "election" (see plan.LockRecipes).
	Recipe string
}

// WatchHolder holds a watch on each of many keys, as a fleet of clients
// each watching its own configuration key does: the ZooKeeper watch
// manager's case, where a server's memory and its failover carry every
// watch.
type WatchHolder interface {
	// Hold sets one watch on each key, concurrency at a time, and returns
	// once every one is set (or ctx ends). The watches last until Close;
	// a client library that reconnects sets them again, as it would.
	Hold(ctx context.Context, keys []string, concurrency int) error
	Close() error
}

// KeyWatcher watches keys of a key-value workload with their values, as
// consumers of configuration pushed through the store do: each is told of
// every new value of the keys it watches (etcd), or of the newest one
// (ZooKeeper's one-shot data watches, set again after each firing;
// Consul's blocking queries). Safe for concurrent use.
type KeyWatcher interface {
	// Watch calls fn with what one consumer learns of the keys that start
	// with prefix (keys as Client.Do takes them), until ctx ends; it
	// returns nil then. The first event is a listing (Kind WatchList with
	// Keys, Values and Revisions, Revision the listing's own where the
	// store has one); then puts (Key, Value, Revision the key's own) and
	// deletes (Key), or further listings where the store answers with
	// listings (Consul). After a failure it reports an event with Err and
	// starts again from a fresh listing. Watchers are spread over the
	// members by watcher, each on connections (a session) of its own.
	// fn is called from one goroutine at a time.
	Watch(ctx context.Context, watcher int, prefix string, fn func(WatchEvent)) error
	// Read reads the keys under prefix with their values, linearizably.
	Read(ctx context.Context, prefix string) (map[string][]byte, error)
	// Semantics is what the store's watch promises: WatchEvents or
	// WatchSnapshots, where snapshots are per key.
	Semantics() WatchSemantics
	Close() error
}
