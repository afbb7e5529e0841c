package stores

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coordlab/scenario/plan"
)

// readyPollInterval paces WaitReady. An election takes a few hundred
// milliseconds at the least, so polling faster gains nothing.
const readyPollInterval = 100 * time.Millisecond

// WaitReady calls notReady every readyPollInterval, up to timeout, until it
// returns "" (ready). Each call gets each as the bound on its own polls:
// a tenth of the timeout, between the interval and a second. The error
// says how long it waited and what notReady said last; cluster names the
// cluster in it ("etcd cluster").
func WaitReady(ctx context.Context, timeout time.Duration, cluster string, notReady func(ctx context.Context, each time.Duration) string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	each := min(time.Second, max(timeout/10, readyPollInterval))
	start := time.Now()
	for {
		reason := notReady(ctx, each)
		if reason == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %s", cluster, time.Since(start).Round(time.Millisecond), reason)
		case <-time.After(readyPollInterval):
		}
	}
}

// LeaderAgreement says why a poll does not show a ready cluster, or ""
// if it does: every node answered, all name the same leader, and that
// leader, among the polled nodes, says it leads.
func LeaderAgreement(sts []NodeStatus) string {
	var silent, leaderless []string
	leaders := map[int][]string{} // leader named -> nodes naming it
	for _, s := range sts {
		name := plan.NodeName(s.Node)
		switch {
		case s.Err != nil:
			silent = append(silent, fmt.Sprintf("%s did not answer (%v)", name, s.Err))
		case s.Leader == 0:
			leaderless = append(leaderless, name)
		default:
			leaders[s.Leader] = append(leaders[s.Leader], name)
		}
	}
	var reasons []string
	reasons = append(reasons, silent...)
	if len(leaderless) > 0 {
		reasons = append(reasons, strings.Join(leaderless, ", ")+" know no leader")
	}
	if len(leaders) > 1 {
		var views []string
		for _, l := range slices.Sorted(maps.Keys(leaders)) {
			views = append(views, fmt.Sprintf("%s name %s", strings.Join(leaders[l], ", "), plan.NodeName(l)))
		}
		reasons = append(reasons, "nodes disagree on the leader: "+strings.Join(views, "; "))
	}
	if len(reasons) > 0 {
		return strings.Join(reasons, "; ")
	}
	for l := range leaders {
		i := slices.IndexFunc(sts, func(s NodeStatus) bool { return s.Node == l })
		if i < 0 {
			// A leader outside the poll would be another cluster's node.
			return fmt.Sprintf("the leader %s is not among the polled nodes", plan.NodeName(l))
		}
		if !sts[i].IsLeader {
			return fmt.Sprintf("the others name %s leader but it does not say so", plan.NodeName(l))
		}
	}
	return ""
}

// PollEach asks every node index in [0, n) at once, each with ctx bounded
// by timeout (if positive), waits for all of them and returns what each
// said: the fan-out every driver's status poller shares. It stamps each
// answer with when it arrived (NodeStatus.At), which observers time states
// by.
func PollEach(ctx context.Context, n int, timeout time.Duration, ask func(ctx context.Context, i int) NodeStatus) []NodeStatus {
	out := make([]NodeStatus, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			pctx, cancel := ctx, context.CancelFunc(func() {})
			if timeout > 0 {
				pctx, cancel = context.WithTimeout(ctx, timeout)
			}
			defer cancel()
			out[i] = Stamp(ask(pctx, i))
		})
	}
	wg.Wait()
	return out
}

// Stamp sets st.At to now if the node answered.
func Stamp(st NodeStatus) NodeStatus {
	if st.Err == nil {
		st.At = time.Now()
	}
	return st
}
