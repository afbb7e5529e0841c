package consul

import (
	"context"
	"io"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// DefaultVersion is the Consul a cluster runs when it names no version.
const DefaultVersion = "1.20.2"

// imageServer is where the official image keeps the server.
const imageServer = "/bin/consul"

// Driver is Consul as scenario knows it.
func Driver() stores.Driver {
	checkVersion := func(v string) error { _, err := ParseVersion(v); return err }
	return stores.Driver{
		Name:           plan.StoreConsul,
		DefaultVersion: DefaultVersion,
		CheckVersion:   checkVersion,
		Modes:          []string{ConsistencyDefault, ConsistencyConsistent, ConsistencyStale},
		StrongRead:     ConsistencyConsistent,
		Ops:            []string{plan.OpPut, plan.OpGet, plan.OpDelete, plan.OpRange, plan.OpTxn},
		ClientKnobs:    []string{},
		ValueLimit: func(plan.ClusterSpec) (int64, string) {
			return 512 << 10, "Consul's KV store takes values of up to kv_max_value_size, 512 KiB"
		},
		Knobs:      knobs(),
		NewKnobs:   newKnobs,
		CheckKnobs: checkKnobs,
		Ports:      []int{HTTPPort, ServerPort, SerfLANPort},
		Installed:  Exists,
		Install: func(ctx context.Context, version, cacheDir string, progress io.Writer) (string, error) {
			return Install(ctx, InstallOptions{Version: version, CacheDir: cacheDir, Progress: progress})
		},
		Launcher: stores.BinaryLaunch(Driver, Args),
		Image: stores.Image{
			Repo: "hashicorp/consul", Layout: stores.ImageGoBinary, Server: imageServer,
			Buildable: checkVersion,
			Launcher:  func(plan.ClusterSpec) stores.Launcher { return stores.BinaryLauncher(imageServer, Args) },
		},
		WaitReady:      WaitReady,
		NewClient:      NewClient,
		ClientSettings: ClientSettings,
		NewPoller:      func(eps []stores.Endpoint) (stores.Poller, error) { return NewStatusPoller(eps) },
		ElectionWindow: electionWindow,
		TransferLeader: TransferLeader,
		ServerMetrics:  ServerMetrics(),
		NewMetricScraper: func(eps []stores.Endpoint) (stores.MetricScraper, error) {
			s, err := NewMetricScraper(eps)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		Classify:        Classify,
		RegistryRecipes: []string{RecipeKV, RecipeService},
		NewRegistry:     NewRegistry,
		NewKeyWatcher:   NewKeyWatcher,
		NewLocker:       NewLocker,
		MinTTL:          MinTTL,
	}
}
