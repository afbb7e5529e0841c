package main

import (
	"fmt"
	"strings"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/stores/etcd"
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
			for _, s := range dsl.StoreNames() {
				status := ""
				if s == dsl.StoreEtcd {
					if path, ok := etcd.Exists(dsl.DefaultVersion(s), cacheDir); ok {
						status = "  installed: " + path
					}
				}
				fmt.Fprintf(out, "%-10s default %-7s consistency: %s%s\n", s, dsl.DefaultVersion(s), strings.Join(dsl.ConsistencyModes(s), "|"), status)
			}
			return nil
		},
	})
	var bench bool
	install := &cobra.Command{
		Use:   "install STORE@VERSION...",
		Short: "Build and cache a store binary (etcd is built from its Go module)",
		Long: `Build a store binary into the cache so runs need not build it on first use.
etcd is built from its Go module (go.etcd.io/etcd/server/v3), about a minute
per version; --benchmark also builds etcd's own load tool at the same version.
Several versions live side by side.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				store, version, ok := strings.Cut(arg, "@")
				if !ok || version == "" {
					return &exitError{code: exitInvalid, err: fmt.Errorf("%q: write STORE@VERSION, such as etcd@%s", arg, dsl.DefaultVersion(dsl.StoreEtcd))}
				}
				if store != dsl.StoreEtcd {
					return &exitError{code: exitInvalid, err: fmt.Errorf("%q: installing %s is not implemented yet; only etcd builds here so far", arg, store)}
				}
				opts := etcd.InstallOptions{Version: version, CacheDir: cacheDir, Progress: cmd.ErrOrStderr()}
				path, err := etcd.Install(cmd.Context(), opts)
				if err != nil {
					return &exitError{code: exitInfra, err: fmt.Errorf("install %s: %w", arg, err)}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", arg, path)
				if bench {
					path, err := etcd.InstallBenchmark(cmd.Context(), opts)
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
