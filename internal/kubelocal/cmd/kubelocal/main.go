// Command kubelocal builds, starts and removes the local single-node
// Kubernetes the kubernetes provider is tested on.
//
//	go run ./internal/kubelocal/cmd/kubelocal build     # once: 10-37 minutes on two cores
//	go run ./internal/kubelocal/cmd/kubelocal up IMAGE... # until Ctrl-C; imports IMAGEs from Docker
//	go run ./internal/kubelocal/cmd/kubelocal reap      # what a killed `up` left
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coordlab/scenario/internal/kubelocal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kubelocal:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: kubelocal build | up [--sandbox IMAGE] [IMAGE...] | reap")
	}
	switch args[0] {
	case "build":
		_, err := kubelocal.Build(ctx, "", os.Stderr)
		return err
	case "reap":
		removed, err := kubelocal.Reap(ctx)
		for _, r := range removed {
			fmt.Println("removed", r)
		}
		return err
	case "up":
		imgs := args[1:]
		sandbox := ""
		if len(imgs) >= 2 && imgs[0] == "--sandbox" {
			sandbox, imgs = imgs[1], imgs[2:]
		}
		c, err := kubelocal.Up(ctx, kubelocal.Options{SandboxImage: sandbox, Progress: os.Stderr, Logger: slog.Default()})
		if err != nil {
			return err
		}
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := c.Down(dctx); err != nil {
				fmt.Fprintln(os.Stderr, "kubelocal: down:", err)
			}
		}()
		if len(imgs) > 0 {
			if err := c.Import(ctx, imgs...); err != nil {
				return err
			}
		}
		fmt.Printf("export KUBECONFIG=%s\n", c.Kubeconfig())
		<-ctx.Done()
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}
