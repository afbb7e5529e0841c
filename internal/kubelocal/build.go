// Package kubelocal builds and runs a real single-node Kubernetes on this
// machine, for the kubernetes provider's tests and for trying the provider
// without a cluster of one's own. The binaries come from the Go module
// k8s.io/kubernetes; the runtime is a second containerd (Debian's, with
// its CRI plugin) beside the one Docker uses; pods are networked by
// Debian's CNI plugins on a bridge of ours with no route off the pod
// subnet. Everything it changes on the host is recorded before it is
// changed and put back at Down, or by Reap after a killed run.
package kubelocal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/coordlab/scenario/stores/gobuild"
)

// Version is the Kubernetes release built and run.
const Version = "v1.37.2"

// stagingVersion is the version of the staging modules (k8s.io/api, ...)
// published with Version.
const stagingVersion = "v0.37.2"

// Binaries are the commands a node needs; kubectl is not among them.
var Binaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"}

// BinDir is where Build puts the binaries: <cacheDir>/kubernetes/<Version>.
// cacheDir "" means the store cache (gobuild.DefaultCacheDir).
func BinDir(cacheDir string) (string, error) {
	if cacheDir == "" {
		d, err := gobuild.DefaultCacheDir()
		if err != nil {
			return "", err
		}
		cacheDir = d
	}
	return filepath.Join(cacheDir, "kubernetes", Version), nil
}

// Built reports whether every binary is in the cache.
func Built(cacheDir string) (string, bool) {
	dir, err := BinDir(cacheDir)
	if err != nil {
		return "", false
	}
	for _, b := range Binaries {
		if !gobuild.IsExecutable(filepath.Join(dir, b)) {
			return dir, false
		}
	}
	return dir, true
}

// Build compiles the binaries into the cache once; later calls, in this
// process or others, return at once. It takes 10-37 minutes of two cores
// the first time (the Go build cache then holds ~4 GB); progress may be nil.
func Build(ctx context.Context, cacheDir string, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	dir, err := BinDir(cacheDir)
	if err != nil {
		return "", err
	}
	if _, ok := Built(cacheDir); ok {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("build kubernetes: %w", err)
	}
	unlock, err := gobuild.LockFile(ctx, filepath.Join(dir, ".build.lock"), func() {
		fmt.Fprintf(progress, "waiting for another build of kubernetes %s to finish...\n", Version)
	})
	if err != nil {
		return "", fmt.Errorf("build kubernetes: %w", err)
	}
	defer unlock()
	if _, ok := Built(cacheDir); ok {
		return dir, nil
	}
	fmt.Fprintf(progress, "building kubernetes %s from its Go module (10-37 minutes on two cores, once)...\n", Version)
	start := time.Now()
	if err := build(ctx, dir); err != nil {
		return "", fmt.Errorf("build kubernetes %s: %w", Version, err)
	}
	fmt.Fprintf(progress, "built kubernetes %s in %s: %s\n", Version, time.Since(start).Round(time.Second), dir)
	return dir, nil
}

// build copies the module's source next to dir, makes it buildable alone
// and builds every binary into dir. The published module lacks staging/
// (each staging package is a module of its own) and vendor/, so its
// workspace and its replace lines into staging/ cannot work: the replaces
// point at the published staging modules instead.
func build(ctx context.Context, dir string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("needs the go command on PATH: %w", err)
	}
	var info struct{ Dir, Error string }
	out, err := goOutput(ctx, goBin, "", "mod", "download", "-json", "k8s.io/kubernetes@"+Version)
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Dir == "" {
		return fmt.Errorf("fetch module k8s.io/kubernetes@%s: %v %s %s", Version, err, info.Error, bytes.TrimSpace(out))
	}
	// A fixed place (under Build's lock), so that a build cut short and
	// begun again finds its packages in the Go build cache.
	src := filepath.Join(filepath.Dir(dir), ".src-"+Version)
	if err := os.RemoveAll(src); err != nil {
		return err
	}
	defer os.RemoveAll(src)
	if err := os.CopyFS(src, os.DirFS(info.Dir)); err != nil {
		return fmt.Errorf("copy module source: %w", err)
	}
	for _, f := range []string{"go.work", "go.work.sum"} {
		if err := os.Remove(filepath.Join(src, f)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := rewriteStagingReplaces(filepath.Join(src, "go.mod")); err != nil {
		return err
	}
	outDir, err := os.MkdirTemp(dir, ".out-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(outDir)
	ldflags := "-s -w" +
		" -X k8s.io/component-base/version.gitVersion=" + Version +
		" -X k8s.io/component-base/version.gitMajor=1" +
		" -X k8s.io/component-base/version.gitMinor=" + strings.Split(Version, ".")[1] +
		" -X k8s.io/client-go/pkg/version.gitVersion=" + Version
	// Without debug information, as the stores are built (stores/gobuild):
	// goOutput's GOFLAGS replaces any the caller set, so the compiler's
	// half (-dwarf=false) is asked for here; -s -w is the linker's.
	args := []string{"build", "-trimpath", "-gcflags=all=-dwarf=false", "-ldflags", ldflags, "-o", outDir + "/"}
	for _, b := range Binaries {
		args = append(args, "./cmd/"+b)
	}
	if out, err := goOutput(ctx, goBin, src, args...); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, tail(out, 4096))
	}
	for _, b := range Binaries {
		if err := os.Rename(filepath.Join(outDir, b), filepath.Join(dir, b)); err != nil {
			return fmt.Errorf("move %s into the cache: %w", b, err)
		}
	}
	return nil
}

var stagingReplace = regexp.MustCompile(`(?m)^(\s*)(k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+\s*$`)

// rewriteStagingReplaces points every replace into staging/ at the
// published module of the same name.
func rewriteStagingReplaces(goMod string) error {
	b, err := os.ReadFile(goMod)
	if err != nil {
		return err
	}
	n := len(stagingReplace.FindAll(b, -1))
	if n == 0 {
		return fmt.Errorf("%s: no replace into staging/ found; the module's layout changed", goMod)
	}
	b = stagingReplace.ReplaceAll(b, []byte("${1}${2} => ${2} "+stagingVersion))
	return os.WriteFile(goMod, b, 0o644)
}

// goOutput runs the go command in dir with modules resolved freely, no
// workspace and no cgo (static binaries), and returns what it printed.
func goOutput(ctx context.Context, goBin, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "GOWORK=off")
	var out bytes.Buffer
	cmd.Stdout = &out
	if args[0] == "build" {
		cmd.Stderr = &out
	}
	// The go command stops its compilers on an interrupt; a kill would
	// orphan them.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.Bytes(), ctx.Err()
	}
	return out.Bytes(), err
}

// tail keeps the last n bytes of a build log, from a line start.
func tail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	sc := bufio.NewScanner(bytes.NewReader(b[len(b)-n:]))
	sc.Scan() // drop the partial first line
	var out bytes.Buffer
	for sc.Scan() {
		out.Write(sc.Bytes())
		out.WriteByte('\n')
	}
	return out.Bytes()
}
