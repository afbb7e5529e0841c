package stores

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/coordlab/scenario/plan"
)

// Driver is everything scenario knows about one store, in one value. The
// language checks clusters and workloads against it, the runner installs,
// launches and talks to the store through it, and `stores install` and
// `images build` make its server from it. Adding a store is writing a
// package whose Driver function returns one, and listing that function in
// package registry.
type Driver struct {
	Name           string
	DefaultVersion string
	// CheckVersion refuses a version the store cannot have, before
	// anything is built.
	CheckVersion func(version string) error

	// Modes are the read consistency modes, the store's own default first.
	Modes []string
	// StrongRead is the linearizable read mode, with which acknowledged
	// writes are read back.
	StrongRead string
	// Ops are the operations its client implements.
	Ops []string
	// ClientKnobs are the attributes of a workload's client block its
	// clients take.
	ClientKnobs []string
	// ValueLimit is the largest value a cluster c accepts in one write,
	// and why.
	ValueLimit func(c plan.ClusterSpec) (int64, string)

	// Knobs is the schema of the store's knob block, named like the
	// store; NewKnobs gives a cluster the empty knobs a block starts from
	// (a block with no attribute still says the store's defaults are
	// meant). CheckKnobs reports combinations the store refuses.
	Knobs      []Knob
	NewKnobs   func(c *plan.ClusterSpec)
	CheckKnobs func(c plan.ClusterSpec) []KnobProblem

	// Ports are the ports a node listens on when it has an address of its
	// own (in a network fabric): the client port, the peer port, then the
	// store's others, in the order of Endpoint.Extra. On loopback each node
	// gets as many free ports.
	Ports []int
	// Installed says where version's server already is, if it is.
	Installed func(version, cacheDir string) (string, bool)
	// Install builds or finds version's server, reporting a build on
	// progress, and says where it is.
	Install func(ctx context.Context, version, cacheDir string, progress io.Writer) (string, error)
	// Launcher finds or builds the server of cluster c (c.Binary when
	// set) and returns how to launch its nodes on this machine.
	Launcher func(ctx context.Context, c plan.ClusterSpec, cacheDir string, progress io.Writer) (Launcher, error)
	Image    Image

	WaitReady func(ctx context.Context, eps []Endpoint, timeout time.Duration) error
	NewClient func(ctx context.Context, opts ClientOptions) (Client, error)
	// Classify puts a failed request's error into one of
	// plan.ErrorClasses.
	Classify func(error) string
	// ClientSettings describes what a workload's clients run with, the
	// library's defaults named as such.
	ClientSettings func(c plan.ClientSpec) map[string]string
	NewPoller      func(eps []Endpoint) (Poller, error)
	// ElectionWindow is how long cluster c may go, after its leader is
	// lost, before a follower campaigns: its followers' longest
	// randomised timeout. The leader timeline polls fast that long after
	// each fault, so that an election it cannot see coming (a cut-off
	// leader still answers that it leads) is seen when it happens.
	ElectionWindow func(c plan.ClusterSpec) time.Duration
	// TransferLeader hands the cluster's leadership to node to (1-based),
	// and returns once the store says that node leads; moved is false when
	// it led already. Nil for a store that cannot transfer its leadership.
	TransferLeader func(ctx context.Context, eps []Endpoint, to int) (moved bool, err error)
	// ServerMetrics are the store's own metrics the runner keeps per
	// phase, and NewMetricScraper reads them from the nodes.
	ServerMetrics    []ServerMetric
	NewMetricScraper func(eps []Endpoint) (MetricScraper, error)
	// RegistryRecipes names the store's registry recipes, its default
	// first.
	RegistryRecipes []string
	// NewRegistry opens the store's service-registry recipe.
	NewRegistry func(ctx context.Context, opts RegistryOptions) (Registry, error)
	// NewWatchHolder opens connections that hold many watches; nil for a
	// store whose watches cannot be held by the hundred thousand.
	NewWatchHolder func(ctx context.Context, opts ClientOptions) (WatchHolder, error)
	// NewKeyWatcher opens watches on a key-value workload's keys, with
	// their values (see KeyWatcher).
	NewKeyWatcher func(ctx context.Context, opts ClientOptions) (KeyWatcher, error)
	// NewLocker opens the store's lock recipe.
	NewLocker func(ctx context.Context, opts LockerOptions) (Locker, error)
	// MinTTL is the shortest TTL the store's default registry recipe
	// and its lock recipe take, and why.
	MinTTL func(c plan.ClusterSpec) (time.Duration, string)
	// Benchmark, when the store has its own load tool, builds it at
	// version and says where it is.
	Benchmark func(ctx context.Context, version, cacheDir string, progress io.Writer) (string, error)
}

// Launcher returns the command that starts node (1-based) of cluster c,
// writing any configuration the node reads into dataDir first. It is called
// again with the same arguments when a node restarts.
type Launcher func(c plan.ClusterSpec, node int, eps []Endpoint, dataDir string) (path string, args []string, err error)

// Poller asks nodes for their status.
type Poller interface {
	// Poll asks every node at once, each bounded by timeout (if
	// positive) and ctx, and returns what each said in endpoint order.
	Poll(ctx context.Context, timeout time.Duration) []NodeStatus
	// PollNode asks the node at index i of the endpoints alone, bounded
	// by ctx, so that a node that hangs holds up no other's poll. Its
	// IsLeader and Term are as Poll reports them; Leader may be 0 where
	// the store names a follower's leader only from the others' answers.
	PollNode(ctx context.Context, i int) NodeStatus
	Close() error
}

// ImageLayout says how `images build` makes a store's image where no
// registry can be reached.
type ImageLayout int

const (
	// ImageGoBinary: the store's Go-built server (Driver.Install) at
	// Image.Server.
	ImageGoBinary ImageLayout = iota + 1
	// ImageDebianZooKeeper: Debian's zookeeper package, its jars and JDK
	// linked where the official ZooKeeper image has them.
	ImageDebianZooKeeper
)

// Image is the store's official image: its name, and how a node runs in it.
type Image struct {
	Repo string
	// TagPrefix is how the repository's tags spell a version ("v3.5.17").
	TagPrefix string
	Layout    ImageLayout
	// Server is where the server is inside the image (ImageGoBinary).
	Server string
	// Buildable refuses a version `images build` cannot make here.
	Buildable func(version string) error
	// Launcher launches nodes of c inside the image.
	Launcher func(c plan.ClusterSpec) Launcher
}

// BinaryLauncher launches nodes of a store whose server is one executable.
func BinaryLauncher(bin string, args func(c plan.ClusterSpec, node int, eps []Endpoint, dataDir string) ([]string, error)) Launcher {
	return func(c plan.ClusterSpec, node int, eps []Endpoint, dataDir string) (string, []string, error) {
		a, err := args(c, node, eps, dataDir)
		return bin, a, err
	}
}

// BinaryLaunch is Driver.Launcher for a store whose server is one binary
// (see ServerBinary) run with args. driver is called, not passed, so that a
// store's Driver can name itself.
func BinaryLaunch(driver func() Driver, args func(c plan.ClusterSpec, node int, eps []Endpoint, dataDir string) ([]string, error)) func(ctx context.Context, c plan.ClusterSpec, cacheDir string, progress io.Writer) (Launcher, error) {
	return func(ctx context.Context, c plan.ClusterSpec, cacheDir string, progress io.Writer) (Launcher, error) {
		bin, err := ServerBinary(ctx, driver(), c, cacheDir, progress)
		if err != nil {
			return nil, err
		}
		return BinaryLauncher(bin, args), nil
	}
}

// ServerBinary is the cluster's declared binary, else the cached build of
// its version, else a new build.
func ServerBinary(ctx context.Context, d Driver, c plan.ClusterSpec, cacheDir string, progress io.Writer) (string, error) {
	if c.Binary != "" {
		if _, err := os.Stat(c.Binary); err != nil {
			return "", fmt.Errorf("the cluster's binary: %w", err)
		}
		return c.Binary, nil
	}
	if path, ok := d.Installed(c.Version, cacheDir); ok {
		return path, nil
	}
	return d.Install(ctx, c.Version, cacheDir, progress)
}
