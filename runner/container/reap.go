package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/moby/moby/client"

	"github.com/coordlab/scenario/internal/proc"
)

// Reap removes the containers, volumes and networks of runs whose runner
// is gone (killed with SIGKILL, say) and returns what it removed. Those of
// live runners, this one's included, are left alone. It returns nil, nil
// when no Docker engine is reachable: then there is nothing of ours to
// remove either.
func Reap(ctx context.Context, log *slog.Logger) ([]string, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cli, err := newClient(ctx)
	if err != nil {
		return nil, nil
	}
	defer cli.Close()
	owned, err := listLabelled(ctx, cli, make(client.Filters).Add("label", LabelOwner))
	if err != nil {
		return nil, fmt.Errorf("reap: %w", err)
	}
	runs := map[string]string{} // run id -> owner pid
	for _, r := range owned {
		runs[r.labels[LabelRun]] = r.labels[LabelOwner]
	}
	var removed []string
	var errs []error
	for run, owner := range runs {
		pid, err := strconv.Atoi(owner)
		if run == "" || err != nil || proc.Alive(pid) {
			continue
		}
		got, err := removeLabelled(ctx, cli, make(client.Filters).Add("label", LabelRun+"="+run), log)
		removed = append(removed, got...)
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", run, err))
			continue
		}
		log.Info("removed a killed run's containers", "run", run, "owner", pid, "removed", len(got))
	}
	slices.Sort(removed)
	return removed, errors.Join(errs...)
}
