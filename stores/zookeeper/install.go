// Package zookeeper drives Apache ZooKeeper for scenario runs: it finds an
// installed ZooKeeper and Java, writes each node's configuration and
// command line, sends workload operations through go-zookeeper sessions,
// classifies their failures and polls each node's role with the srvr
// four-letter word.
package zookeeper

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Install is a found ZooKeeper installation.
type Install struct {
	Java      string // the java executable
	ClassPath string // -cp for QuorumPeerMain, including one SLF4J binding
	Version   string // e.g. "3.8.0", read from the ZooKeeper jar
}

// DebianJar is where Debian's libzookeeper-java installs the server jar.
const DebianJar = "/usr/share/java/zookeeper.jar"

// Debian's zookeeper.jar names its dependencies in its manifest but no
// SLF4J binding (zkEnv.sh puts only the jar and /etc/zookeeper/conf on the
// class path), so a node started the Debian way logs nothing at all. These
// two, from libslf4j-java and liblog4j1.2-java (both dependencies of
// libzookeeper-java), route SLF4J to log4j 1.2, which Command configures.
// "/usr/share/java/*" would not do: it holds half a dozen SLF4J bindings,
// and SLF4J picks one of them at random.
var debianLogJars = []string{"slf4j-log4j12.jar", "log4j-1.2.jar"}

const installHint = "install it with `apt-get install zookeeper` (Debian), or set ZOOKEEPER_HOME or the cluster's binary to a ZooKeeper installation directory or its zookeeper jar"

// Find locates ZooKeeper and Java. home is a ZooKeeper installation
// directory (an unpacked release, whose jars are in lib/, or a directory
// holding zookeeper.jar) or the path of the ZooKeeper server jar; ""
// means $ZOOKEEPER_HOME, else Debian's layout (DebianJar). When version is
// not "", the installed version must equal it. Errors say what to install
// or set.
func Find(home, version string) (Install, error) {
	from, debian := "the cluster's binary", false
	if home == "" {
		home, from = os.Getenv("ZOOKEEPER_HOME"), "ZOOKEEPER_HOME"
	}
	if home == "" {
		home, from, debian = DebianJar, "Debian's layout", true
	}
	jar, err := findJar(home)
	if err != nil {
		if debian && errors.Is(err, fs.ErrNotExist) {
			return Install{}, fmt.Errorf("zookeeper not found: %s does not exist and ZOOKEEPER_HOME is not set; %s", DebianJar, installHint)
		}
		return Install{}, fmt.Errorf("zookeeper not found at %s (from %s): %w; %s", home, from, err, installHint)
	}
	got, cp, err := inspectJar(jar)
	if err != nil {
		return Install{}, fmt.Errorf("zookeeper at %s: %w", jar, err)
	}
	if version != "" && strings.TrimPrefix(version, "v") != got {
		return Install{}, fmt.Errorf("zookeeper at %s (from %s) is %s, but the cluster asks for %s: set the cluster's version to %q, or point its binary (or ZOOKEEPER_HOME) at a ZooKeeper %s release unpacked from https://archive.apache.org/dist/zookeeper/",
			jar, from, got, version, got, strings.TrimPrefix(version, "v"))
	}
	classPath, err := classPath(home, jar, cp)
	if err != nil {
		return Install{}, fmt.Errorf("zookeeper at %s: %w", jar, err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return Install{}, fmt.Errorf("zookeeper %s needs java on PATH: install a Java runtime (`apt-get install default-jre-headless`; Debian's zookeeper package pulls one in): %w", got, err)
	}
	return Install{Java: java, ClassPath: classPath, Version: got}, nil
}

// serverJarRE matches the server jar of a release (zookeeper-3.8.0.jar),
// not its siblings (zookeeper-jute-3.8.0.jar, zookeeper-3.8.0-tests.jar).
var serverJarRE = regexp.MustCompile(`^zookeeper-[0-9]+\.[0-9]+\.[0-9]+\.jar$`)

// jarVersionRE reads the version from a server jar's path.
var jarVersionRE = regexp.MustCompile(`zookeeper-([0-9]+\.[0-9]+\.[0-9]+)\.jar$`)

// findJar returns the server jar of the installation at home.
func findJar(home string) (string, error) {
	fi, err := os.Stat(home)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		if !strings.HasSuffix(home, ".jar") {
			return "", fmt.Errorf("%s is neither a directory nor a jar", home)
		}
		return home, nil
	}
	// Releases since 3.5 keep the server jar in lib/, 3.4 at the top.
	for _, dir := range []string{filepath.Join(home, "lib"), home} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if serverJarRE.MatchString(e.Name()) {
				return filepath.Join(dir, e.Name()), nil
			}
		}
	}
	if jar := filepath.Join(home, "zookeeper.jar"); fileExists(jar) {
		return jar, nil
	}
	return "", fmt.Errorf("no zookeeper-X.Y.Z.jar in %s or %s, and no zookeeper.jar: %w", filepath.Join(home, "lib"), home, fs.ErrNotExist)
}

// inspectJar reads the release version of a ZooKeeper server jar and
// whether its manifest carries a Class-Path (as Debian's does).
func inspectJar(jar string) (version string, manifestClassPath bool, err error) {
	zr, err := zip.OpenReader(jar)
	if err != nil {
		return "", false, fmt.Errorf("read jar: %w", err)
	}
	defer zr.Close()
	var implVersion string
	for _, f := range zr.File {
		switch f.Name {
		case "META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties":
			// Written by Maven into every release jar, Debian's included
			// (whose manifest has no Implementation-Version).
			if version, err = property(f, "version="); err != nil {
				return "", false, err
			}
		case "META-INF/MANIFEST.MF":
			if implVersion, err = property(f, "Implementation-Version: "); err != nil {
				return "", false, err
			}
			cp, err := property(f, "Class-Path: ")
			if err != nil {
				return "", false, err
			}
			manifestClassPath = cp != ""
		}
	}
	if version == "" {
		version = implVersion
	}
	if version == "" {
		// An unusual build: fall back on the file name of the jar or
		// of what it links to.
		for _, p := range []string{jar, evalSymlinks(jar)} {
			if m := jarVersionRE.FindStringSubmatch(p); m != nil {
				version = m[1]
				break
			}
		}
	}
	if version == "" {
		return "", false, errors.New("cannot tell its version: no pom.properties, no Implementation-Version, and no version in its file name; is it a ZooKeeper server jar?")
	}
	return version, manifestClassPath, nil
}

func evalSymlinks(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// property returns the value of the first line of f starting with prefix.
func property(f *zip.File, prefix string) (string, error) {
	rc, err := f.Open()
	if err != nil {
		return "", fmt.Errorf("read %s: %w", f.Name, err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(io.LimitReader(rc, 1<<20))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimRight(sc.Text(), "\r"), prefix); ok {
			return strings.TrimSpace(v), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", f.Name, err)
	}
	return "", nil
}

// classPath builds the class path of a node. A jar whose manifest lists
// its dependencies (Debian) gets only the SLF4J binding added beside it; a
// release's jar gets every jar of its directory and of home/lib, as
// zkEnv.sh does, which includes the release's own binding (logback since
// 3.8, log4j before).
func classPath(home, jar string, manifestClassPath bool) (string, error) {
	dir := filepath.Dir(jar)
	if manifestClassPath {
		entries := []string{jar}
		var missing []string
		for _, name := range debianLogJars {
			p := filepath.Join(dir, name)
			if !fileExists(p) {
				missing = append(missing, p)
			}
			entries = append(entries, p)
		}
		if len(missing) > 0 {
			return "", fmt.Errorf("the nodes would log nothing: %s missing (`apt-get install libslf4j-java liblog4j1.2-java`)", strings.Join(missing, " and "))
		}
		return strings.Join(entries, string(os.PathListSeparator)), nil
	}
	entries := []string{jar, filepath.Join(dir, "*")}
	if lib := filepath.Join(home, "lib"); lib != dir && isDir(lib) {
		entries = append(entries, filepath.Join(lib, "*"))
	}
	return strings.Join(slices.Compact(entries), string(os.PathListSeparator)), nil
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
