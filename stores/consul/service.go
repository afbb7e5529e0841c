package consul

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/consul/api"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// The service-registry recipe "service", the way services register with
// Consul itself: each instance is a service registered with an agent,
// with a TTL check that the instance passes to heartbeat; consumers run
// blocking queries on the service's health and take its passing
// instances. When an instance stops passing its check, the agent that
// holds it turns the check critical once the TTL has run out (the agent
// runs the timer locally: no grace, unlike a session's 2 x TTL) and syncs
// that to the catalog; the instance then leaves the passing list. Its
// entry stays in the catalog, critical, until the agent reaps it (see
// deregisterCriticalAfter).
//
// The instances register with the servers' own agents, spread over them
// as the "kv" recipe spreads its sessions, because the clusters scenario
// launches have no client agents. In production each instance registers
// with the client agent on its host, whose anti-entropy syncs it to the
// servers; here the server's agent does the same sync to its own catalog.
// Either way an instance belongs to the agent it registered with: it does
// not move to another server when its own fails (that agent's node then
// fails its serfHealth check, which takes its instances out of the passing
// list too).
//
// Unlike a session, a TTL check has no minimum TTL: Consul's agent takes
// any positive duration. A heartbeat to a check that went critical but was
// not reaped yet revives it: the instance is passing again, and KeepAlive
// says it did not expire.

// deregisterCriticalAfter is every check's deregister_critical_service_after:
// once the check has been critical that long, the agent removes the
// instance from its state and so from the catalog. 1m is the agent's
// check_deregister_interval_min, the shortest it applies; its reaper runs
// every check_reap_interval, 30s by default, so a dead instance leaves the
// catalog 1m to 1m30s after its check went critical.
const deregisterCriticalAfter = "1m"

// metaValueMax and metaPairsMax are Consul's limits on service metadata,
// where an instance's value goes: 512 bytes per value, 64 pairs.
const (
	metaValueMax = 512
	metaPairsMax = 64
)

// serviceRegistry is a stores.Registry of Consul services with TTL
// checks, over HTTP connection pools of its own.
type serviceRegistry struct {
	prefix  string
	name    string // the service's name, from prefix
	ttl     string
	timeout time.Duration
	eps     []stores.Endpoint
	dial    stores.DialFunc
	pools   []*pool
	// registered counts Register calls: the next instance's index, which
	// picks its pool and server.
	registered atomic.Uint64
}

func newServiceRegistry(ctx context.Context, opts stores.RegistryOptions) (stores.Registry, error) {
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("consul service registry: no endpoints")
	}
	// Without a TTL the check would never go critical: an instance that
	// vanished would stay passing for good.
	if opts.TTL <= 0 {
		return nil, fmt.Errorf("consul service registry: TTL %s: want a positive TTL", opts.TTL)
	}
	r := &serviceRegistry{
		prefix:  opts.Prefix,
		name:    serviceName(opts.Prefix),
		ttl:     opts.TTL.String(),
		timeout: opts.Timeout,
		eps:     opts.Endpoints,
		dial:    opts.DialFunc(),
	}
	if r.timeout <= 0 {
		r.timeout = DefaultOpTimeout
	}
	pools, err := newPools(ctx, max(opts.Conns, 1), r.dial, r.eps)
	if err != nil {
		return nil, fmt.Errorf("consul service registry: %w", err)
	}
	r.pools = pools
	return r, nil
}

// serviceName is the Consul service whose instances are the keys under
// prefix: "scenario-", the last path element of prefix with what a
// service name cannot hold ([a-zA-Z0-9-] only, or DNS would not find it)
// turned into "-", and a hash of the whole prefix, so that two prefixes
// ending alike are two services. A leading slash does not count: "/a/"
// and "a/" are one prefix, as they are one KV path.
func serviceName(prefix string) string {
	p := consulKey(prefix)
	var last string
	for _, el := range strings.Split(p, "/") {
		if el != "" {
			last = el
		}
	}
	clean := strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return r
		}
		return '-'
	}, last)
	clean = strings.Trim(clean, "-")
	if len(clean) > 40 {
		clean = strings.TrimRight(clean[:40], "-")
	}
	h := fnv.New32a()
	h.Write([]byte(p))
	if clean == "" {
		return fmt.Sprintf("scenario-%08x", h.Sum32())
	}
	return fmt.Sprintf("scenario-%s-%08x", clean, h.Sum32())
}

// serviceID is the service ID of key under prefix: the rest of the key,
// which must be non-empty and go into a URL path as it is (the agent's
// endpoints take it there, unescaped by the api package).
func serviceID(prefix, key string) (string, error) {
	if !strings.HasPrefix(key, prefix) {
		return "", fmt.Errorf("key %q is not under the prefix %q", key, prefix)
	}
	id := key[len(prefix):]
	if id == "" || url.PathEscape(id) != id {
		return "", fmt.Errorf("key %q: %q cannot be a service ID (want a name without '/', '?', '%%', spaces)", key, id)
	}
	return id, nil
}

// checkID is the ID of the TTL check of service id, the one Consul would
// give the service's only check.
func checkID(id string) string { return "service:" + id }

// valueMeta spreads value over service metadata values of up to 512
// bytes, cut between UTF-8 characters: "value", "value-1", ...
func valueMeta(value []byte) (map[string]string, error) {
	if !utf8.Valid(value) {
		return nil, errors.New("the value is not UTF-8, which service metadata must be")
	}
	meta := map[string]string{}
	for i := 0; len(value) > 0 || i == 0; i++ {
		if i == metaPairsMax {
			return nil, fmt.Errorf("the value does not fit in %d metadata values of %d bytes", metaPairsMax, metaValueMax)
		}
		n := min(len(value), metaValueMax)
		for n < len(value) && !utf8.RuneStart(value[n]) {
			n--
		}
		k := "value"
		if i > 0 {
			k = fmt.Sprintf("value-%d", i)
		}
		meta[k] = string(value[:n])
		value = value[n:]
	}
	return meta, nil
}

func (r *serviceRegistry) Semantics() stores.WatchSemantics { return stores.WatchHealth }

// Register registers key's service, with its TTL check passing from the
// start, on the agent of the instance's server. Registering an ID the
// agent has already replaces that service, as Consul does: keys are
// unique per registration.
func (r *serviceRegistry) Register(ctx context.Context, key string, value []byte) (stores.Instance, error) {
	id, err := serviceID(r.prefix, key)
	if err != nil {
		return nil, fmt.Errorf("consul service registry: %w", err)
	}
	meta, err := valueMeta(value)
	if err != nil {
		return nil, fmt.Errorf("consul service registry: %s: %w", key, err)
	}
	i := r.registered.Add(1) - 1
	p := r.pools[i%uint64(len(r.pools))]
	sv := int(i % uint64(len(p.clients)))
	in := &serviceInstance{key: key, id: id, cli: p.clients[sv], node: p.nodes[sv], timeout: r.timeout}

	opCtx, cancel := stores.OpContext(ctx, r.timeout)
	defer cancel()
	err = in.cli.Agent().ServiceRegisterOpts(&api.AgentServiceRegistration{
		ID:   id,
		Name: r.name,
		Meta: meta,
		Check: &api.AgentServiceCheck{
			CheckID: checkID(id),
			Name:    "TTL of " + key,
			TTL:     r.ttl,
			// Passing at once: the instance is listed as soon as the
			// agent has synced it, not after its first heartbeat.
			Status:                         api.HealthPassing,
			DeregisterCriticalServiceAfter: deregisterCriticalAfter,
		},
	}, api.ServiceRegisterOpts{}.WithContext(opCtx))
	if err != nil {
		err = fmt.Errorf("consul service registry: register %s via %s: %w", key, plan.NodeName(in.node), err)
		// The registration may have been applied even when it failed (a
		// timeout). ctx may be over, hence a context of its own.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
		defer dcancel()
		if derr := in.deregister(dctx); derr != nil && !notFound(derr) {
			err = errors.Join(err, fmt.Errorf("consul service registry: deregister it: %w", derr))
		}
		return nil, err
	}
	return in, nil
}

// Watch runs blocking queries on the health of prefix's service, from
// server watcher % n on, with connections of its own, and lists its
// passing instances. Blocking queries answer with the latest state, not
// with each change: a listing is reported whenever the index moved.
func (r *serviceRegistry) Watch(ctx context.Context, watcher int, prefix string, fn func(stores.WatchEvent)) error {
	name := serviceName(prefix)
	// One idle connection: a watcher has one request out at a time.
	p, err := newPool(r.dial, 1, r.eps)
	if err != nil {
		return fmt.Errorf("consul service registry: watcher %d: %w", watcher, err)
	}
	defer p.transport.CloseIdleConnections()
	sv := watcher % len(p.clients)
	// index is what the next query blocks on; last is the index of the
	// last listing reported, if any.
	var index, last uint64
	reported := false
	for ctx.Err() == nil {
		entries, meta, err := watchHealth(ctx, p.clients[sv], name, index)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			fn(stores.WatchEvent{Err: fmt.Errorf("consul service registry: watch %s (service %s) via %s: %w", prefix, name, plan.NodeName(p.nodes[sv]), err)})
			select {
			case <-ctx.Done():
			case <-time.After(watchRetry):
			}
			// Keep the index: it is the cluster's raft index, the same on
			// every server.
			sv = (sv + 1) % len(p.clients)
			continue
		}
		// A query that timed out answers with the index it waited on:
		// nothing happened, nothing to report.
		if !reported || meta.LastIndex != last {
			fn(stores.WatchEvent{Kind: stores.WatchList, Keys: serviceKeys(prefix, entries), Revision: int64(meta.LastIndex)})
			reported, last = true, meta.LastIndex
		}
		index = nextIndex(index, meta.LastIndex)
	}
	return nil
}

// watchHealth is one blocking query on the passing instances of service
// name. Its context ends a little after the longest the server may hold
// it, so that a connection that went silent fails instead of hanging the
// watcher.
func watchHealth(ctx context.Context, cli *api.Client, name string, index uint64) ([]*api.ServiceEntry, *api.QueryMeta, error) {
	ctx, cancel := context.WithTimeout(ctx, watchWait+watchWait/16+5*time.Second)
	defer cancel()
	q := &api.QueryOptions{WaitIndex: index, WaitTime: watchWait}
	return cli.Health().Service(name, "", true, q.WithContext(ctx))
}

// serviceKeys are the keys of entries, prefix and service ID, sorted, each
// once (an ID registered on two agents is two entries).
func serviceKeys(prefix string, entries []*api.ServiceEntry) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Service != nil {
			out = append(out, prefix+e.Service.ID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// List reads the passing instances of prefix's service through the first
// server that answers, as a consistent read: the leader confirms its
// leadership first.
func (r *serviceRegistry) List(ctx context.Context, prefix string) ([]string, error) {
	ctx, cancel := stores.OpContext(ctx, r.timeout)
	defer cancel()
	name := serviceName(prefix)
	p := r.pools[0]
	var errs []error
	for i, cli := range p.clients {
		q := &api.QueryOptions{RequireConsistent: true}
		entries, _, err := cli.Health().Service(name, "", true, q.WithContext(ctx))
		if err == nil {
			return serviceKeys(prefix, entries), nil
		}
		errs = append(errs, fmt.Errorf("via %s: %w", plan.NodeName(p.nodes[i]), err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("consul service registry: list %s (service %s): %w", prefix, name, errors.Join(errs...))
}

// Close drops the instances' idle connections; watchers close their own
// when they return.
func (r *serviceRegistry) Close() error {
	for _, p := range r.pools {
		p.transport.CloseIdleConnections()
	}
	return nil
}

// notFound reports whether err is an agent's answer that it has no such
// service or check: 404 ("Unknown check ID", "Unknown service ID"), or
// "does not have associated TTL", which the agent answers with a 500
// when the check is in its state but its TTL timer is gone (a
// deregistration under way).
func notFound(err error) bool {
	var se api.StatusError
	if !errors.As(err, &se) {
		var pse *api.StatusError
		if !errors.As(err, &pse) || pse == nil {
			return false
		}
		se = *pse
	}
	return se.Code == 404 || strings.Contains(se.Body, "does not have associated TTL")
}

// serviceInstance is one registration: a service and its TTL check on one
// agent.
type serviceInstance struct {
	key      string
	id       string
	cli      *api.Client
	node     int
	timeout  time.Duration
	vanished atomic.Bool
}

// KeepAlive passes the TTL check, which restarts the agent's timer. The
// agent also writes the check's state to its data directory on each
// pass, so that it survives a restart: a heartbeat costs a file write on
// the agent.
func (in *serviceInstance) KeepAlive(ctx context.Context) (bool, error) {
	if in.vanished.Load() {
		return false, errVanished
	}
	ctx, cancel := stores.OpContext(ctx, in.timeout)
	defer cancel()
	q := &api.QueryOptions{}
	err := in.cli.Agent().UpdateTTLOpts(checkID(in.id), "", api.HealthPassing, q.WithContext(ctx))
	if err != nil {
		if notFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("consul service registry: pass the check of %s via %s: %w", in.key, plan.NodeName(in.node), err)
	}
	return false, nil
}

// Deregister removes the service and its check from the agent, which
// removes them from the catalog.
func (in *serviceInstance) Deregister(ctx context.Context) error {
	if in.vanished.Load() {
		return errVanished
	}
	ctx, cancel := stores.OpContext(ctx, in.timeout)
	defer cancel()
	if err := in.deregister(ctx); err != nil {
		return fmt.Errorf("consul service registry: deregister %s via %s: %w", in.key, plan.NodeName(in.node), err)
	}
	return nil
}

func (in *serviceInstance) deregister(ctx context.Context) error {
	q := &api.QueryOptions{}
	return in.cli.Agent().ServiceDeregisterOpts(in.id, q.WithContext(ctx))
}

// Vanish stops the instance: its check turns critical when the TTL has
// run out since its last pass.
func (in *serviceInstance) Vanish() { in.vanished.Store(true) }

// Close has nothing to release: the instance's connections belong to the
// registry's pool, which other instances share.
func (in *serviceInstance) Close() {}
