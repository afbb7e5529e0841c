package main

import (
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/coordlab/scenario/runner/worker"
)

// newWorkerCommand is a load worker of the kubernetes provider: it reads
// its share of a workload from stdin and writes the outcomes to stdout
// (package worker). The runner starts it through exec; users do not.
func newWorkerCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Short:  "Run a share of a workload for a runner, over stdin and stdout (not for direct use)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			holdResources(cmd.Context())
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			if err := worker.Serve(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), log); err != nil {
				return &exitError{code: exitInfra, err: err}
			}
			return nil
		},
	}
}
