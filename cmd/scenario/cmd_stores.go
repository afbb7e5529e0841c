package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/stores/consul"
	"github.com/coordlab/scenario/stores/etcd"
	"github.com/coordlab/scenario/stores/zookeeper"
	"github.com/spf13/cobra"
)

// storeInstaller is how the CLI finds and installs one store's server.
type storeInstaller struct {
	// installed returns where version is already installed, if it is.
	installed func(version, cacheDir string) (string, bool)
	// install builds or finds version, reporting progress.
	install func(ctx context.Context, version, cacheDir string, progress io.Writer) (string, error)
}

// storeInstallers maps each store to its installer.
func storeInstallers() map[string]storeInstaller {
	return map[string]storeInstaller{
		dsl.StoreEtcd: {
			installed: etcd.Exists,
			install: func(ctx context.Context, version, cacheDir string, progress io.Writer) (string, error) {
				return etcd.Install(ctx, etcd.InstallOptions{Version: version, CacheDir: cacheDir, Progress: progress})
			},
		},
		dsl.StoreConsul: {
			installed: consul.Exists,
			install: func(ctx context.Context, version, cacheDir string, progress io.Writer) (string, error) {
				return consul.Install(ctx, consul.InstallOptions{Version: version, CacheDir: cacheDir, Progress: progress})
			},
		},
		// ZooKeeper is a Java program installed by the system's package
		// manager (or by hand under $ZOOKEEPER_HOME); it is found, not built.
		dsl.StoreZooKeeper: {
			installed: func(version, _ string) (string, bool) {
				inst, err := zookeeper.Find("", version)
				return inst.ClassPath, err == nil
			},
			install: func(_ context.Context, version, _ string, _ io.Writer) (string, error) {
				inst, err := zookeeper.Find("", version)
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("%s (java %s)", inst.ClassPath, inst.Java), nil
			},
		},
	}
}

func newStoresCommand() *cobra.Command {
	var cacheDir string
	cmd := &cobra.Command{
		Use:   "stores",
		Short: "List supported stores and install store binaries",
	}
	cmd.PersistentFlags().StringVar(&cacheDir, "cache-dir", "", "where store binaries are kept (default $XDG_CACHE_HOME/scenario/stores)")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the supported stores, their default versions and read consistency modes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			for _, s := range dsl.StoreNames() {
				status := "  not installed"
				if path, ok := storeInstallers()[s].installed(dsl.DefaultVersion(s), cacheDir); ok {
					status = "  installed: " + path
				}
				fmt.Fprintf(out, "%-10s default %-7s consistency: %s%s\n", s, dsl.DefaultVersion(s), strings.Join(dsl.ConsistencyModes(s), "|"), status)
			}
			return nil
		},
	})
	var bench bool
	install := &cobra.Command{
		Use:   "install STORE[@VERSION]...",
		Short: "Build and cache a store's server (etcd and Consul are built from their Go modules)",
		Long: `Build a store's server into the cache so runs need not build it on first use.
etcd is built from its Go module (go.etcd.io/etcd/server/v3), about a minute
per version; --benchmark also builds etcd's own load tool at the same version.
Consul is built from github.com/hashicorp/consul, 4 to 10 minutes.
ZooKeeper is not built: it is found where the system installed it (Debian's
zookeeper package: apt-get install zookeeper) or under $ZOOKEEPER_HOME, and
this command says where, or what is missing. Without @VERSION a store's
default version is meant. Several versions live side by side.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				store, version, _ := strings.Cut(arg, "@")
				inst, ok := storeInstallers()[store]
				if !ok {
					return &exitError{code: exitInvalid, err: fmt.Errorf("%q: unknown store; write one of %s, optionally with @VERSION", arg, strings.Join(dsl.StoreNames(), ", "))}
				}
				if version == "" {
					version = dsl.DefaultVersion(store)
				}
				path, err := inst.install(cmd.Context(), version, cacheDir, cmd.ErrOrStderr())
				if err != nil {
					return &exitError{code: exitInfra, err: fmt.Errorf("install %s@%s: %w", store, version, err)}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s@%s: %s\n", store, version, path)
				if bench {
					if store != dsl.StoreEtcd {
						return &exitError{code: exitInvalid, err: fmt.Errorf("--benchmark: only etcd has a benchmark tool to build, not %s", store)}
					}
					path, err := etcd.InstallBenchmark(cmd.Context(), etcd.InstallOptions{Version: version, CacheDir: cacheDir, Progress: cmd.ErrOrStderr()})
					if err != nil {
						return &exitError{code: exitInfra, err: fmt.Errorf("install benchmark for %s: %w", arg, err)}
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s benchmark: %s\n", arg, path)
				}
			}
			return nil
		},
	}
	install.Flags().BoolVar(&bench, "benchmark", false, "also build etcd's own benchmark tool at that version")
	cmd.AddCommand(install)
	return cmd
}
