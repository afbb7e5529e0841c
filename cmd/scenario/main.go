// Command scenario runs declarative scenarios against etcd, ZooKeeper and
// Consul clusters: it brings the cluster up, plays a timeline of load and
// faults, measures, checks and reports.
//
// Exit codes: 0 every check passed (or the command succeeded), 1 a check
// failed, 2 invalid input, 3 infrastructure failure (a cluster did not come
// up, a store binary is missing), 130 interrupted.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/coordlab/scenario/internal/gcbudget"
)

// Exit codes, documented in the README and in --help.
const (
	exitOK          = 0
	exitCheckFailed = 1
	exitInvalid     = 2
	exitInfra       = 3
	exitInterrupted = 130
)

// exitError carries an exit code out of a command. Its message has already
// been printed when quiet is set.
type exitError struct {
	code  int
	err   error
	quiet bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The runner is a load generator: its collector runs less often while
	// the heap is small, and its heap grows into huge pages (see
	// internal/gcbudget). GOGC in the environment turns both off.
	go gcbudget.Run(context.Background(), gcbudget.DefaultHeadroom, time.Second)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// execute runs the CLI with args and returns the exit code.
//
// Ctrl-C and SIGTERM (ctx ending) stop every command within a second:
// commands that own nothing outside this process (validate, plan, fmt,
// compare, report, list, ...) are abandoned at once with exit 130, since
// they write only by renaming a finished file into place; commands that
// start processes, containers or builds mark themselves with holdResources
// and are waited for, because they tear down what they started and then
// return 130 themselves.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var holds atomic.Bool
	ctx = context.WithValue(ctx, holdsKey{}, &holds)
	root := newRootCommand(stdout, stderr)
	root.SetArgs(terraformStyleFlags(args))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		if !holds.Load() {
			fmt.Fprintln(stderr, "Error: interrupted")
			return exitInterrupted
		}
		err = <-done
	}
	if err == nil && ctx.Err() != nil && holds.Load() {
		// Finished its teardown, but was cut short.
		err = &exitError{code: exitInterrupted, err: errors.New("interrupted")}
	}
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !ee.quiet && ee.err != nil {
			fmt.Fprintf(stderr, "Error: %s\n", escapeControls(ee.err.Error()))
		}
		return ee.code
	}
	// Cobra's own usage errors (unknown flag, wrong arguments) are bad input.
	fmt.Fprintf(stderr, "Error: %s\nRun 'scenario --help' for usage.\n", escapeControls(err.Error()))
	return exitInvalid
}

// holdsKey is the context key of the flag that a command sets when it
// starts something that must be torn down before the process exits.
type holdsKey struct{}

// holdResources tells execute that this command must be waited for on
// Ctrl-C: it has started (or is about to start) processes, containers or
// builds, and returns once they are stopped.
func holdResources(ctx context.Context) {
	if h, ok := ctx.Value(holdsKey{}).(*atomic.Bool); ok {
		h.Store(true)
	}
}

const exitCodesHelp = `Exit codes:
  0  success: every check passed
  1  a check failed (or fmt --check found unformatted files)
  2  invalid input: the scenario or the command line is wrong (diagnostics say where)
  3  infrastructure failure: a store binary is missing, a cluster did not come up
  130 interrupted (Ctrl-C); everything started is still cleaned up`

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "scenario",
		Short: "Declarative chaos, tuning and CI-gate scenarios for etcd, ZooKeeper and Consul",
		Long: `scenario runs one HCL file that declares a store cluster, where its nodes sit,
what clients do, a timeline of phases with injected faults, and checks on latency,
availability, failover time and correctness.

` + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(
		newValidateCommand(),
		newPlanCommand(),
		newFmtCommand(),
		newRunCommand(),
		newStoresCommand(),
		newImagesCommand(),
		newCompareCommand(),
		newNoiseCommand(),
		newReportCommand(),
		newReapCommand(),
		newVersionCommand(),
		newAgentCommand(),
		newWorkerCommand(),
	)
	return root
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "scenario %s\n", version)
			return nil
		},
	}
}

// terraformStyleFlags accepts -var and -var-file with one dash, as Terraform
// and Packer spell them and as our users type them; pflag would read "-var"
// as the shorthands -v -a -r.
func terraformStyleFlags(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		name, value, hasValue := strings.Cut(a, "=")
		if name == "-var" || name == "-var-file" {
			a = "-" + name
			if hasValue {
				a += "=" + value
			}
		}
		out[i] = a
	}
	return out
}
