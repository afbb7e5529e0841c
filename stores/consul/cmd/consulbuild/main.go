// Command consulbuild builds the Consul agent into the store cache, as
// `scenario stores install consul` does, from a package that needs a small
// part of the scenario command's compiling (about a sixth of its modules'
// packages). .ci/run starts it first, so that Consul's build (4 to 11
// minutes on two cores) runs beside the race build of the command instead of
// waiting for it.
//
//	go run ./stores/consul/cmd/consulbuild [VERSION]
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/coordlab/scenario/stores/consul"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "consulbuild:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	version := consul.DefaultVersion
	switch len(args) {
	case 0:
	case 1:
		version = args[0]
	default:
		return fmt.Errorf("usage: consulbuild [VERSION] (default %s)", consul.DefaultVersion)
	}
	path, err := consul.Install(ctx, consul.InstallOptions{Version: version, Progress: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}
