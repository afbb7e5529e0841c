package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/coordlab/scenario/fabric"
	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/runner/container"
	"github.com/coordlab/scenario/runner/kube"
	"github.com/coordlab/scenario/runner/process"
)

// ReapOptions configure Reap.
type ReapOptions struct {
	// StateDir holds run workspaces; "" means process.DefaultStateDir().
	StateDir string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Kube, when set, also reaps the kubernetes namespaces of this host's
	// runs whose runner is gone, in the cluster its Kubeconfig, Context
	// and AllowNonTest select (through kube.Connect and its production
	// guard); the other fields are not used. nil skips kubernetes.
	Kube *KubeOptions
}

// ReapReport is what Reap removed, by kind.
type ReapReport struct {
	// Containers are the containers, volumes and networks of docker runs.
	Containers []string
	// Runs are the process runs whose runner was gone: their processes
	// killed and their workspaces removed (or kept, if marked keep).
	Runs []process.ReapedRun
	// BlkioGroups are the blkio control groups of disk throttles.
	BlkioGroups []string
	// NetworkNamespaces are the network fabrics' namespaces.
	NetworkNamespaces []string
	// KubeNamespaces are the kubernetes namespaces of runs of this host.
	KubeNamespaces []string
	// Failed holds an error per reaper that failed, each naming it.
	Failed []error
}

// Empty reports whether nothing was removed.
func (r ReapReport) Empty() bool {
	return len(r.Containers) == 0 && len(r.Runs) == 0 && len(r.BlkioGroups) == 0 &&
		len(r.NetworkNamespaces) == 0 && len(r.KubeNamespaces) == 0
}

// Lines describes the report, one line (without a newline) per kind of
// which something was removed, in the order Reap removes them.
func (r ReapReport) Lines() []string {
	var lines []string
	add := func(n int, format string) {
		if n > 0 {
			lines = append(lines, fmt.Sprintf(format, n))
		}
	}
	add(len(r.Containers), "removed %d container(s), volume(s) and network(s) left behind by an earlier, killed scenario")
	add(len(r.Runs), "cleaned up %d run(s) left behind by an earlier, killed scenario")
	add(len(r.BlkioGroups), "removed %d blkio group(s) left behind by an earlier, killed scenario")
	add(len(r.NetworkNamespaces), "removed %d network namespace(s) left behind by an earlier, killed scenario")
	add(len(r.KubeNamespaces), "removed %d kubernetes namespace(s) left behind by an earlier, killed scenario")
	return lines
}

// Reap removes what runs whose runner is gone (killed with SIGKILL, say)
// left behind on this host: docker containers, volumes and networks, run
// workspaces and their processes, blkio groups, network namespaces (when
// the network fabric can run here, i.e. as root) and, with o.Kube, the
// kubernetes namespaces of this host's runs. What live runners own, this
// process's included, is left alone. It is what Run does before it starts
// anything.
//
// Every reaper runs even when an earlier one failed; the report holds what
// was removed and each failure (Failed), and the error joins them.
func Reap(ctx context.Context, o ReapOptions) (ReapReport, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var rep ReapReport

	// Containers first: they write into run directories ReapStale removes.
	removed, err := container.Reap(ctx, log)
	rep.Containers = removed
	if err != nil {
		rep.Failed = append(rep.Failed, fmt.Errorf("reap containers, volumes and networks: %w", err))
	}

	reaped, err := process.ReapStale(ctx, o.StateDir, log)
	rep.Runs = reaped.Runs
	if err != nil {
		rep.Failed = append(rep.Failed, fmt.Errorf("reap runs: %w", err))
	}

	groups, err := faults.ReapCgroups(ctx)
	rep.BlkioGroups = groups
	if err != nil {
		rep.Failed = append(rep.Failed, fmt.Errorf("reap blkio groups: %w", err))
	}

	if fabric.Available() == nil {
		// After the processes: their namespaces go once they are gone.
		namespaces, err := fabric.Reap(ctx, log)
		rep.NetworkNamespaces = namespaces
		if err != nil {
			rep.Failed = append(rep.Failed, fmt.Errorf("reap network namespaces: %w", err))
		}
	}

	if o.Kube != nil {
		namespaces, err := reapKube(ctx, *o.Kube, log)
		rep.KubeNamespaces = namespaces
		if err != nil {
			rep.Failed = append(rep.Failed, fmt.Errorf("reap kubernetes namespaces: %w", err))
		}
	}
	return rep, errors.Join(rep.Failed...)
}

// reapKube connects as the kubernetes provider would, refusing a cluster
// that does not look like a test cluster in the same way, and deletes the
// namespaces of this host's runs whose runner is gone.
func reapKube(ctx context.Context, o KubeOptions, log *slog.Logger) ([]string, error) {
	k, err := kube.Connect(kube.Options{Kubeconfig: o.Kubeconfig, Context: o.Context, AllowNonTest: o.AllowNonTest, Logger: log})
	if err != nil {
		return nil, err
	}
	return kube.Reap(ctx, k, log)
}
