package etcd

import (
	"context"
	"fmt"
	"io"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// DefaultVersion is the etcd a cluster runs when it names no version.
const DefaultVersion = "3.5.17"

// imageServer is where the official image keeps the server.
const imageServer = "/usr/local/bin/etcd"

// Driver is etcd as scenario knows it.
func Driver() stores.Driver {
	return stores.Driver{
		Name:           plan.StoreEtcd,
		DefaultVersion: DefaultVersion,
		CheckVersion:   func(v string) error { _, err := ParseVersion(v); return err },
		Modes:          []string{ConsistencyLinearizable, ConsistencySerializable},
		StrongRead:     ConsistencyLinearizable,
		Ops:            []string{plan.OpPut, plan.OpGet, plan.OpDelete, plan.OpRange, plan.OpTxn},
		ClientKnobs:    []string{"keepalive_time", "keepalive_timeout", "reconnect_backoff_max", "retries", "require_leader"},
		ValueLimit:     valueLimit,
		Knobs:          knobs(),
		NewKnobs:       newKnobs,
		CheckKnobs:     checkKnobs,
		Ports:          []int{2379, 2380},
		Installed:      Exists,
		Install: func(ctx context.Context, version, cacheDir string, progress io.Writer) (string, error) {
			return Install(ctx, InstallOptions{Version: version, CacheDir: cacheDir, Progress: progress})
		},
		Launcher: stores.BinaryLaunch(Driver, args),
		Image: stores.Image{
			Repo: "gcr.io/etcd-development/etcd", TagPrefix: "v",
			Layout: stores.ImageGoBinary, Server: imageServer,
			Buildable: func(version string) error {
				v, err := ParseVersion(version)
				if err != nil {
					return err
				}
				if !v.AtLeast(3, 4) || v.Major != 3 {
					return fmt.Errorf("etcd version %q: only 3.x releases from 3.4 on can be built", version)
				}
				return nil
			},
			Launcher: func(plan.ClusterSpec) stores.Launcher { return stores.BinaryLauncher(imageServer, args) },
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
		NewRegistry:     NewRegistry,
		RegistryRecipes: []string{"lease"},
		NewWatchHolder:  NewWatchHolder,
		NewKeyWatcher:   NewKeyWatcher,
		NewLocker:       NewLocker,
		MinTTL:          minTTL,
		Benchmark: func(ctx context.Context, version, cacheDir string, progress io.Writer) (string, error) {
			return InstallBenchmark(ctx, InstallOptions{Version: version, CacheDir: cacheDir, Progress: progress})
		},
	}
}

func args(c plan.ClusterSpec, node int, eps []stores.Endpoint, dataDir string) ([]string, error) {
	return Args(c, node, eps, dataDir), nil
}

// valueLimit: a put request may not exceed max_request_bytes.
func valueLimit(c plan.ClusterSpec) (int64, string) {
	limit := int64(1536 << 10)
	if c.Etcd != nil && c.Etcd.MaxRequestBytes > 0 {
		limit = c.Etcd.MaxRequestBytes
	}
	// The request also carries the key and a few bytes of framing.
	return limit - 1024, "a put request may not exceed max_request_bytes (1.5 MiB unless the cluster's etcd block sets it), key and framing included"
}
