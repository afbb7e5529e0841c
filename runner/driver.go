package runner

import (
	"context"
	"io"
	"time"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/etcd"
)

// driver is what the runner needs from a store: how to get its binary,
// start a node, tell when the cluster is ready, and talk to it.
type driver interface {
	// binary returns the store's server binary for c, building or finding
	// it on first use and reporting that on progress.
	binary(ctx context.Context, c dsl.ClusterSpec, cacheDir string, progress io.Writer) (string, error)
	// args are node i's command-line arguments (i is 1-based).
	args(c dsl.ClusterSpec, i int, eps []stores.Endpoint, dataDir string) []string
	waitReady(ctx context.Context, eps []stores.Endpoint, timeout time.Duration) error
	newClient(ctx context.Context, opts stores.ClientOptions) (stores.Client, error)
	newPoller(eps []stores.Endpoint) (poller, error)
	// clientPort and peerPort are the ports a node listens on when it has
	// an address of its own (in a network fabric).
	clientPort() int
	peerPort() int
	// strongRead is the store's linearizable read mode, with which
	// acknowledged writes are read back.
	strongRead() string
}

// poller asks every node for its status; see etcd.StatusPoller.
type poller interface {
	Poll(ctx context.Context, timeout time.Duration) []stores.NodeStatus
	Close() error
}

// driverFor returns the driver of a store, or nil when the runner has none.
func driverFor(store string) driver {
	switch store {
	case dsl.StoreEtcd:
		return etcdDriver{}
	}
	return nil
}

type etcdDriver struct{}

func (etcdDriver) binary(ctx context.Context, c dsl.ClusterSpec, cacheDir string, progress io.Writer) (string, error) {
	if p, ok := etcd.Exists(c.Version, cacheDir); ok {
		return p, nil
	}
	return etcd.Install(ctx, etcd.InstallOptions{Version: c.Version, CacheDir: cacheDir, Progress: progress})
}

func (etcdDriver) args(c dsl.ClusterSpec, i int, eps []stores.Endpoint, dataDir string) []string {
	return etcd.Args(c, i, eps, dataDir)
}

func (etcdDriver) waitReady(ctx context.Context, eps []stores.Endpoint, timeout time.Duration) error {
	return etcd.WaitReady(ctx, eps, timeout)
}

func (etcdDriver) newClient(ctx context.Context, opts stores.ClientOptions) (stores.Client, error) {
	return etcd.NewClient(ctx, opts)
}

func (etcdDriver) newPoller(eps []stores.Endpoint) (poller, error) {
	return etcd.NewStatusPoller(eps)
}

func (etcdDriver) strongRead() string { return "linearizable" }

func (etcdDriver) clientPort() int { return 2379 }
func (etcdDriver) peerPort() int   { return 2380 }
