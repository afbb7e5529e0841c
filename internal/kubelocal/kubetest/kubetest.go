// Package kubetest gives a test package one local Kubernetes (package
// kubelocal), started by the first test that asks and brought down after
// the last, with a check that the host is as it was found.
//
//	func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
//	func TestX(t *testing.T) { c, agent := kubetest.Cluster(t, "gcr.io/etcd-development/etcd:v3.5.17"); ... }
package kubetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/internal/kubelocal"
)

// AgentTag is the agent image the tests build from this tree.
const AgentTag = images.AgentRepo + ":test"

var shared struct {
	once   sync.Once
	c      *kubelocal.Cluster
	skip   string
	err    error
	before kubelocal.Snapshot
}

// Main runs the tests, then brings the cluster down if one was started,
// and fails if it left the host changed.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.c == nil {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := shared.c.Down(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "local kubernetes down:", err)
		code = 1
	}
	if diff := shared.before.Diff(kubelocal.TakeSnapshot(ctx)); len(diff) > 0 {
		fmt.Fprintf(os.Stderr, "the local kubernetes left the host changed:\n%s\n", strings.Join(diff, "\n"))
		code = 1
	}
	return code
}

// Cluster returns the local cluster with the agent image and storeImages
// loaded, and the agent image's name; it skips the test, saying why, where
// the machine cannot run one.
func Cluster(t *testing.T, storeImages ...string) (*kubelocal.Cluster, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Kubernetes cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	shared.once.Do(func() {
		if err := kubelocal.Missing(""); err != nil {
			shared.skip = fmt.Sprintf("no local Kubernetes: %v", err)
			return
		}
		if err := images.DockerAvailable(ctx); err != nil {
			shared.skip = fmt.Sprintf("the local Kubernetes takes its images from Docker: %v", err)
			return
		}
		dir, err := os.MkdirTemp("", "kubetest-agent-")
		if err != nil {
			shared.err = err
			return
		}
		defer os.RemoveAll(dir)
		if shared.err = buildAgent(ctx, dir); shared.err != nil {
			return
		}
		// A cluster a killed test left is removed first, so that the
		// host is compared with itself as it was before any cluster.
		if removed, err := kubelocal.Reap(ctx); err != nil {
			shared.err = err
			return
		} else if len(removed) > 0 {
			fmt.Fprintf(os.Stderr, "removed %v left by a killed run\n", removed)
		}
		shared.before = kubelocal.TakeSnapshot(ctx)
		shared.c, shared.err = kubelocal.Up(ctx, kubelocal.Options{SandboxImage: AgentTag, Progress: os.Stderr})
	})
	if shared.skip != "" {
		t.Skip(shared.skip)
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	if len(storeImages) > 0 {
		if err := images.Check(ctx, storeImages...); err != nil {
			t.Skipf("store images: %v", err)
		}
		if err := shared.c.Import(ctx, storeImages...); err != nil {
			t.Fatal(err)
		}
	}
	return shared.c, AgentTag
}

// buildAgent builds this tree's scenario, static, into the agent image.
func buildAgent(ctx context.Context, dir string) error {
	bin := filepath.Join(dir, "scenario")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/coordlab/scenario/cmd/scenario")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build scenario for the agent image: %v\n%s", err, out)
	}
	cli, err := images.NewClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = images.BuildAgent(ctx, cli, AgentTag, bin, nil)
	return err
}
