package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/plan"
	"github.com/spf13/cobra"
)

func newPlanCommand() *cobra.Command {
	var vf varFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan FILE",
		Short: "Print the compiled timeline of a scenario",
		Long: `Print what a run of FILE would do, the way terraform plan prints changes: the
clusters, the network, the workloads, every phase boundary, load change and fault
at its offset from the start of the run, and the checks. With a sweep, one plan
per point. --json prints the Plan the runner executes (stable encoding).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			build, err := loadScenario(cmd, args[0], &vf)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if build.File.Sweep == nil {
					return enc.Encode(build.Plans[0])
				}
				return enc.Encode(build.Plans)
			}
			for i, p := range build.Plans {
				if i > 0 {
					fmt.Fprintln(out)
				}
				writePlanText(out, p)
			}
			for _, s := range build.Skipped {
				fmt.Fprintf(out, "\nskipped sweep point %s: %s\n", s.Point, s.Reason)
			}
			return nil
		},
	}
	vf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return cmd
}

// writePlanText renders a plan for people.
func writePlanText(w io.Writer, p *plan.Plan) {
	fmt.Fprintf(w, "Scenario %s", p.Scenario)
	if len(p.Point) > 0 {
		fmt.Fprintf(w, "  [sweep point %s]", dsl.Point(p.Point))
	}
	fmt.Fprintf(w, "  (runs %s)\n", p.Duration)
	if p.Repeat > 1 {
		fmt.Fprintf(w, "Repeated %d times (repeat = %d), each on a fresh cluster; sweep points interleave; --repeat overrides\n", p.Repeat, p.Repeat)
	}

	fmt.Fprintln(w, "\nClusters:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range p.Clusters {
		fmt.Fprintf(tw, "  %s\t%s %s\t%d nodes\t%s\t%s\t%s\n", c.Name, c.Store, c.Version, c.Nodes, c.Provider, placementText(c), knobText(c))
	}
	tw.Flush()

	if p.Network.Shaped() {
		fmt.Fprintln(w, "\nNetwork (round-trip times; each direction gets half):")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		if p.Network.Default.Shaped() {
			fmt.Fprintf(tw, "  default (between regions)\t%s\n", linkText(p.Network.Default.Shaping))
		}
		for _, l := range p.Network.Links {
			fmt.Fprintf(tw, "  %s <-> %s\t%s\n", l.A, l.B, linkText(l.Shaping))
		}
		// Always said: a user may expect the default between neighbours.
		within := "unshaped"
		if p.Network.Within.Shaped() {
			within = linkText(p.Network.Within.Shaping)
		}
		fmt.Fprintf(tw, "  within a region\t%s\n", within)
		tw.Flush()
	}

	fmt.Fprintln(w, "\nWorkloads:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, wl := range p.Workloads {
		if r := wl.Registry; r != nil {
			churn := ""
			if r.Churn > 0 {
				churn = fmt.Sprintf(", churn %g/s", r.Churn)
			}
			recipe := "registry"
			if r.Recipe != "" {
				recipe += " (" + r.Recipe + ")"
			}
			fmt.Fprintf(tw, "  %s\t-> %s from %s\t%s\t%d instances, ttl %s, heartbeat %s, %d watchers%s\t%d registrations at once, timeout %s, client %s\n",
				wl.Name, wl.Cluster, wl.Region, recipe, r.Instances, r.TTL, r.Heartbeat, r.Watchers, churn, wl.Clients, wl.Timeout, wl.Client)
			continue
		}
		if l := wl.Lock; l != nil {
			fmt.Fprintf(tw, "  %s\t-> %s from %s\tlock (%s)\t%d contenders, ttl %s, hold %s\ttimeout %s, client %s\n",
				wl.Name, wl.Cluster, wl.Region, l.Recipe, l.Contenders, l.TTL, l.Hold, wl.Timeout, wl.Client)
			continue
		}
		var mix []string
		for _, m := range wl.Mix {
			mix = append(mix, fmt.Sprintf("%s %.0f%%", m.Op, m.Weight*100))
		}
		preload := ""
		if wl.Preload {
			preload = ", preload"
		}
		if wl.Watchers > 0 {
			preload += fmt.Sprintf(", %d watchers", wl.Watchers)
		}
		from := wl.Region
		if wl.Endpoints == plan.EndpointsLocal {
			from += " (local members)"
		}
		fmt.Fprintf(tw, "  %s\t-> %s from %s\t%s\t%s\t%d keys %s, key %dB, value %s%s\t%d clients / %d conns, timeout %s, client %s\n",
			wl.Name, wl.Cluster, from, strings.Join(mix, ", "), wl.Consistency, wl.Keyspace, wl.Distribution,
			wl.KeySize, plan.FormatBytes(int64(wl.ValueSize)), preload, wl.Clients, wl.Conns, wl.Timeout, wl.Client)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nTimeline:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  AT\tPHASE\tEVENT")
	for _, e := range p.Events {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.At, e.Phase, eventText(e, p))
	}
	tw.Flush()

	if len(p.Checks) > 0 {
		fmt.Fprintln(w, "\nChecks:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, c := range p.Checks {
			abort := ""
			if c.AbortOnFail {
				abort = "  (abort on fail)"
			}
			fmt.Fprintf(tw, "  %s\t%s%s\n", c.Name, oneLine(c.Condition), abort)
		}
		tw.Flush()
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func placementText(c plan.ClusterSpec) string {
	parts := make([]string, len(c.Placement))
	for i, r := range c.Placement {
		parts[i] = plan.NodeName(i+1) + "=" + r
	}
	return strings.Join(parts, " ")
}

func knobText(c plan.ClusterSpec) string {
	var parts []string
	add := func(name string, v any, set bool) {
		if set {
			parts = append(parts, fmt.Sprintf("%s=%v", name, v))
		}
	}
	if k := c.Etcd; k != nil {
		add("heartbeat_interval", k.HeartbeatInterval, k.HeartbeatInterval > 0)
		add("election_timeout", k.ElectionTimeout, k.ElectionTimeout > 0)
		add("snapshot_count", k.SnapshotCount, k.SnapshotCount > 0)
		add("quota_backend_bytes", plan.FormatBytes(k.QuotaBackendBytes), k.QuotaBackendBytes > 0)
		add("max_request_bytes", plan.FormatBytes(k.MaxRequestBytes), k.MaxRequestBytes > 0)
		add("auto_compaction", k.AutoCompactionMode+":"+k.AutoCompactionRetention, k.AutoCompactionMode != "")
	}
	if k := c.ZooKeeper; k != nil {
		add("tick_time", k.TickTime, k.TickTime > 0)
		add("init_limit", k.InitLimit, k.InitLimit > 0)
		add("sync_limit", k.SyncLimit, k.SyncLimit > 0)
		add("snap_count", k.SnapCount, k.SnapCount > 0)
		add("max_client_cnxns", k.MaxClientCnxns, k.MaxClientCnxns > 0)
		add("jvm_heap", plan.FormatBytes(k.JVMHeap), k.JVMHeap > 0)
	}
	if k := c.Consul; k != nil {
		add("raft_multiplier", k.RaftMultiplier, k.RaftMultiplier > 0)
		add("heartbeat_timeout", k.HeartbeatTimeout, k.HeartbeatTimeout > 0)
		add("election_timeout", k.ElectionTimeout, k.ElectionTimeout > 0)
		add("leader_lease_timeout", k.LeaderLeaseTimeout, k.LeaderLeaseTimeout > 0)
		add("raft_snapshot_threshold", k.RaftSnapshotThreshold, k.RaftSnapshotThreshold > 0)
		add("raft_snapshot_interval", k.RaftSnapshotInterval, k.RaftSnapshotInterval > 0)
	}
	if len(parts) == 0 {
		return "default knobs"
	}
	return strings.Join(parts, " ")
}

func linkText(l plan.Shaping) string {
	var parts []string
	if l.RTT > 0 {
		parts = append(parts, "rtt "+l.RTT.String())
	}
	if l.Jitter > 0 {
		parts = append(parts, "jitter "+l.Jitter.String())
	}
	if l.Loss > 0 {
		parts = append(parts, fmt.Sprintf("loss %g%%", l.Loss))
	}
	if l.Bandwidth > 0 {
		parts = append(parts, "bandwidth "+plan.FormatBandwidth(l.Bandwidth))
	}
	if len(parts) == 0 {
		return "unshaped"
	}
	return strings.Join(parts, ", ")
}

func eventText(e plan.Event, p *plan.Plan) string {
	switch e.Kind {
	case plan.EventPhaseStart:
		for _, ph := range p.Phases {
			if ph.Name == e.Phase {
				return fmt.Sprintf("phase %s starts (%s)", e.Phase, ph.Duration)
			}
		}
	case plan.EventPhaseEnd:
		return fmt.Sprintf("phase %s ends", e.Phase)
	case plan.EventLoad:
		return "load " + loadText(e.Load, p)
	case plan.EventFaultInject:
		return "inject " + faultText(e.Fault)
	case plan.EventFaultRecover:
		return "recover " + e.Fault.ID + recoverText(e.Fault)
	}
	return e.Kind
}

func loadText(l *plan.LoadSpec, p *plan.Plan) string {
	for _, w := range p.Workloads {
		if w.Name == l.Workload && w.Registry != nil {
			return fmt.Sprintf("%s: registry lives (heartbeats, churn, watches)", l.Workload)
		}
		if w.Name == l.Workload && w.Lock != nil {
			return fmt.Sprintf("%s: contenders take turns", l.Workload)
		}
	}
	if l.Mode == plan.LoadOpen {
		if l.RateFrom == l.RateTo {
			return fmt.Sprintf("%s: open loop %g req/s", l.Workload, l.RateFrom)
		}
		return fmt.Sprintf("%s: open loop %g -> %g req/s", l.Workload, l.RateFrom, l.RateTo)
	}
	if l.ClientsFrom == l.ClientsTo {
		return fmt.Sprintf("%s: closed loop, %d clients", l.Workload, l.ClientsFrom)
	}
	return fmt.Sprintf("%s: closed loop, %d -> %d clients", l.Workload, l.ClientsFrom, l.ClientsTo)
}

func faultText(f *plan.FaultSpec) string {
	s := fmt.Sprintf("%s: %s %s on %s", f.ID, f.Kind, f.Target, f.Cluster)
	switch {
	case f.Workload != "":
		s = fmt.Sprintf("%s: pause the holder of lock workload %s", f.ID, f.Workload)
	case f.Kind == plan.FaultTransferLeader:
		to := f.Target.String()
		switch f.Target.Kind {
		case plan.TargetFollower:
			to = "a follower"
		case plan.TargetRegion:
			to = "a node in region " + f.Target.Region
		}
		s = fmt.Sprintf("%s: transfer the leadership to %s on %s", f.ID, to, f.Cluster)
	case f.Vanish != nil:
		n := fmt.Sprintf("%d", f.Vanish.Count)
		if f.Vanish.Count == 0 {
			n = fmt.Sprintf("%g%%", f.Vanish.Fraction*100)
		}
		s = fmt.Sprintf("%s: vanish: %s of registry %s's instances fall silent", f.ID, n, f.Vanish.Workload)
	case f.Network != nil:
		scope := "every link"
		if len(f.Network.Between) == 2 {
			scope = f.Network.Between[0] + " <-> " + f.Network.Between[1]
		} else if f.Target.Kind != "" {
			scope = "paths of " + f.Target.String() + " on " + f.Cluster
		}
		s = fmt.Sprintf("%s: network %s: %s", f.ID, scope, linkText(f.Network.Shaping))
	case f.Partition != nil:
		if len(f.Partition.Groups) == 0 {
			s = fmt.Sprintf("%s: partition isolating %s on %s (%s)", f.ID, f.Target, f.Cluster, f.Partition.Direction)
		} else {
			var gs []string
			for _, g := range f.Partition.Groups {
				var ms []string
				for _, m := range g {
					if m.Region != "" {
						ms = append(ms, m.Region)
					} else {
						ms = append(ms, plan.NodeName(m.Node))
					}
				}
				gs = append(gs, "["+strings.Join(ms, ",")+"]")
			}
			s = fmt.Sprintf("%s: partition %s (%s)", f.ID, strings.Join(gs, " | "), f.Partition.Direction)
		}
	case f.Disk != nil:
		rate := "unlimited"
		if f.Disk.Rate > 0 {
			rate = plan.FormatBytes(f.Disk.Rate) + "/s"
		}
		s += fmt.Sprintf(", %s writes of %s x%d, fsync=%t", rate, plan.FormatBytes(f.Disk.BlockSize), f.Disk.Parallelism, f.Disk.Fsync)
	}
	if f.Duration > 0 {
		s += fmt.Sprintf(" for %s", f.Duration)
	}
	return s
}

func recoverText(f *plan.FaultSpec) string {
	if k, ok := plan.FaultKindOf(f.Kind); ok {
		return " (" + k.Undo + ")"
	}
	return ""
}
