package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/consul"
	"github.com/coordlab/scenario/stores/etcd"
	"github.com/coordlab/scenario/stores/zookeeper"
)

// driver is what the runner needs from a store: how to get and launch its
// server, tell when the cluster is ready, and talk to it.
type driver interface {
	// install finds or builds the store's server for c (c.Binary when
	// set), reporting a build on progress, and returns how to launch nodes.
	install(ctx context.Context, c plan.ClusterSpec, cacheDir string, progress io.Writer) (launcher, error)
	// containerLauncher launches nodes of c in the store's image, laid out
	// as the official image is (see package images).
	containerLauncher(c plan.ClusterSpec) launcher
	// ports are the ports a node listens on when it has an address of its
	// own (in a network fabric): the client port, the peer port, then the
	// store's others, in the order of stores.Endpoint.Extra. On loopback
	// each node gets as many free ports.
	ports() []int
	waitReady(ctx context.Context, eps []stores.Endpoint, timeout time.Duration) error
	newClient(ctx context.Context, opts stores.ClientOptions) (stores.Client, error)
	// clientSettings describes what a workload's clients run with, the
	// library's defaults named as such.
	clientSettings(c plan.ClientSpec) map[string]string
	newPoller(eps []stores.Endpoint) (poller, error)
	// strongRead is the store's linearizable read mode, with which
	// acknowledged writes are read back.
	strongRead() string
}

// launcher returns the command that starts node (1-based) of cluster c,
// writing any configuration the node reads into dataDir first. It is called
// again with the same arguments when a node restarts.
type launcher func(c plan.ClusterSpec, node int, eps []stores.Endpoint, dataDir string) (path string, args []string, err error)

// poller asks every node for its status; see etcd.StatusPoller.
type poller interface {
	Poll(ctx context.Context, timeout time.Duration) []stores.NodeStatus
	Close() error
}

// driverFor returns the driver of a store, or nil when the runner has none.
func driverFor(store string) driver {
	switch store {
	case plan.StoreEtcd:
		return etcdDriver{}
	case plan.StoreZooKeeper:
		return zookeeperDriver{}
	case plan.StoreConsul:
		return consulDriver{}
	}
	return nil
}

// binaryLauncher launches nodes of a store whose server is one executable.
func binaryLauncher(bin string, args func(c plan.ClusterSpec, node int, eps []stores.Endpoint, dataDir string) ([]string, error)) launcher {
	return func(c plan.ClusterSpec, node int, eps []stores.Endpoint, dataDir string) (string, []string, error) {
		a, err := args(c, node, eps, dataDir)
		return bin, a, err
	}
}

// serverBinary is the cluster's declared binary, else the cached build of
// its version, else a new build.
func serverBinary(c plan.ClusterSpec, cacheDir string, cached func(version, cacheDir string) (string, bool), build func() (string, error)) (string, error) {
	if c.Binary != "" {
		if _, err := os.Stat(c.Binary); err != nil {
			return "", fmt.Errorf("the cluster's binary: %w", err)
		}
		return c.Binary, nil
	}
	if path, ok := cached(c.Version, cacheDir); ok {
		return path, nil
	}
	return build()
}

type etcdDriver struct{}

func (etcdDriver) install(ctx context.Context, c plan.ClusterSpec, cacheDir string, progress io.Writer) (launcher, error) {
	bin, err := serverBinary(c, cacheDir, etcd.Exists, func() (string, error) {
		return etcd.Install(ctx, etcd.InstallOptions{Version: c.Version, CacheDir: cacheDir, Progress: progress})
	})
	if err != nil {
		return nil, err
	}
	return binaryLauncher(bin, etcdArgs), nil
}

func etcdArgs(c plan.ClusterSpec, node int, eps []stores.Endpoint, dataDir string) ([]string, error) {
	return etcd.Args(c, node, eps, dataDir), nil
}

func (etcdDriver) containerLauncher(plan.ClusterSpec) launcher {
	return binaryLauncher(images.EtcdBinary, etcdArgs)
}

func (etcdDriver) ports() []int { return []int{2379, 2380} }

func (etcdDriver) waitReady(ctx context.Context, eps []stores.Endpoint, timeout time.Duration) error {
	return etcd.WaitReady(ctx, eps, timeout)
}

func (etcdDriver) newClient(ctx context.Context, opts stores.ClientOptions) (stores.Client, error) {
	return etcd.NewClient(ctx, opts)
}

func (etcdDriver) clientSettings(c plan.ClientSpec) map[string]string { return etcd.ClientSettings(c) }

func (etcdDriver) newPoller(eps []stores.Endpoint) (poller, error) {
	return etcd.NewStatusPoller(eps)
}

func (etcdDriver) strongRead() string { return etcd.ConsistencyLinearizable }

type zookeeperDriver struct{}

// install finds ZooKeeper where it is installed (Debian's package,
// $ZOOKEEPER_HOME, or the cluster's binary naming its home or jar): it is
// never built.
func (zookeeperDriver) install(_ context.Context, c plan.ClusterSpec, _ string, _ io.Writer) (launcher, error) {
	inst, err := zookeeper.Find(c.Binary, c.Version)
	if err != nil {
		return nil, err
	}
	return func(c plan.ClusterSpec, node int, eps []stores.Endpoint, dataDir string) (string, []string, error) {
		return zookeeper.Command(inst, c, node, eps, dataDir)
	}, nil
}

func (zookeeperDriver) containerLauncher(c plan.ClusterSpec) launcher {
	inst := zookeeper.Install{
		Java:      filepath.Join(images.JavaHome, "bin", "java"),
		ClassPath: images.ZooKeeperClassPath(c.Version),
		Version:   c.Version,
	}
	return func(c plan.ClusterSpec, node int, eps []stores.Endpoint, dataDir string) (string, []string, error) {
		return zookeeper.Command(inst, c, node, eps, dataDir)
	}
}

func (zookeeperDriver) ports() []int {
	return []int{zookeeper.ClientPort, zookeeper.PeerPort, zookeeper.ElectionPort}
}

func (zookeeperDriver) waitReady(ctx context.Context, eps []stores.Endpoint, timeout time.Duration) error {
	return zookeeper.WaitReady(ctx, eps, timeout)
}

func (zookeeperDriver) newClient(ctx context.Context, opts stores.ClientOptions) (stores.Client, error) {
	return zookeeper.NewClient(ctx, opts)
}

func (zookeeperDriver) clientSettings(c plan.ClientSpec) map[string]string {
	return zookeeper.ClientSettings(c)
}

func (zookeeperDriver) newPoller(eps []stores.Endpoint) (poller, error) {
	return zookeeper.NewStatusPoller(eps)
}

func (zookeeperDriver) strongRead() string { return zookeeper.ConsistencySync }

type consulDriver struct{}

func (consulDriver) install(ctx context.Context, c plan.ClusterSpec, cacheDir string, progress io.Writer) (launcher, error) {
	bin, err := serverBinary(c, cacheDir, consul.Exists, func() (string, error) {
		return consul.Install(ctx, consul.InstallOptions{Version: c.Version, CacheDir: cacheDir, Progress: progress})
	})
	if err != nil {
		return nil, err
	}
	return binaryLauncher(bin, consul.Args), nil
}

func (consulDriver) containerLauncher(plan.ClusterSpec) launcher {
	return binaryLauncher(images.ConsulBinary, consul.Args)
}

func (consulDriver) ports() []int {
	return []int{consul.HTTPPort, consul.ServerPort, consul.SerfLANPort}
}

func (consulDriver) waitReady(ctx context.Context, eps []stores.Endpoint, timeout time.Duration) error {
	return consul.WaitReady(ctx, eps, timeout)
}

func (consulDriver) newClient(ctx context.Context, opts stores.ClientOptions) (stores.Client, error) {
	return consul.NewClient(ctx, opts)
}

func (consulDriver) clientSettings(c plan.ClientSpec) map[string]string {
	return consul.ClientSettings(c)
}

func (consulDriver) newPoller(eps []stores.Endpoint) (poller, error) {
	return consul.NewStatusPoller(eps)
}

func (consulDriver) strongRead() string { return consul.ConsistencyConsistent }
