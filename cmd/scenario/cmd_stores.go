package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores/consul"
	"github.com/coordlab/scenario/stores/etcd"
	"github.com/coordlab/scenario/stores/gobuild"
	"github.com/coordlab/scenario/stores/zookeeper"
	"github.com/spf13/cobra"
)

// storeInstaller is how the CLI finds and installs one store's server.
type storeInstaller struct {
	// checkVersion refuses a version this store cannot have, before
	// anything is built.
	checkVersion func(version string) error
	// installed returns where version is already installed, if it is.
	installed func(version, cacheDir string) (string, bool)
	// install builds or finds version, reporting progress.
	install func(ctx context.Context, version, cacheDir string, progress io.Writer) (string, error)
}

// storeInstallers maps each store to its installer.
func storeInstallers() map[string]storeInstaller {
	return map[string]storeInstaller{
		plan.StoreEtcd: {
			checkVersion: func(v string) error { _, err := etcd.ParseVersion(v); return err },
			installed:    etcd.Exists,
			install: func(ctx context.Context, version, cacheDir string, progress io.Writer) (string, error) {
				return etcd.Install(ctx, etcd.InstallOptions{Version: version, CacheDir: cacheDir, Progress: progress})
			},
		},
		plan.StoreConsul: {
			checkVersion: func(v string) error { _, err := consul.ParseVersion(v); return err },
			installed:    consul.Exists,
			install: func(ctx context.Context, version, cacheDir string, progress io.Writer) (string, error) {
				return consul.Install(ctx, consul.InstallOptions{Version: version, CacheDir: cacheDir, Progress: progress})
			},
		},
		// ZooKeeper is a Java program installed by the system's package
		// manager (or by hand under $ZOOKEEPER_HOME); it is found, not built.
		plan.StoreZooKeeper: {
			checkVersion: func(v string) error {
				_, err := gobuild.ParseVersion(plan.StoreZooKeeper, plan.DefaultVersion(plan.StoreZooKeeper), v)
				return err
			},
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
			for _, s := range plan.StoreNames() {
				status := "  not installed"
				if path, ok := storeInstallers()[s].installed(plan.DefaultVersion(s), cacheDir); ok {
					status = "  installed: " + path
				}
				fmt.Fprintf(out, "%-10s default %-7s consistency: %s%s\n", s, plan.DefaultVersion(s), strings.Join(plan.ConsistencyModes(s), "|"), status)
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
			// Every argument and flag is checked before anything is built:
			// a mistake in the last one must not cost a ten-minute build.
			type request struct{ arg, store, version string }
			var reqs []request
			for _, arg := range args {
				store, version, _ := strings.Cut(arg, "@")
				inst, ok := storeInstallers()[store]
				if !ok {
					return &exitError{code: exitInvalid, err: fmt.Errorf("%q: unknown store; write one of %s, optionally with @VERSION", arg, strings.Join(plan.StoreNames(), ", "))}
				}
				if version == "" {
					version = plan.DefaultVersion(store)
				}
				if err := inst.checkVersion(version); err != nil {
					return &exitError{code: exitInvalid, err: err}
				}
				if bench && store != plan.StoreEtcd {
					return &exitError{code: exitInvalid, err: fmt.Errorf("--benchmark: only etcd has a benchmark tool to build, not %s (%s)", store, arg)}
				}
				reqs = append(reqs, request{arg, store, version})
			}
			holdResources(cmd.Context())
			for _, r := range reqs {
				arg, store, version := r.arg, r.store, r.version
				inst := storeInstallers()[store]
				path, err := inst.install(cmd.Context(), version, cacheDir, cmd.ErrOrStderr())
				if err != nil {
					return installError(cmd.Context(), fmt.Errorf("install %s@%s: %w", store, version, err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s@%s: %s\n", store, version, path)
				if bench {
					path, err := etcd.InstallBenchmark(cmd.Context(), etcd.InstallOptions{Version: version, CacheDir: cacheDir, Progress: cmd.ErrOrStderr()})
					if err != nil {
						return installError(cmd.Context(), fmt.Errorf("install benchmark for %s: %w", arg, err))
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s benchmark: %s\n", arg, path)
				}
			}
			return nil
		},
	}
	install.Flags().BoolVar(&bench, "benchmark", false, "also build etcd's own benchmark tool at that version")
	cmd.AddCommand(install)
	refuseUnknownSubcommands(cmd)
	return cmd
}

// installError is exit 130 for an interrupted build, 3 otherwise.
func installError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &exitError{code: exitInterrupted, err: errors.New("interrupted; nothing half-built was kept")}
	}
	return &exitError{code: exitInfra, err: err}
}

// refuseUnknownSubcommands makes a command that only groups subcommands
// exit 2 on an unknown one (cobra would print the help and exit 0), and
// print its help when given none.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		var names []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				names = append(names, c.Name())
			}
		}
		return &exitError{code: exitInvalid, err: fmt.Errorf("unknown command %q for %q; write one of: %s", args[0], cmd.CommandPath(), strings.Join(names, ", "))}
	}
}
