package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// needsLinux is why a command cannot run in this build: it starts store
// processes in network namespaces, shapes links through TUN devices, cuts
// them with netfilter and throttles disks through cgroups, all of which
// only Linux has.
func needsLinux(what string) error {
	return fmt.Errorf("%s needs Linux (network namespaces, TUN devices, netfilter, cgroups); this build is for %s/%s. Here validate, plan, fmt, compare, noise and report (on saved results) work; run scenarios on a Linux machine or in a Linux VM or container",
		what, runtime.GOOS, runtime.GOARCH)
}

// linuxOnlyCommand stands in for a command that this build cannot run:
// it takes any arguments and flags, and fails with exitInfra saying why.
func linuxOnlyCommand(use, short string, hidden bool) *cobra.Command {
	return &cobra.Command{
		Use:                use,
		Short:              short + " (Linux only)",
		Hidden:             hidden,
		DisableFlagParsing: true,
		SilenceUsage:       true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return &exitError{code: exitInfra, err: needsLinux("scenario " + cmd.Name())}
		},
	}
}
