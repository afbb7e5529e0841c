package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coordlab/scenario/images"
	"github.com/coordlab/scenario/internal/kubelocal/kubetest"
	"github.com/coordlab/scenario/plan"
	"github.com/coordlab/scenario/runner/kube"
)

// TestKubeKilledRunner kills `scenario run --provider kubernetes` with
// SIGKILL while its pods run, as a lost CI job would, and wants `scenario
// reap --kubernetes` to find the run's namespace by its labels and delete
// it, with its pods, and the run's workspace with it.
func TestKubeKilledRunner(t *testing.T) {
	c, agent := kubetest.Cluster(t, images.Default(plan.StoreEtcd, ""))
	state, out := t.TempDir(), t.TempDir()
	scenario := writeScenario(t, "long.hcl", `cluster "main" {
  store = "etcd"
}
workload "w" {
  mix = { put = 1 }
}
phase "p" {
  duration = "5m"
  load "w" {}
}
`)
	ready := make(chan struct{})
	cmd, output := startWatched(t, "cluster main ready", func() { close(ready) }, "run", scenario, "--provider", "kubernetes",
		"--kubeconfig", c.Kubeconfig(), "--agent-image", agent, "--state-dir", state, "--out", out)
	select {
	case <-ready:
	case <-time.After(4 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the run did not get its cluster ready:\n%s", output)
	}
	k, err := kube.Connect(kube.Options{Kubeconfig: c.Kubeconfig()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	owned := metav1.ListOptions{LabelSelector: fmt.Sprintf("%s=%d", kube.LabelOwner, cmd.Process.Pid)}
	var nss corev1.NamespaceList
	err = k.Core.List(ctx, "", "namespaces", owned, &nss)
	if err != nil || len(nss.Items) != 1 {
		t.Fatalf("the run's namespace: %v, %v", &nss, err)
	}
	ns := nss.Items[0].Name
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, ok := waitExit(t, cmd, 30*time.Second); !ok {
		t.Fatal("the killed runner did not exit")
	}
	var pods corev1.PodList
	err = k.Core.List(ctx, ns, "pods", metav1.ListOptions{}, &pods)
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods of the killed run: %v, %v (want them left behind for reap)", &pods, err)
	}

	// reap runs as a process of its own, as after a lost CI job: in this
	// one it would set client-go's process-wide logger (klog) under the
	// goroutines of the test's own client, which read it.
	code, stdout, stderr := runChild(t, 3*time.Minute, "reap", "--kubernetes", "--kubeconfig", c.Kubeconfig(), "--state-dir", state)
	if code != 0 || !strings.Contains(stdout, "namespace") {
		t.Fatalf("reap: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if err := k.Core.Get(ctx, "", "namespaces", ns, &corev1.Namespace{}); err == nil {
		t.Errorf("namespace %s still there after reap", ns)
	}
	if code, stdout, _ := runChild(t, 3*time.Minute, "reap", "--kubernetes", "--kubeconfig", c.Kubeconfig(), "--state-dir", state); code != 0 || !strings.Contains(stdout, "nothing to remove") {
		t.Errorf("a second reap: exit %d, %q; want nothing to remove", code, stdout)
	}
}

// runChild runs the command line args as a process of its own and returns
// its exit code and output; it fails the test if the process has not
// exited within limit.
func runChild(t *testing.T, limit time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := cliCommand(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	code, ok := waitExit(t, cmd, limit)
	if !ok {
		t.Fatalf("scenario %s did not exit within %s\n%s\n%s", strings.Join(args, " "), limit, &out, &errOut)
	}
	return code, out.String(), errOut.String()
}
