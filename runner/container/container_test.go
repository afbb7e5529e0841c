package container

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/coordlab/scenario/images"
)

// needDocker skips the test where no Docker engine or no base image is
// available, saying which.
func needDocker(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	// Check says which is missing: the engine, or the image.
	if err := images.Check(ctx, images.BaseImage); err != nil {
		t.Skipf("needs a Docker engine and the base image: %v", err)
	}
}

// shellNode is a node whose "store" is a shell loop that says hello, then
// a line every 100 ms, and exits 0 on SIGTERM.
func shellNode(t *testing.T, dir string) NodeSpec {
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	return NodeSpec{
		Image: images.BaseImage,
		Path:  "/bin/sh",
		Args: []string{"-c", `echo hello from $(hostname); trap 'echo bye; exit 0' TERM
echo written > ` + data + `/file
while :; do sleep 0.1; done`},
		DataDir: data,
		LogPath: filepath.Join(dir, "log"),
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func logHas(t *testing.T, n *Node, s string) func() bool {
	return func() bool {
		b, _ := os.ReadFile(n.LogPath())
		return strings.Count(string(b), s) > 0
	}
}

func labelled(t *testing.T, run string) []string {
	t.Helper()
	got, err := Labelled(context.Background(), LabelRun+"="+run)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestNodeLifecycle plays every operation a fault uses on a container node
// and checks the engine's view after each, then that Close leaves nothing.
func TestNodeLifecycle(t *testing.T) {
	needDocker(t)
	ctx := context.Background()
	runID := "test-" + time.Now().UTC().Format("150405.000")
	runID = strings.ReplaceAll(runID, ".", "")
	r, err := NewRun(ctx, Options{RunID: runID, SandboxImage: images.BaseImage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	n, err := r.AddNode(ctx, "n1", shellNode(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if !n.Addr().IsValid() || n.SandboxPID() == 0 {
		t.Fatalf("sandbox: addr %v pid %d", n.Addr(), n.SandboxPID())
	}
	nsBefore, err := os.Readlink("/proc/" + itoa(n.SandboxPID()) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "hello in the log", logHas(t, n, "hello from n1"))
	// The script writes the file after its hello: wait for what it wrote
	// (a cold CI run once read the file between the two).
	waitFor(t, "the node's data file on the host", func() bool {
		b, _ := os.ReadFile(filepath.Join(n.DataDir(), "file"))
		return string(b) == "written\n"
	})
	storeNS, _ := os.Readlink("/proc/" + itoa(n.PID()) + "/ns/net")
	if storeNS != nsBefore {
		t.Fatalf("store in namespace %s, sandbox in %s", storeNS, nsBefore)
	}

	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	if state := procState(t, n.PID()); state != "D" && state != "S" {
		t.Logf("paused store in state %q", state)
	}
	u1, err := n.Usage()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	u2, _ := n.Usage()
	if u2.CPU != u1.CPU {
		t.Errorf("paused container used CPU: %v -> %v", u1.CPU, u2.CPU)
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "CPU use after resume", func() bool {
		u, err := n.Usage()
		return err == nil && u.CPU > u2.CPU
	})
	if u2.RSS <= 0 {
		t.Errorf("RSS %d", u2.RSS)
	}
	// The container's threads, as its control group lists them, have
	// their wait for a CPU read (0 or more; -1 is unknown).
	if _, err := os.Stat("/proc/self/schedstat"); err == nil && (u1.Wait < 0 || u2.Wait < u1.Wait) {
		t.Errorf("container's CPU wait %v then %v, want known and not falling", u1.Wait, u2.Wait)
	}

	exited, pid := n.Exited(), n.PID()
	start := time.Now()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Since(start)
	// Gone, a zombie or being reaped (X) is dead; the parent may reap it
	// between any two looks, so "" (no /proc entry) is dead too.
	if st := procState(t, pid); st != "" && st != "Z" && st != "X" {
		t.Fatalf("store process %d alive (state %s) after Kill returned", pid, st)
	}
	select {
	case <-exited:
	case <-time.After(exitTimeout):
		t.Fatal("the engine never reported the kill")
	}
	t.Logf("kill: process dead after %v, engine reported the end after %v", killed, time.Since(start))
	if n.Running() || n.PID() != 0 || n.Err() != nil {
		t.Fatalf("after kill: running %v pid %d err %v", n.Running(), n.PID(), n.Err())
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "second hello", func() bool {
		b, _ := os.ReadFile(n.LogPath())
		return strings.Count(string(b), "hello from n1") == 2
	})
	if ns, _ := os.Readlink("/proc/" + itoa(n.SandboxPID()) + "/ns/net"); ns != nsBefore {
		t.Fatalf("namespace changed across the restart: %s -> %s", nsBefore, ns)
	}
	start = time.Now()
	if err := n.Stop(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("stop took %v: SIGTERM not delivered", d)
	}
	waitFor(t, "bye", logHas(t, n, "bye"))

	// A container that dies on its own is reported.
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "third hello", func() bool {
		b, _ := os.ReadFile(n.LogPath())
		return strings.Count(string(b), "hello from n1") == 3
	})
	if err := exec.Command("kill", "-9", itoa(n.PID())).Run(); err != nil {
		t.Fatal(err)
	}
	<-n.Exited()
	if n.Err() == nil {
		t.Fatal("an unasked-for exit gave no error")
	}
	t.Logf("unexpected exit: %v", n.Err())

	if got := labelled(t, runID); len(got) != 4 {
		t.Errorf("labelled resources while running: %v", got)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := labelled(t, runID); len(got) != 0 {
		t.Errorf("left after Close: %v", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func procState(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return strings.Fields(s[i+1:])[0]
}

func TestRemoveRetries(t *testing.T) {
	t.Parallel()
	// As the engine words the race of a forced remove with the container's
	// own exit (CI, 2026-11-27).
	race := errors.New("Error response from daemon: Could not kill running container c9e7d114209a, cannot remove - Container c9e7d114209a is not running")
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{race, true},
		{fmt.Errorf("remove: %w", cerrdefs.ErrConflict), true},
		{cerrdefs.ErrNotFound, false},
		{errors.New("permission denied"), false},
	} {
		if got := removeRetries(tc.err); got != tc.want {
			t.Errorf("removeRetries(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
