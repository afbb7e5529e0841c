//go:build linux && !scenario_norun

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/coordlab/scenario/internal/podagent"
	"github.com/spf13/cobra"
)

// newAgentCommand is what runs inside the kubernetes provider's pods: the
// supervisor of a store server, its control client, the init step that
// hands the binary to the store's container, and the pods' pause process
// on a local cluster. Users do not type it; it is hidden.
func newAgentCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "agent",
		Short:  "In-pod supervisor of the kubernetes provider (not for direct use)",
		Hidden: true,
	}
	var grace time.Duration
	run := &cobra.Command{
		Use:   "run SOCKET",
		Short: "Supervise a store server, controlled through the Unix socket SOCKET",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Waited for on SIGTERM: it stops the server first.
			holdResources(cmd.Context())
			return podagent.New(os.Stdout).Serve(cmd.Context(), args[0], grace)
		},
	}
	run.Flags().DurationVar(&grace, "grace", 10*time.Second, "how long the server has to stop when the pod is deleted")
	var stopGrace time.Duration
	ctl := &cobra.Command{
		Use:   "ctl SOCKET VERB [-- COMMAND...]",
		Short: "Ask the agent at SOCKET to start (COMMAND), kill, stop, pause, resume, report status, or watch; VERB - reads a JSON request from stdin; session serves requests on stdin and events and replies on stdout",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[1] == "session" {
				// Requests on stdin, events and replies on stdout.
				if err := podagent.Session(cmd.Context(), args[0], cmd.InOrStdin(), cmd.OutOrStdout()); err != nil {
					return &exitError{code: exitInfra, err: fmt.Errorf("agent session: %w", err)}
				}
				return nil
			}
			req := podagent.Request{Verb: args[1], Argv: args[2:], Grace: stopGrace}
			if args[1] == "-" {
				req = podagent.Request{}
				if err := json.NewDecoder(io.LimitReader(cmd.InOrStdin(), 16<<20)).Decode(&req); err != nil {
					return &exitError{code: exitInvalid, err: fmt.Errorf("agent ctl: request on stdin: %w", err)}
				}
			}
			if err := podagent.Ctl(cmd.Context(), args[0], req, cmd.OutOrStdout()); err != nil {
				return &exitError{code: exitInfra, err: fmt.Errorf("agent %s: %w", args[1], err)}
			}
			return nil
		},
	}
	ctl.Flags().DurationVar(&stopGrace, "grace", 0, "for stop: how long the server has between SIGTERM and SIGKILL")
	cmd.AddCommand(run, ctl,
		&cobra.Command{
			Use:   "install DEST",
			Short: "Copy this binary to DEST",
			Args:  cobra.ExactArgs(1),
			RunE: func(_ *cobra.Command, args []string) error {
				return podagent.Install(args[0])
			},
		},
		&cobra.Command{
			Use:   "pause",
			Short: "Wait for SIGTERM, reaping orphans (a pod sandbox's process)",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				podagent.Pause(cmd.Context())
				return nil
			},
		})
	return cmd
}
