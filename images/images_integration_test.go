//go:build linux

package images

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordlab/scenario/stores/registry"
	"github.com/coordlab/scenario/stores/zookeeper"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// testLabel marks the containers this test makes, so a killed run's
// leftovers can be found: docker ps -a --filter label=org.coordlab.scenario.test=images
const testLabel = "org.coordlab.scenario.test"

// logWriter turns Build's progress lines into test log lines.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestBuildAndRun builds the default images where they are missing (in the
// default cache, so CI's earlier `scenario images build` makes this quick)
// and runs each image's server to ask its version, as the runner will run
// it: by path, with entrypoint and command set.
func TestBuildAndRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	if err := DockerAvailable(ctx); err != nil {
		t.Skipf("no Docker engine: %v", err)
	}
	cli, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	specs := DefaultSpecs()
	tags := []string{BaseImage}
	for _, s := range specs {
		tags = append(tags, s.Tag())
	}
	missing, err := Missing(ctx, cli, tags...)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		if os.Geteuid() != 0 {
			t.Skipf("%s missing, and building images needs root", strings.Join(missing, ", "))
		}
		if _, err := exec.LookPath("debootstrap"); err != nil {
			t.Skipf("%s missing, and building them needs debootstrap (apt-get install debootstrap)", strings.Join(missing, ", "))
		}
		t.Logf("building %s", strings.Join(missing, ", "))
	}
	results, err := Build(ctx, cli, specs, BuildOptions{Progress: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(tags) {
		t.Fatalf("Build returned %d results, want %d (base and three stores): %+v", len(results), len(tags), results)
	}
	for i, r := range results {
		if r.Tag != tags[i] || r.ID == "" || r.Size == 0 {
			t.Errorf("result %d = %+v, want tag %s with an ID and a size", i, r, tags[i])
		}
	}

	zk := Spec{Store: "zookeeper", Version: zookeeper.DebianVersion}
	tests := []struct {
		name, image string
		cmd         []string
		want        string
	}{
		{"base sleeps", BaseImage, []string{"sleep", "0"}, ""},
		{"etcd", Default("etcd", ""), []string{imageServer("etcd"), "--version"}, "etcd Version: 3.5.17"},
		{"consul", Default("consul", ""), []string{imageServer("consul"), "version"}, "Consul v1.20.2"},
		{"zookeeper", zk.Tag(), []string{zookeeper.ImageJavaHome + "/bin/java", "-cp", zookeeper.ImageClassPath(zk.Version), "org.apache.zookeeper.version.VersionInfoMain"},
			"Apache ZooKeeper, version 3.8.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := cli.ImageInspect(ctx, tt.image)
			if err != nil {
				t.Fatal(err)
			}
			if got := info.Config.Labels[LabelBuiltBy]; got != BuiltBy {
				if tt.image == BaseImage {
					t.Errorf("%s: label %s = %q, want %q", tt.image, LabelBuiltBy, got, BuiltBy)
				}
				// A pulled official image is as good: say so and go on.
				t.Logf("%s was not built by scenario", tt.image)
			}
			out, code, err := runOnce(ctx, cli, tt.image, tt.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if code != 0 || !strings.Contains(out, tt.want) {
				t.Errorf("%s: exit %d, output:\n%s\nwant exit 0 and %q", strings.Join(tt.cmd, " "), code, out, tt.want)
			}
		})
	}

	t.Run("list", func(t *testing.T) {
		list, err := List(ctx, cli)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range list {
			if im.Store == "" || im.Version == "" {
				t.Errorf("listed %+v without store and version labels", im)
			}
		}
	})
	t.Run("check", func(t *testing.T) {
		if err := Check(ctx, tags...); err != nil {
			t.Errorf("Check(%q) = %v", tags, err)
		}
		const absent = "gcr.io/etcd-development/etcd:v3.4.99"
		err := Check(ctx, BaseImage, absent)
		want := (&NotFoundError{Tag: absent}).Error()
		if err == nil || err.Error() != want {
			t.Errorf("Check with an absent image = %v, want %s", err, want)
		}
	})
}

// runOnce runs cmd in a new container of image, without a network, and
// returns its output and exit code. The container is removed whatever
// happens.
func runOnce(ctx context.Context, cli *client.Client, image string, cmd []string) (string, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Image: image,
		Config: &container.Config{
			Entrypoint: cmd[:1],
			Cmd:        cmd[1:],
			Labels:     map[string]string{testLabel: "images"},
		},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		return "", 0, fmt.Errorf("create a container of %s: %w", image, err)
	}
	defer func() {
		// The test's context may be done: removal gets its own.
		rmCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = cli.ContainerRemove(rmCtx, created.ID, client.ContainerRemoveOptions{Force: true})
	}()
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return "", 0, fmt.Errorf("start %s: %w", image, err)
	}
	wait := cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	var code int64
	select {
	case res := <-wait.Result:
		if res.Error != nil {
			return "", 0, fmt.Errorf("wait for %s: %s", image, res.Error.Message)
		}
		code = res.StatusCode
	case err := <-wait.Error:
		return "", 0, fmt.Errorf("wait for %s: %w", image, err)
	}
	logs, err := cli.ContainerLogs(ctx, created.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return "", 0, fmt.Errorf("logs of %s: %w", image, err)
	}
	defer logs.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, logs); err != nil {
		return "", 0, fmt.Errorf("logs of %s: %w", image, err)
	}
	return out.String(), code, nil
}

// imageServer is where store's server is inside its image.
func imageServer(store string) string {
	d, _ := registry.Lookup(store)
	return d.Image.Server
}

// TestBuildWaitsThenReuses is CI's case: `scenario images build` runs beside
// the tests, and a second build (a test's, or another terminal's) that finds
// an image missing waits for the first's lock. Once it has the lock it must
// take what the first made rather than make it again.
func TestBuildWaitsThenReuses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := DockerAvailable(ctx); err != nil {
		t.Skipf("no Docker engine: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("Build refuses to start without root")
	}
	cli, err := NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if missing, err := Missing(ctx, cli, BaseImage); err != nil || len(missing) > 0 {
		t.Skipf("needs the base image (scenario images build): missing %v, %v", missing, err)
	}

	// A version no one builds: if Build went on to make it, it would fail
	// (no such etcd release), not quietly succeed.
	spec := Spec{Store: "etcd", Version: "v3.4.98"}
	tag := spec.Tag()
	if ok, err := Exists(ctx, cli, tag); err != nil || ok {
		t.Fatalf("%s exists before the test (%v): remove it", tag, err)
	}
	dir := t.TempDir()
	first := cache{dir: filepath.Join(dir, "images")}
	unlock, err := first.lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	unlock = sync.OnceFunc(unlock)
	defer unlock()

	waiting := make(chan struct{})
	progress := progressFunc(func(line string) {
		t.Log(line)
		if strings.HasPrefix(line, "waiting for another images build") {
			close(waiting)
		}
	})
	type outcome struct {
		results []Result
		err     error
	}
	second := make(chan outcome, 1)
	go func() {
		r, err := Build(ctx, cli, []Spec{spec}, BuildOptions{CacheDir: dir, Progress: progress})
		second <- outcome{r, err}
	}()
	select {
	case <-waiting:
	case o := <-second:
		t.Fatalf("Build returned %+v, %v without waiting for the lock", o.results, o.err)
	case <-ctx.Done():
		t.Fatal("Build never waited for the lock")
	}

	// The first build makes the image (here: a tag on the base), then
	// lets go.
	if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: BaseImage, Target: tag}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{}); err != nil {
			t.Errorf("remove %s: %v", tag, err)
		}
	}()
	unlock()

	var o outcome
	select {
	case o = <-second:
	case <-ctx.Done():
		t.Fatal("Build did not return after the lock was released")
	}
	if o.err != nil {
		t.Fatalf("Build after waiting: %v (it should have found %s made)", o.err, tag)
	}
	if len(o.results) != 2 || o.results[1].Tag != tag || o.results[1].Built {
		t.Errorf("results %+v, want the base and %s, neither built", o.results, tag)
	}
}

// progressFunc calls f with each line Build reports.
type progressFunc func(line string)

func (f progressFunc) Write(p []byte) (int, error) {
	for line := range strings.Lines(string(p)) {
		f(strings.TrimRight(line, "\n"))
	}
	return len(p), nil
}
