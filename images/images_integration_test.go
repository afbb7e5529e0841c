//go:build linux

package images

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
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
