package images

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/coordlab/scenario/stores/gobuild"
)

// NewClient connects to the Docker engine the environment names
// (DOCKER_HOST, else the local socket), speaking the engine's API version.
func NewClient() (*client.Client, error) {
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return cli, nil
}

// installDocker is what to do when the engine does not answer.
const installDocker = "install Docker (apt-get install docker.io) and start it, or set DOCKER_HOST"

// DockerAvailable returns nil when a Docker engine answers, else an error
// saying what is missing; tests skip with its message.
func DockerAvailable(ctx context.Context) error {
	cli, err := NewClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	return ping(ctx, cli)
}

func ping(ctx context.Context, cli *client.Client) error {
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Errorf("docker engine at %s: %w; %s", cli.DaemonHost(), err, dockerHint(cli.DaemonHost()))
	}
	return nil
}

// dockerHint says what to do when the engine at host does not answer. The
// client's error drops its cause, so a socket this user may not open is
// told apart by asking the kernel.
func dockerHint(host string) string {
	if p, ok := strings.CutPrefix(host, "unix://"); ok {
		if err := unix.Access(p, unix.R_OK|unix.W_OK); errors.Is(err, unix.EACCES) {
			return "run as root or as a member of the docker group"
		}
	}
	return installDocker
}

// Exists reports whether the engine has an image tagged tag, whoever made
// it: a pulled official image counts.
func Exists(ctx context.Context, cli *client.Client, tag string) (bool, error) {
	_, err := cli.ImageInspect(ctx, tag)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("inspect image %s: %w", tag, err)
}

// Missing returns those of tags the engine has no image for, in order.
func Missing(ctx context.Context, cli *client.Client, tags ...string) ([]string, error) {
	var out []string
	for _, tag := range tags {
		ok, err := Exists(ctx, cli, tag)
		if err != nil {
			return nil, err
		}
		if !ok && !slices.Contains(out, tag) {
			out = append(out, tag)
		}
	}
	return out, nil
}

// NotFoundError says an image is missing and how to get it.
type NotFoundError struct {
	Tag string
}

func (e *NotFoundError) Error() string {
	if e.Tag == BaseImage {
		return fmt.Sprintf(`image %s not found locally: run "scenario images build"`, e.Tag)
	}
	if s, ok := SpecOf(e.Tag); ok {
		return fmt.Sprintf(`image %s not found locally: run "scenario images build %s" (or docker pull %s where a registry is reachable)`, e.Tag, s, e.Tag)
	}
	return fmt.Sprintf("image %s not found locally: docker pull %s where a registry is reachable, or build it; scenario images build makes only %s and the stores' default images", e.Tag, e.Tag, BaseImage)
}

// Check returns nil when the local engine has every one of tags, a
// *NotFoundError naming the first missing one and the command that builds
// it, or an error saying why the engine could not be asked.
func Check(ctx context.Context, tags ...string) error {
	cli, err := NewClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	if err := ping(ctx, cli); err != nil {
		return err
	}
	missing, err := Missing(ctx, cli, tags...)
	if err != nil || len(missing) == 0 {
		return err
	}
	// An images build in progress (scenario images build in another
	// terminal, or CI's, beside the tests) may be about to make what is
	// missing: wait for it and ask again rather than fail now.
	cacheDir, err := gobuild.DefaultCacheDir()
	if err != nil {
		return &NotFoundError{Tag: missing[0]}
	}
	c := cache{dir: filepath.Join(cacheDir, "images")}
	waiting := func() {
		slog.InfoContext(ctx, "image missing: waiting for the images build in progress", "image", missing[0], "cache", c.dir)
	}
	if err := c.waitBuild(ctx, waiting); err != nil {
		return fmt.Errorf("image %s not found locally, and waiting for the images build in progress: %w", missing[0], err)
	}
	if missing, err = Missing(ctx, cli, missing...); err != nil || len(missing) == 0 {
		return err
	}
	return &NotFoundError{Tag: missing[0]}
}

// Image is one image Build made, as the engine lists it.
type Image struct {
	ID      string
	Tags    []string // empty when a later build took the tag
	Store   string   // "debian" for BaseImage
	Version string
	Size    int64 // bytes
	Created time.Time
}

// List returns the images Build made that the engine still has, sorted by
// their first tag.
func List(ctx context.Context, cli *client.Client) ([]Image, error) {
	if err := ping(ctx, cli); err != nil {
		return nil, err
	}
	res, err := cli.ImageList(ctx, client.ImageListOptions{
		Filters: make(client.Filters).Add("label", LabelBuiltBy+"="+BuiltBy),
	})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	out := make([]Image, 0, len(res.Items))
	for _, s := range res.Items {
		tags := slices.DeleteFunc(slices.Clone(s.RepoTags), func(t string) bool { return t == "<none>:<none>" })
		slices.Sort(tags)
		out = append(out, Image{
			ID:      s.ID,
			Tags:    tags,
			Store:   s.Labels[LabelStore],
			Version: s.Labels[LabelVersion],
			Size:    s.Size,
			Created: time.Unix(s.Created, 0),
		})
	}
	slices.SortFunc(out, func(a, b Image) int {
		return compareTags(a.Tags, b.Tags)
	})
	return out, nil
}

// compareTags orders untagged images last.
func compareTags(a, b []string) int {
	switch {
	case len(a) == 0 && len(b) == 0:
		return 0
	case len(a) == 0:
		return 1
	case len(b) == 0:
		return -1
	}
	return cmp.Compare(a[0], b[0])
}
