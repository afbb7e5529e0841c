package runner

import (
	"fmt"

	"github.com/coordlab/scenario/faults"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/stores/registry"
)

// faultImplemented reports whether the runner can inject a fault kind.
func faultImplemented(kind string) bool {
	_, ok := injectors()[kind]
	return ok
}

// checkSupported refuses, by name and before anything starts, every feature
// of a valid plan that the runner cannot run yet.
// netAvailable says why network shaping cannot run here (fabric.Available
// outside tests).
func checkSupported(p *plan.Plan, netAvailable func() error) error {
	var missing []string
	for _, c := range p.Clusters {
		if _, ok := registry.Lookup(c.Store); !ok {
			missing = append(missing, fmt.Sprintf("store %q (cluster %q)", c.Store, c.Name))
		}
	}
	for _, e := range p.Events {
		if e.Kind == plan.EventFaultInject && e.Fault.Disk != nil && e.Fault.Disk.Throttle > 0 {
			if err := faults.ThrottleAvailable(); err != nil {
				missing = append(missing, fmt.Sprintf("disk throttle (fault %q): %v", e.Fault.ID, err))
			}
			break
		}
	}
	if needsFabric(p) {
		if err := netAvailable(); err != nil {
			missing = append(missing, "network shaping and partitions (the network block or network/partition faults): "+err.Error())
		}
	}
	kubeClusters := map[string]bool{}
	for _, c := range p.Clusters {
		kubeClusters[c.Name] = c.Provider == plan.ProviderKubernetes
	}
	for _, e := range p.Events {
		if e.Kind == plan.EventFaultInject && e.Fault.Kind == plan.FaultDisk && e.Fault.Disk != nil && e.Fault.Disk.Throttle > 0 && kubeClusters[e.Fault.Cluster] {
			missing = append(missing, fmt.Sprintf("disk throttle with the kubernetes provider (fault %q): a pod's blkio group is the kubelet's, not built yet (competing writers work)", e.Fault.ID))
			break
		}
	}
	for _, w := range p.Workloads {
		if (w.Registry != nil || w.Lock != nil || w.Watches != nil) && kubeClusters[w.Cluster] {
			missing = append(missing, fmt.Sprintf("registry, lock and watches workloads (%q) with the kubernetes provider: they run in the runner, and its load workers in pods do not carry them yet", w.Name))
		}
	}
	seen := map[string]bool{}
	for _, e := range p.Events {
		if e.Kind != plan.EventFaultInject || faultImplemented(e.Fault.Kind) || seen[e.Fault.Kind] {
			continue
		}
		seen[e.Fault.Kind] = true
		missing = append(missing, fmt.Sprintf("fault kind %q (first used by fault %q)", e.Fault.Kind, e.Fault.ID))
	}
	if len(missing) > 0 {
		return &UnsupportedError{Features: missing}
	}
	return nil
}
