package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/registry"
	"github.com/spf13/cobra"
)

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
			for _, d := range registry.All() {
				status := "  not installed"
				if path, ok := d.Installed(d.DefaultVersion, cacheDir); ok {
					status = "  installed: " + path
				}
				fmt.Fprintf(out, "%-10s default %-7s consistency: %s%s\n", d.Name, d.DefaultVersion, strings.Join(d.Modes, "|"), status)
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
			type request struct {
				arg, version string
				drv          stores.Driver
			}
			var reqs []request
			for _, arg := range args {
				store, version, _ := strings.Cut(arg, "@")
				drv, ok := registry.Lookup(store)
				if !ok {
					return &exitError{code: exitInvalid, err: fmt.Errorf("%q: unknown store; write one of %s, optionally with @VERSION", arg, strings.Join(registry.Names(), ", "))}
				}
				if version == "" {
					version = drv.DefaultVersion
				}
				if err := drv.CheckVersion(version); err != nil {
					return &exitError{code: exitInvalid, err: err}
				}
				if bench && drv.Benchmark == nil {
					return &exitError{code: exitInvalid, err: fmt.Errorf("--benchmark: %s has no benchmark tool to build", arg)}
				}
				reqs = append(reqs, request{arg, version, drv})
			}
			holdResources(cmd.Context())
			for _, r := range reqs {
				arg, store, version := r.arg, r.drv.Name, r.version
				path, err := r.drv.Install(cmd.Context(), version, cacheDir, cmd.ErrOrStderr())
				if err != nil {
					return installError(cmd.Context(), fmt.Errorf("install %s@%s: %w", store, version, err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s@%s: %s\n", store, version, path)
				if bench {
					path, err := r.drv.Benchmark(cmd.Context(), version, cacheDir, cmd.ErrOrStderr())
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
