//go:build linux && !scenario_norun

package main

import (
	"cmp"
	"context"
	"errors"

	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/internal/results"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/report"
	"github.com/coordlab/scenario/runner"
)

// runnerBuilt reports whether this build can run scenarios: on Linux, yes.
func runnerBuilt() error { return nil }

// play runs one plan into a.dir.
func (f *runFlags) play(ctx context.Context, pl *plan.Plan, a playArgs) (*results.Results, error) {
	var network string
	switch a.networks.network {
	case "shaper-all":
		network = runner.NetworkEngaged
	case "kernel":
		network = runner.NetworkKernel
	}
	var kubeNetwork string
	switch a.networks.kube {
	case "fabric":
		kubeNetwork = runner.KubeNetworkFabric
	case "pods":
		kubeNetwork = runner.KubeNetworkPods
	}
	return runner.Run(ctx, pl, runner.Options{
		OutDir:       a.dir,
		Keep:         f.keep,
		StateDir:     f.stateDir,
		CacheDir:     f.cacheDir,
		AbortOnFail:  f.abortOnFail,
		Realtime:     f.realtime,
		BusyPoll:     f.busyPoll,
		PollIdle:     f.pollIdle,
		ScenarioFile: a.path,
		Logger:       a.logger,
		Progress:     a.progress,
		Live:         isTerminal(a.progress),
		Provider:     f.provider,
		Kube: runner.KubeOptions{Kubeconfig: f.kubeconfig, Context: f.kubeContext, AllowNonTest: f.kubeAllowNonTest,
			AgentImage: cmp.Or(f.agentImage, images.AgentImage(version)), RegionLabel: f.kubeRegionLabel, Network: kubeNetwork},
		Network: network,
		Report:  report.WriteInto,
	})
}

// runError maps a runner error to its exit code.
func runError(ctx context.Context, err error) error {
	var unsupported *runner.UnsupportedError
	var infra *runner.InfraError
	switch {
	case errors.As(err, &unsupported):
		return &exitError{code: exitInvalid, err: err}
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return &exitError{code: exitInterrupted, err: errors.New("interrupted; everything the run started has been stopped and removed")}
	case errors.As(err, &infra):
		return &exitError{code: exitInfra, err: err}
	}
	return &exitError{code: exitInfra, err: err}
}
