package etcd

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores"
)

// Args returns the etcd server flags for node (1-based) of cluster c, whose
// members are reachable at eps, keeping its data in dataDir. Knobs left at
// zero in c.Etcd keep etcd's own defaults. The flags bootstrap a new
// cluster; on a restart etcd ignores the bootstrap flags because dataDir
// already holds the membership.
func Args(c plan.ClusterSpec, node int, eps []stores.Endpoint, dataDir string) []string {
	var self stores.Endpoint
	members := slices.Clone(eps)
	slices.SortFunc(members, func(a, b stores.Endpoint) int { return cmp.Compare(a.Node, b.Node) })
	initial := make([]string, 0, len(members))
	for _, ep := range members {
		if ep.Node == node {
			self = ep
		}
		initial = append(initial, plan.NodeName(ep.Node)+"=http://"+ep.PeerAddr)
	}
	client := "http://" + self.ClientAddr
	peer := "http://" + self.PeerAddr

	args := []string{
		"--name=" + plan.NodeName(node),
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + strings.Join(initial, ","),
		"--initial-cluster-state=new",
		// The token feeds etcd's member and cluster IDs, so members of
		// two clusters started side by side can never join each other.
		"--initial-cluster-token=" + clusterToken(c.Name),
		// zap is the only logger since 3.5 and accepted by 3.6; 3.4
		// needs it named to honour --log-level and --log-outputs. Info
		// keeps elections and leader changes in the node's log.
		"--logger=zap",
		"--log-level=info",
		"--log-outputs=stderr",
	}
	if k := c.Etcd; k != nil {
		if k.HeartbeatInterval > 0 {
			args = append(args, "--heartbeat-interval="+millis(k.HeartbeatInterval.D()))
		}
		if k.ElectionTimeout > 0 {
			args = append(args, "--election-timeout="+millis(k.ElectionTimeout.D()))
		}
		if k.SnapshotCount > 0 {
			args = append(args, "--snapshot-count="+strconv.FormatInt(k.SnapshotCount, 10))
		}
		if k.QuotaBackendBytes > 0 {
			args = append(args, "--quota-backend-bytes="+strconv.FormatInt(k.QuotaBackendBytes, 10))
		}
		if k.MaxRequestBytes > 0 {
			args = append(args, "--max-request-bytes="+strconv.FormatInt(k.MaxRequestBytes, 10))
		}
		if k.AutoCompactionMode != "" {
			args = append(args, "--auto-compaction-mode="+k.AutoCompactionMode)
		}
		if k.AutoCompactionRetention != "" {
			args = append(args, "--auto-compaction-retention="+k.AutoCompactionRetention)
		}
	}
	return args
}

func clusterToken(name string) string {
	return "scenario-" + name
}

// millis renders d as the whole milliseconds etcd's timing flags take,
// rounding a positive sub-millisecond value up rather than to "0", which
// etcd would read as "use the default".
func millis(d time.Duration) string {
	ms := d.Milliseconds()
	if d > 0 && d%time.Millisecond != 0 {
		ms++
	}
	return fmt.Sprint(ms)
}
