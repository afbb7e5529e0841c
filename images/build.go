package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/coordlab/scenario/stores"
	"github.com/coordlab/scenario/stores/gobuild"
	"github.com/coordlab/scenario/stores/registry"
	"github.com/coordlab/scenario/stores/zookeeper"
	"github.com/moby/moby/client"
)

// BuildOptions say where Build keeps what it makes and what it redoes.
type BuildOptions struct {
	// CacheDir is the store binary cache, as in `scenario stores`; ""
	// means gobuild.DefaultCacheDir(). Root filesystems are kept under
	// its images/ directory; remove one there to have it made afresh.
	CacheDir string
	// Force imports images again even when their tags exist. Cached root
	// filesystems and store binaries are reused.
	Force bool
	// Progress receives one-line progress messages; it may be nil.
	Progress io.Writer
}

// Result is what Build did for one image.
type Result struct {
	Tag      string
	ID       string
	Size     int64         // bytes, as the engine reports it
	Built    bool          // false: the tag existed and Force was not set
	Duration time.Duration // the import's, when Built
}

// Build makes BaseImage and the images of specs that the engine lacks (all
// of them with opts.Force) and returns what it did for each, base first and
// then in specs' order. It stops at the first failure, returning what was
// there or made before it. Building needs root: debootstrap, chroot and
// the root filesystem's own files (/etc/shadow) need it.
func Build(ctx context.Context, cli *client.Client, specs []Spec, opts BuildOptions) ([]Result, error) {
	if err := ping(ctx, cli); err != nil {
		return nil, err
	}
	todo := []Spec{{}} // the zero Spec is the base
	for _, s := range specs {
		if !slices.Contains(todo, s) {
			todo = append(todo, s)
		}
	}
	b := builder{cli: cli, opts: opts}
	results := make([]Result, len(todo))
	var need []int // indexes into todo
	// present fills results[i] when todo[i]'s image is there and need not
	// be made again, and says whether it did.
	present := func(i int) (bool, error) {
		tag := specTag(todo[i])
		if opts.Force {
			return false, nil
		}
		ok, err := Exists(ctx, cli, tag)
		if err != nil || !ok {
			return false, err
		}
		info, err := cli.ImageInspect(ctx, tag)
		if err != nil {
			return false, fmt.Errorf("inspect image %s: %w", tag, err)
		}
		b.logf("%s exists (--force builds it again)", tag)
		results[i] = Result{Tag: tag, ID: info.ID, Size: info.Size}
		return true, nil
	}
	for i := range todo {
		ok, err := present(i)
		if err != nil {
			return done(results), err
		}
		if !ok {
			need = append(need, i)
		}
	}
	if len(need) == 0 {
		return results, nil
	}
	if os.Geteuid() != 0 {
		return done(results), fmt.Errorf("building %s needs root (debootstrap, chroot, and reading the root filesystem it makes): run it as root", specTag(todo[need[0]]))
	}
	cacheDir := opts.CacheDir
	if cacheDir == "" {
		d, err := gobuild.DefaultCacheDir()
		if err != nil {
			return done(results), err
		}
		cacheDir = d
	}
	b.cache = cache{dir: filepath.Join(cacheDir, "images"), progress: opts.Progress}
	unlock, err := b.cache.lock(ctx)
	if err != nil {
		return done(results), err
	}
	defer unlock()
	if err := b.cache.removeStale(); err != nil {
		return done(results), err
	}
	// A build that held the lock while we waited for it (CI's, beside
	// the tests, or another terminal's) may have made some of them.
	var still []int
	for _, i := range need {
		ok, err := present(i)
		if err != nil {
			return done(results), err
		}
		if !ok {
			still = append(still, i)
		}
	}
	for _, i := range still {
		r, err := b.build(ctx, cacheDir, todo[i])
		if err != nil {
			return done(results), err
		}
		results[i] = r
	}
	return done(results), nil
}

// done is the results of images already there or made, in order.
func done(results []Result) []Result {
	return slices.DeleteFunc(slices.Clone(results), func(r Result) bool { return r.Tag == "" })
}

// specTag is s's image; the zero Spec's is BaseImage.
func specTag(s Spec) string {
	if s == (Spec{}) {
		return BaseImage
	}
	return s.Tag()
}

type builder struct {
	cli   *client.Client
	opts  BuildOptions
	cache cache
}

func (b builder) logf(format string, args ...any) {
	if b.opts.Progress != nil {
		fmt.Fprintf(b.opts.Progress, format+"\n", args...)
	}
}

// build makes s's image from its root filesystem and the files it adds.
func (b builder) build(ctx context.Context, cacheDir string, s Spec) (Result, error) {
	rootfs, err := b.cache.baseRootfs(ctx)
	if err != nil {
		return Result{}, err
	}
	labels := map[string]string{LabelStore: "debian", LabelVersion: suite}
	var extras []entry
	var env []string
	if s.Store != "" {
		d, ok := registry.Lookup(s.Store)
		if !ok {
			return Result{}, fmt.Errorf("build %s: unknown store", s)
		}
		switch d.Image.Layout {
		case stores.ImageGoBinary:
			bin, err := b.binary(ctx, s, func() (string, bool) { return d.Installed(s.Version, cacheDir) }, func() (string, error) {
				return d.Install(ctx, s.Version, cacheDir, b.opts.Progress)
			})
			if err != nil {
				return Result{}, err
			}
			extras = []entry{file(d.Image.Server, bin)}
		case stores.ImageDebianZooKeeper:
			if rootfs, err = b.cache.zookeeperRootfs(ctx, rootfs, s.Version); err != nil {
				return Result{}, err
			}
			java, err := javaDir(rootfs)
			if err != nil {
				return Result{}, err
			}
			// The official image's layout, made of links into Debian's.
			lib := zookeeper.ImageHome(s.Version) + "/lib"
			extras = []entry{{name: lib, dir: true, mode: 0o755}}
			for _, j := range zookeeperJars(s.Version) {
				extras = append(extras, symlink(lib+"/"+j.name, j.target))
			}
			extras = append(extras, symlink(zookeeper.ImageJavaHome, java))
			env = []string{"JAVA_HOME=" + zookeeper.ImageJavaHome}
		default:
			return Result{}, fmt.Errorf("build %s: the store's image cannot be built here", s)
		}
	}
	if s.Store != "" {
		labels = map[string]string{LabelStore: s.Store, LabelVersion: s.Version}
	}
	labels[LabelBuiltBy] = BuiltBy
	return b.importImage(ctx, specTag(s), rootfs, extras, changes(env, labels))
}

// binary returns s's server binary from the store cache, building it when
// it is not there.
func (b builder) binary(ctx context.Context, s Spec, exists func() (string, bool), install func() (string, error)) (string, error) {
	if bin, ok := exists(); ok {
		return bin, nil
	}
	bin, err := install()
	if err != nil {
		return "", fmt.Errorf("build %s server binary (needs go on PATH and the Go module proxy; or run scenario stores install %s where it can): %w", s, s, err)
	}
	return bin, nil
}

// basePath is the image's PATH: Debian's, as the official images have it.
const basePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// changes are the Dockerfile instructions the import applies: an import
// has no config of its own, so PATH, labels and any env come from here.
func changes(env []string, labels map[string]string) []string {
	out := []string{"ENV " + basePath}
	for _, e := range env {
		out = append(out, "ENV "+e)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		// JSON string quoting is what the Dockerfile parser reads.
		v, _ := json.Marshal(labels[k])
		out = append(out, "LABEL "+k+"="+string(v))
	}
	return out
}

// errImportEnded is what the tar writer sees when the import stopped
// reading.
var errImportEnded = errors.New("the import ended before the tar stream did")

// importImage imports rootfs plus extras as tag, streaming the tar as it
// is written, and then removes the image tag named before, if nothing
// else uses it.
func (b builder) importImage(ctx context.Context, tag, rootfs string, extras []entry, changes []string) (Result, error) {
	old, _ := b.cli.ImageInspect(ctx, tag)
	b.logf("importing %s from %s...", tag, rootfs)
	start := time.Now()
	pr, pw := io.Pipe()
	tarErr := make(chan error, 1)
	go func() {
		err := writeTar(pw, rootfs, extras)
		pw.CloseWithError(err)
		tarErr <- err
	}()
	err := readImport(b.cli.ImageImport(ctx, client.ImageImportSource{Source: pr, SourceName: "-"}, tag,
		client.ImageImportOptions{Changes: changes, Message: BuiltBy}))
	// The engine may stop reading early on failure: unblock the writer.
	pr.CloseWithError(errImportEnded)
	if terr := <-tarErr; terr != nil && !errors.Is(terr, errImportEnded) {
		// The tar's own failure is the cause; the engine's is its echo.
		err = terr
	}
	if err != nil {
		return Result{}, fmt.Errorf("import %s: %w", tag, err)
	}
	took := time.Since(start)
	info, err := b.cli.ImageInspect(ctx, tag)
	if err != nil {
		return Result{}, fmt.Errorf("inspect %s after import: %w", tag, err)
	}
	b.logf("imported %s (%s) in %s", tag, HumanSize(info.Size), took.Round(100*time.Millisecond))
	if old.ID != "" && old.ID != info.ID {
		// Rebuilding leaves the previous image untagged; it is hundreds
		// of megabytes. A container still using it keeps it.
		if _, err := b.cli.ImageRemove(ctx, old.ID, client.ImageRemoveOptions{PruneChildren: true}); err == nil {
			b.logf("removed the previous %s (%s)", tag, shortID(old.ID))
		}
	}
	return Result{Tag: tag, ID: info.ID, Size: info.Size, Built: true, Duration: took}, nil
}

// readImport reads the engine's import progress to its end and returns
// the error it reports, if any.
func readImport(body io.ReadCloser, err error) error {
	if err != nil {
		return err
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&msg); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the engine's reply: %w", err)
		}
		switch {
		case msg.ErrorDetail != nil && msg.ErrorDetail.Message != "":
			return errors.New(msg.ErrorDetail.Message)
		case msg.Error != "":
			return errors.New(msg.Error)
		}
	}
}

// HumanSize writes a byte count as docker does: "212 MB", "1.1 GB".
func HumanSize(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "kB", "MB", "GB"} {
		if f < 1000 || u == "GB" {
			if f < 10 && u != "B" {
				return fmt.Sprintf("%.1f %s", f, u)
			}
			return fmt.Sprintf("%.0f %s", f, u)
		}
		f /= 1000
	}
	panic("unreachable")
}

// shortID is an image ID as docker prints it.
func shortID(id string) string {
	if len(id) > 7+12 && id[:7] == "sha256:" {
		return id[7 : 7+12]
	}
	return id
}
