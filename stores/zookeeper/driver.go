package zookeeper

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/gobuild"
)

// DefaultVersion is the ZooKeeper a cluster runs when it names no version:
// the one Debian bookworm packages.
const DefaultVersion = "3.8.0"

// Where the official image has things.
const (
	// ImageJavaHome is the image's JAVA_HOME; Java is ImageJavaHome/bin/java.
	ImageJavaHome = "/opt/java/openjdk"
	// DebianVersion is the only ZooKeeper `images build` can make: the
	// one Debian bookworm packages.
	DebianVersion = "3.8.0"
)

// ImageHome is the official image's installation directory for version;
// its lib/ directory holds the jars.
func ImageHome(version string) string {
	return "/apache-zookeeper-" + strings.TrimPrefix(version, "v") + "-bin"
}

// ImageClassPath is the Java class path that runs version in its image.
func ImageClassPath(version string) string { return ImageHome(version) + "/lib/*" }

// Driver is ZooKeeper as scenario knows it. It is a Java program installed
// by the system's package manager (or by hand under $ZOOKEEPER_HOME): it is
// found, never built.
func Driver() stores.Driver {
	return stores.Driver{
		Name:           plan.StoreZooKeeper,
		DefaultVersion: DefaultVersion,
		CheckVersion: func(v string) error {
			_, err := gobuild.ParseVersion(plan.StoreZooKeeper, DefaultVersion, v)
			return err
		},
		Modes:       []string{ConsistencyLocal, ConsistencySync},
		StrongRead:  ConsistencySync,
		Ops:         []string{plan.OpPut, plan.OpGet, plan.OpDelete, plan.OpRange, plan.OpTxn},
		ClientKnobs: []string{"session_timeout"},
		ValueLimit: func(plan.ClusterSpec) (int64, string) {
			// jute.maxbuffer is 0xfffff bytes for the whole request, path
			// and header included; the server drops the connection beyond it.
			return 1_000_000, "a request, path and value together, may not exceed jute.maxbuffer (1 MiB less one byte)"
		},
		Knobs:          knobs(),
		NewKnobs:       newKnobs,
		CheckKnobs:     checkKnobs,
		ElectionWindow: electionWindow,
		Ports:          []int{ClientPort, PeerPort, ElectionPort},
		Installed: func(version, _ string) (string, bool) {
			inst, err := Find("", version)
			return inst.ClassPath, err == nil
		},
		Install: func(_ context.Context, version, _ string, _ io.Writer) (string, error) {
			inst, err := Find("", version)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s (java %s)", inst.ClassPath, inst.Java), nil
		},
		Launcher: func(_ context.Context, c plan.ClusterSpec, _ string, _ io.Writer) (stores.Launcher, error) {
			inst, err := Find(c.Binary, c.Version)
			if err != nil {
				return nil, err
			}
			return launcher(inst), nil
		},
		Image: stores.Image{
			Repo: "zookeeper", Layout: stores.ImageDebianZooKeeper,
			Buildable: func(version string) error {
				if strings.TrimPrefix(version, "v") != DebianVersion {
					return fmt.Errorf("zookeeper version %q: only %s can be built here, from Debian bookworm's zookeeper package; where a registry is reachable, docker pull zookeeper:%s instead",
						version, DebianVersion, strings.TrimPrefix(version, "v"))
				}
				return nil
			},
			Launcher: func(c plan.ClusterSpec) stores.Launcher {
				return launcher(Install{
					Java:      filepath.Join(ImageJavaHome, "bin", "java"),
					ClassPath: ImageClassPath(c.Version),
					Version:   c.Version,
				})
			},
		},
		WaitReady:      WaitReady,
		NewClient:      NewClient,
		ClientSettings: ClientSettings,
		NewPoller:      func(eps []stores.Endpoint) (stores.Poller, error) { return NewStatusPoller(eps) },
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
		RegistryRecipes: []string{"session"},
		NewWatchHolder:  NewWatchHolder,
		NewKeyWatcher:   NewKeyWatcher,
		NewLocker:       NewLocker,
		MinTTL:          minTTL,
	}
}

func launcher(inst Install) stores.Launcher {
	return func(c plan.ClusterSpec, node int, eps []stores.Endpoint, dataDir string) (string, []string, error) {
		return Command(inst, c, node, eps, dataDir)
	}
}
