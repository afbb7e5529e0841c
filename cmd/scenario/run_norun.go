//go:build !linux || scenario_norun

// The command as it builds off Linux: everything but running. The tag
// scenario_norun builds it so on Linux too, for the test that runs it
// (TestWithoutRunner).

package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
)

// runnerBuilt reports that this build cannot run scenarios, after run or
// noise has checked the file, so that the diagnostics come first.
func runnerBuilt() error { return needsLinux("running a scenario") }

func (f *runFlags) play(context.Context, *plan.Plan, playArgs) (*results.Results, error) {
	return nil, needsLinux("running a scenario")
}

func runError(_ context.Context, err error) error { return &exitError{code: exitInfra, err: err} }

func newReapCommand() *cobra.Command {
	return linuxOnlyCommand("reap", "Remove what killed runs left behind", false)
}

func newAgentCommand() *cobra.Command {
	return linuxOnlyCommand("agent", "In-pod supervisor of the kubernetes provider", true)
}
