package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/stores/zookeeper"
	"github.com/spf13/cobra"
)

func newImagesCommand() *cobra.Command {
	var cacheDir string
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build and list the local Docker images the docker provider runs",
	}
	cmd.PersistentFlags().StringVar(&cacheDir, "cache-dir", "", "where store binaries and root filesystems are kept (default $XDG_CACHE_HOME/scenario/stores)")

	var force bool
	build := &cobra.Command{
		Use:   "build [STORE[@VERSION]...]",
		Short: "Build the base image and store images locally, pulling nothing",
		Long: `Build Docker images for the docker provider on a machine with a Docker engine
and no registry. Without arguments, every store at its default version.

` + images.BaseImage + ` is always built first: a Debian bookworm root
filesystem made with debootstrap (about a minute the first time) and cached
under the cache directory's images/. Each store image is that root filesystem
plus the store's server, where the official image has it, tagged with the
official image's name so that a machine with a registry pulls the real one:

  etcd       gcr.io/etcd-development/etcd:vVERSION   etcd built from its Go module
  consul     hashicorp/consul:VERSION                Consul built from its Go module
  zookeeper  zookeeper:VERSION                       Debian's zookeeper package
                                                     (only ` + zookeeper.DebianVersion + `)

Images whose tags exist are kept unless --force. Building needs root and
debootstrap (apt-get install debootstrap).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			specs := images.DefaultSpecs()
			if len(args) > 0 {
				specs = nil
				for _, arg := range args {
					s, err := images.ParseSpec(arg)
					if err != nil {
						return &exitError{code: exitInvalid, err: err}
					}
					specs = append(specs, s)
				}
			}
			holdResources(cmd.Context())
			cli, err := images.NewClient()
			if err != nil {
				return &exitError{code: exitInfra, err: err}
			}
			defer cli.Close()
			results, err := images.Build(cmd.Context(), cli, specs, images.BuildOptions{CacheDir: cacheDir, Force: force, Progress: cmd.ErrOrStderr()})
			out := cmd.OutOrStdout()
			for _, r := range results {
				what := "exists"
				if r.Built {
					what = "built in " + r.Duration.Round(100*time.Millisecond).String()
				}
				fmt.Fprintf(out, "%s: %s (%s)\n", r.Tag, what, images.HumanSize(r.Size))
			}
			if err != nil {
				if cmd.Context().Err() != nil && errors.Is(err, context.Canceled) {
					return &exitError{code: exitInterrupted, err: errors.New("interrupted; nothing half-built was kept")}
				}
				return &exitError{code: exitInfra, err: fmt.Errorf("images build: %w", err)}
			}
			return nil
		},
	}
	build.Flags().BoolVar(&force, "force", false, "build images again even when their tags exist")
	cmd.AddCommand(build)

	cmd.AddCommand(&cobra.Command{
		Use:   "agent",
		Short: "Build the kubernetes provider's agent image (" + images.AgentRepo + ":VERSION) from this binary",
		Long: `Build the image the kubernetes provider's pods take the agent from: this
program alone, FROM scratch, tagged ` + images.AgentRepo + `:` + version + `. The binary must be
static (make build makes it so). Push it to a registry your cluster pulls
from, or load it into the cluster's runtime, and name it with --agent-image.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return &exitError{code: exitInfra, err: err}
			}
			cli, err := images.NewClient()
			if err != nil {
				return &exitError{code: exitInfra, err: err}
			}
			defer cli.Close()
			holdResources(cmd.Context())
			r, err := images.BuildAgent(cmd.Context(), cli, images.AgentImage(version), self, cmd.ErrOrStderr())
			if err != nil {
				return &exitError{code: exitInfra, err: fmt.Errorf("images agent: %w", err)}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: built (%s)\n", r.Tag, images.HumanSize(r.Size))
			return nil
		},
	})

	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the images scenario built, and which default images are missing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cli, err := images.NewClient()
			if err != nil {
				return &exitError{code: exitInfra, err: err}
			}
			defer cli.Close()
			built, err := images.List(cmd.Context(), cli)
			if err != nil {
				return &exitError{code: exitInfra, err: err}
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "IMAGE\tSTORE\tVERSION\tSIZE\tCREATED")
			var have []string
			for _, im := range built {
				tag := "<untagged " + strings.TrimPrefix(im.ID, "sha256:")[:12] + ">"
				if len(im.Tags) > 0 {
					tag = strings.Join(im.Tags, ", ")
				}
				have = append(have, im.Tags...)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", tag, im.Store, im.Version, images.HumanSize(im.Size), im.Created.Format("2006-01-02 15:04"))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			// The default images a scenario needs that scenario did not
			// build: a pulled official image serves as well.
			want := []string{images.BaseImage}
			for _, s := range images.DefaultSpecs() {
				want = append(want, s.Tag())
			}
			out := cmd.OutOrStdout()
			for _, tag := range want {
				if slices.Contains(have, tag) {
					continue
				}
				ok, err := images.Exists(cmd.Context(), cli, tag)
				if err != nil {
					return &exitError{code: exitInfra, err: err}
				}
				if ok {
					fmt.Fprintf(out, "%s: present, not built by scenario\n", tag)
				} else {
					fmt.Fprintf(out, "%s\n", &images.NotFoundError{Tag: tag})
				}
			}
			return nil
		},
	})
	refuseUnknownSubcommands(cmd)
	return cmd
}
