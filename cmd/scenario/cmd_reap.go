//go:build linux && !scenario_norun

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/coordlab/scenario/runner"
)

type reapFlags struct {
	stateDir                string
	kubernetes              bool
	kubeconfig, kubeContext string
	kubeAllowNonTest        bool
}

func newReapCommand() *cobra.Command {
	var f reapFlags
	cmd := &cobra.Command{
		Use:   "reap",
		Short: "Remove what killed runs left behind: processes, workspaces, containers, namespaces",
		Long: `Remove what runs whose runner was killed (SIGKILL, a crash, a lost machine
session) left behind on this host, as 'scenario run' does before it starts:
their processes and workspaces in the state directory, their docker
containers, volumes and networks, their blkio groups and, as root, their
network namespaces. With --kubernetes, also the kubernetes namespaces of this
host's runs whose runner is gone. What live runs own is left alone.

Prints one line per kind of thing removed, or "nothing to remove".

Exit codes:
  0  done (also when there was nothing to remove)
  1  a reaper failed; the message says which (what the others removed is printed)
  2  invalid command line
  130 interrupted (Ctrl-C)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return reap(cmd, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.stateDir, "state-dir", "", "where run workspaces live (default $XDG_RUNTIME_DIR/scenario or /tmp/scenario-<uid>)")
	fl.BoolVar(&f.kubernetes, "kubernetes", false, "also delete the kubernetes namespaces of this host's runs whose runner is gone (cluster from --kubeconfig and --kube-context, default $KUBECONFIG)")
	kubeClusterFlags(fl, &f.kubeconfig, &f.kubeContext, &f.kubeAllowNonTest, "--kubernetes")
	return cmd
}

func reap(cmd *cobra.Command, f *reapFlags) error {
	if !f.kubernetes {
		for _, name := range []string{"kubeconfig", "kube-context", "kube-allow-nontest"} {
			if cmd.Flags().Changed(name) {
				return &exitError{code: exitInvalid, err: fmt.Errorf("--%s is used only with --kubernetes", name)}
			}
		}
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o := runner.ReapOptions{StateDir: f.stateDir, Logger: logger}
	if f.kubernetes {
		// client-go logs through klog, to stderr by default; what matters
		// comes back as an error.
		klog.SetSlogLogger(slog.New(slog.DiscardHandler))
		o.Kube = &runner.KubeOptions{Kubeconfig: f.kubeconfig, Context: f.kubeContext, AllowNonTest: f.kubeAllowNonTest}
	}
	ctx := cmd.Context()
	rep, err := runner.Reap(ctx, o)
	lines := rep.Lines()
	for _, line := range lines {
		fmt.Fprintln(stdout, line)
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return &exitError{code: exitInterrupted, err: errors.New("interrupted")}
	}
	if err != nil {
		// One line per reaper that failed, each beginning with its name;
		// execute would print a joined error's lines as one.
		for _, e := range rep.Failed {
			fmt.Fprintf(stderr, "Error: %s\n", escapeControls(e.Error()))
		}
		// exitCheckFailed is 1: the command ran, and a reaper did not finish.
		return &exitError{code: exitCheckFailed, err: fmt.Errorf("reap: %w", err), quiet: true}
	}
	if len(lines) == 0 {
		fmt.Fprintln(stdout, "nothing to remove")
	}
	return nil
}
