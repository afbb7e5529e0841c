// Command consulfetch downloads into the Go module cache the modules a
// Consul agent is built from, and builds nothing, so that a later
// `scenario stores install consul` only compiles. Consul's modules are
// 400 MB: .ci/run fetches them while it compiles the scenario command,
// which could not fetch them itself before it is built. It imports none of
// the Consul driver's dependencies, so `go run` compiles it in seconds.
//
//	go run ./stores/consul/cmd/consulfetch [VERSION]
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coordlab/scenario/stores/consul/consulmod"
	"github.com/coordlab/scenario/stores/gobuild"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "consulfetch:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 1 {
		return fmt.Errorf("usage: consulfetch [VERSION] (default %s)", consulmod.DefaultVersion)
	}
	version := consulmod.DefaultVersion
	if len(args) == 1 {
		version = args[0]
	}
	v, err := consulmod.ParseVersion(version)
	if err != nil {
		return err
	}
	t := consulmod.Target(v)
	if path, ok := gobuild.Exists("", t); ok {
		fmt.Printf("consul %s is built already (%s): nothing to fetch\n", v, path)
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	if err := gobuild.Fetch(ctx, "", t); err != nil {
		return fmt.Errorf("fetch consul %s: %w", v, err)
	}
	fmt.Printf("fetched consul %s's modules in %s\n", v, time.Since(start).Round(time.Second))
	return nil
}
