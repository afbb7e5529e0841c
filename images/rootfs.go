package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The base root filesystem.
const (
	suite  = "bookworm"
	mirror = "http://deb.debian.org/debian"
)

// chrootEnv is the environment of the commands that make root
// filesystems: the host's PATH and locale may name things the image lacks,
// and apt must not ask questions.
func chrootEnv() []string {
	return []string{basePath, "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C", "HOME=/root"}
}

// cache is the directory of cached root filesystems, <CacheDir>/images.
// Each lives in its own directory, complete once the marker file beside it
// (<name>.complete) exists: it is made in a temporary directory, renamed
// into place and only then marked, so a build killed at any point leaves
// nothing that looks complete.
type cache struct {
	dir      string
	progress io.Writer
}

const tmpPrefix = ".tmp-"

func (c cache) logf(format string, args ...any) {
	if c.progress != nil {
		fmt.Fprintf(c.progress, format+"\n", args...)
	}
}

// lock excludes other builds sharing the cache until unlock: two would
// debootstrap into the same place and remove each other's temporary
// directories. It waits for ctx.
func (c cache) lock(ctx context.Context) (unlock func(), err error) {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(c.dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flockWait(ctx, f, unix.LOCK_EX, func() { c.logf("waiting for another images build using %s", c.dir) }); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// waitBuild returns once no build holds the cache's lock, at once if none
// does or the cache was never used, or when ctx ends. It calls waiting
// once if it has to wait.
func (c cache) waitBuild(ctx context.Context, waiting func()) error {
	f, err := os.Open(filepath.Join(c.dir, ".lock"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return flockWait(ctx, f, unix.LOCK_SH, waiting)
}

// flockWait takes the lock how (unix.LOCK_EX or LOCK_SH) on f, polling
// until it is free or ctx ends, and calls waiting once if it has to wait.
// Closing f releases it.
func flockWait(ctx context.Context, f *os.File, how int, waiting func()) error {
	said := false
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if !said {
			waiting()
			said = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// removeStale removes what killed builds left. Only call it under lock.
func (c cache) removeStale() error {
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		p := filepath.Join(c.dir, e.Name())
		// A killed zookeeper build may have left /proc mounted inside:
		// unmount it before removing anything, and remove nothing if
		// that fails.
		if err := unmount(filepath.Join(p, "proc")); err != nil {
			return err
		}
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("remove stale %s: %w", p, err)
		}
	}
	return nil
}

// complete returns name's directory and whether it is complete.
func (c cache) complete(name string) (string, bool) {
	dir := filepath.Join(c.dir, name)
	_, err := os.Stat(dir + ".complete")
	return dir, err == nil
}

// make returns the directory name, filling it with fill the first time.
// fill gets an empty temporary directory; its contents become name's when
// it succeeds.
func (c cache) make(name string, fill func(tmp string) error) (string, error) {
	dir, ok := c.complete(name)
	if ok {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(c.dir, tmpPrefix+name+"-")
	if err != nil {
		return "", err
	}
	// MkdirTemp makes 0700; the tree's root becomes the image's "/".
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := fill(tmp); err != nil {
		if rmErr := removeUnmounted(tmp); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
		return "", err
	}
	// An incomplete directory of that name is a build killed between
	// rename and marker.
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	if err := os.WriteFile(dir+".complete", nil, 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

// removeUnmounted removes dir unless something is still mounted at its
// proc: RemoveAll would walk into it.
func removeUnmounted(dir string) error {
	if err := unmount(filepath.Join(dir, "proc")); err != nil {
		return fmt.Errorf("leaving %s in place: %w", dir, err)
	}
	return os.RemoveAll(dir)
}

// baseRootfs returns the debootstrapped bookworm root filesystem, making
// it on first use (about 45 seconds, and about 200 MB).
func (c cache) baseRootfs(ctx context.Context) (string, error) {
	name := "rootfs-" + suite
	if dir, ok := c.complete(name); ok {
		return dir, nil
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", fmt.Errorf("debootstrap %s: debootstrap not found: install debootstrap (apt-get install debootstrap)", suite)
	}
	return c.make(name, func(tmp string) error {
		c.logf("debootstrap %s into %s (about a minute)...", suite, filepath.Join(c.dir, name))
		start := time.Now()
		if err := run(ctx, nil, "debootstrap", "--variant=minbase", suite, tmp, mirror); err != nil {
			return fmt.Errorf("debootstrap %s from %s: %w", suite, mirror, err)
		}
		// sleep is what the runner's sandboxes run; minbase has
		// coreutils, but say so here if that ever changes.
		if _, err := lookInRoot(tmp, "/bin/sleep"); err != nil {
			return fmt.Errorf("debootstrap %s: the root filesystem has no sleep: %w", suite, err)
		}
		c.logf("debootstrap %s: done in %s", suite, time.Since(start).Round(100*time.Millisecond))
		return nil
	})
}

// zookeeperRootfs returns a copy of base with Debian's zookeeper package
// (and OpenJDK) installed, making it on first use: about a minute, 1.1 GB.
func (c cache) zookeeperRootfs(ctx context.Context, base, version string) (string, error) {
	name := "rootfs-" + suite + "-zookeeper-" + version
	return c.make(name, func(tmp string) error {
		c.logf("installing Debian's zookeeper package in a copy of %s (about a minute)...", base)
		start := time.Now()
		if err := run(ctx, nil, "cp", "-a", "--reflink=auto", base+"/.", tmp); err != nil {
			return fmt.Errorf("copy %s: %w", base, err)
		}
		if err := aptInstall(ctx, tmp, "zookeeper"); err != nil {
			return fmt.Errorf("install zookeeper in %s: %w", tmp, err)
		}
		var out bytes.Buffer
		if err := run(ctx, &out, "chroot", tmp, "dpkg-query", "-W", "-f=${Version}", "zookeeper"); err != nil {
			return fmt.Errorf("zookeeper's package version: %w", err)
		}
		if got := out.String(); !strings.HasPrefix(got, version+"-") {
			return fmt.Errorf("Debian's zookeeper package is %s, not %s: build zookeeper@%s instead", got, version, strings.SplitN(got, "-", 2)[0])
		}
		for _, jar := range zookeeperJars(version) {
			if _, err := lookInRoot(tmp, jar.target); err != nil {
				return fmt.Errorf("installed zookeeper: %w", err)
			}
		}
		if _, err := javaDir(tmp); err != nil {
			return err
		}
		c.logf("installed zookeeper %s in %s", out.String(), time.Since(start).Round(100*time.Millisecond))
		return nil
	})
}

// aptInstall installs pkgs in the root filesystem root with the root's own
// apt, chrooted: /proc is mounted for the packages' scripts (Java's needs
// it), the host's resolv.conf lets apt reach the mirror, and policy-rc.d
// keeps package scripts from starting services. All three are undone on
// every path, and apt's lists and downloaded packages are removed because
// the image does not need them.
func aptInstall(ctx context.Context, root string, pkgs ...string) (err error) {
	resolv := filepath.Join(root, "etc", "resolv.conf")
	hostResolv, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return fmt.Errorf("the host's DNS settings: %w", err)
	}
	// The root's own resolv.conf (file or symlink) is put back as it was.
	saved := resolv + ".scenario-saved"
	if err := os.Rename(resolv, saved); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	defer func() {
		if rerr := os.Remove(resolv); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		if rerr := os.Rename(saved, resolv); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}()
	if err := os.WriteFile(resolv, hostResolv, 0o644); err != nil {
		return err
	}

	policy := filepath.Join(root, "usr", "sbin", "policy-rc.d")
	if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.Remove(policy)) }()

	proc := filepath.Join(root, "proc")
	if err := mountProc(proc); err != nil {
		return fmt.Errorf("mount /proc in %s (building the zookeeper image needs root): %w", root, err)
	}
	defer func() { err = errors.Join(err, unmount(proc)) }()

	steps := [][]string{
		{"apt-get", "update", "-q"},
		append([]string{"apt-get", "install", "-y", "-q", "--no-install-recommends"}, pkgs...),
		{"apt-get", "clean"},
	}
	for _, s := range steps {
		if err := run(ctx, nil, "chroot", append([]string{root}, s...)...); err != nil {
			return fmt.Errorf("chroot %s: %w", strings.Join(s, " "), err)
		}
	}
	lists := filepath.Join(root, "var", "lib", "apt", "lists")
	ents, err := os.ReadDir(lists)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(lists, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// zookeeperJar is a symlink the zookeeper image has in its lib directory
// and the Debian file it points at.
type zookeeperJar struct{ name, target string }

// zookeeperJars are the jars zookeeper.ImageClassPath must hold. Debian's
// zookeeper.jar lists its other dependencies in its manifest's Class-Path,
// by absolute path, so these three are enough.
func zookeeperJars(version string) []zookeeperJar {
	return []zookeeperJar{
		{"zookeeper-" + version + ".jar", "/usr/share/java/zookeeper.jar"},
		{"slf4j-log4j12.jar", "/usr/share/java/slf4j-log4j12.jar"},
		{"log4j-1.2.jar", "/usr/share/java/log4j-1.2.jar"},
	}
}

// javaDir is the in-image path of the JDK Debian installed in root,
// such as /usr/lib/jvm/java-17-openjdk-amd64: the directory name carries
// the architecture, so it is looked up rather than assumed.
func javaDir(root string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(root, "usr", "lib", "jvm", "java-*-openjdk-*"))
	if err != nil {
		return "", err
	}
	for _, m := range matches {
		// Debian adds java-1.17.0-openjdk-amd64 as a link to
		// java-17-openjdk-amd64: link to the directory itself.
		if fi, err := os.Lstat(m); err != nil || !fi.IsDir() {
			continue
		}
		dir := "/" + filepath.ToSlash(strings.TrimPrefix(m, root+string(filepath.Separator)))
		if fi, err := lookInRoot(root, dir+"/bin/java"); err == nil && fi.Mode().IsRegular() {
			return dir, nil
		}
	}
	return "", fmt.Errorf("no OpenJDK under %s/usr/lib/jvm", root)
}

// lookInRoot stats the in-image path p of root, following symlinks as the
// image would.
func lookInRoot(root, p string) (fs.FileInfo, error) {
	r, err := resolveInRoot(root, p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(r)))
	if err != nil {
		return nil, fmt.Errorf("%s: not in the root filesystem %s", p, root)
	}
	return fi, nil
}

// run runs name with args in its own process group, so that cancelling
// ctx kills what it started too (debootstrap and apt-get run dpkg). Output
// goes to out when given; on failure the error carries its last lines.
func run(ctx context.Context, out io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = chrootEnv()
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if out != nil {
		cmd.Stdout = out
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s: %w\n%s", name, err, tail(buf.Bytes(), 15))
	}
	return nil
}

// tail is the last n lines of b.
func tail(b []byte, n int) []byte {
	b = bytes.TrimRight(b, "\n")
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}
