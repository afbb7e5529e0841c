package zookeeper

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeJar writes a jar holding the given files.
func writeJar(t *testing.T, path string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, content := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeJava puts an executable named java first on PATH.
func fakeJava(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	java := filepath.Join(bin, "java")
	if err := os.WriteFile(java, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	return java
}

const pom = "META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties"

func TestFind(t *testing.T) {
	java := fakeJava(t)
	root := t.TempDir()

	// Debian: the jar's manifest lists its dependencies; the SLF4J
	// binding sits beside it.
	debian := filepath.Join(root, "debian")
	writeJar(t, filepath.Join(debian, "zookeeper.jar"), map[string]string{
		"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\r\nClass-Path: /usr/share/java/slf4j-api.jar\r\n /usr/share/java/zookeeper-jute.jar\r\n",
		pom:                    "artifactId=zookeeper\nversion=3.8.0\n",
	})
	touch(t, filepath.Join(debian, "slf4j-log4j12.jar"))
	touch(t, filepath.Join(debian, "log4j-1.2.jar"))

	// A release unpacked: lib/ holds every jar, the binding included.
	release := filepath.Join(root, "apache-zookeeper-3.9.2-bin")
	writeJar(t, filepath.Join(release, "lib", "zookeeper-3.9.2.jar"), map[string]string{
		"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\nImplementation-Version: 3.9.2\n",
		pom:                    "version=3.9.2\n",
	})
	touch(t, filepath.Join(release, "lib", "zookeeper-jute-3.9.2.jar"))
	touch(t, filepath.Join(release, "lib", "logback-classic-1.2.13.jar"))

	// 3.4 kept the server jar at the top, its dependencies in lib/; this
	// one has only a versioned file name to go by.
	old := filepath.Join(root, "zookeeper-3.4.14")
	writeJar(t, filepath.Join(old, "zookeeper-3.4.14.jar"), map[string]string{"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\n"})
	touch(t, filepath.Join(old, "lib", "slf4j-log4j12-1.7.25.jar"))

	// Debian's jar without the binding.
	bare := filepath.Join(root, "bare")
	writeJar(t, filepath.Join(bare, "zookeeper.jar"), map[string]string{
		"META-INF/MANIFEST.MF": "Class-Path: slf4j-api.jar\n",
		pom:                    "version=3.8.0\n",
	})
	notZK := filepath.Join(root, "other.jar")
	writeJar(t, notZK, map[string]string{"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\n"})

	sep := string(os.PathListSeparator)
	tests := []struct {
		name, home, version string
		want                Install
		err                 string // substring of the error; "" = success
	}{
		{"debian dir", debian, "3.8.0", Install{java, strings.Join([]string{filepath.Join(debian, "zookeeper.jar"), filepath.Join(debian, "slf4j-log4j12.jar"), filepath.Join(debian, "log4j-1.2.jar")}, sep), "3.8.0"}, ""},
		{"debian jar", filepath.Join(debian, "zookeeper.jar"), "v3.8.0", Install{java, strings.Join([]string{filepath.Join(debian, "zookeeper.jar"), filepath.Join(debian, "slf4j-log4j12.jar"), filepath.Join(debian, "log4j-1.2.jar")}, sep), "3.8.0"}, ""},
		{"release", release, "", Install{java, filepath.Join(release, "lib", "zookeeper-3.9.2.jar") + sep + filepath.Join(release, "lib", "*"), "3.9.2"}, ""},
		{"release jar", filepath.Join(release, "lib", "zookeeper-3.9.2.jar"), "3.9.2", Install{java, filepath.Join(release, "lib", "zookeeper-3.9.2.jar") + sep + filepath.Join(release, "lib", "*"), "3.9.2"}, ""},
		{"3.4 layout", old, "3.4.14", Install{java, strings.Join([]string{filepath.Join(old, "zookeeper-3.4.14.jar"), filepath.Join(old, "*"), filepath.Join(old, "lib", "*")}, sep), "3.4.14"}, ""},
		{"wrong version", release, "3.8.0", Install{}, `is 3.9.2, but the cluster asks for 3.8.0: set the cluster's version to "3.9.2"`},
		{"no binding", bare, "", Install{}, "apt-get install libslf4j-java liblog4j1.2-java"},
		{"missing", filepath.Join(root, "nothing"), "", Install{}, "apt-get install zookeeper"},
		{"empty dir", t.TempDir(), "", Install{}, "no zookeeper-X.Y.Z.jar"},
		{"not a jar", filepath.Join(debian, "slf4j-log4j12.jar"), "", Install{}, "read jar"},
		{"not zookeeper", notZK, "", Install{}, "cannot tell its version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Find(tt.home, tt.version)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("Find(%q, %q) = %+v, %v; want an error mentioning %q", tt.home, tt.version, got, err, tt.err)
			case tt.err == "" && err != nil:
				t.Errorf("Find(%q, %q): %v", tt.home, tt.version, err)
			case tt.err == "" && got != tt.want:
				t.Errorf("Find(%q, %q) =\n  %+v\nwant\n  %+v", tt.home, tt.version, got, tt.want)
			}
		})
	}

	t.Run("ZOOKEEPER_HOME", func(t *testing.T) {
		t.Setenv("ZOOKEEPER_HOME", release)
		if got, err := Find("", "3.9.2"); err != nil || got.Version != "3.9.2" {
			t.Errorf("Find with ZOOKEEPER_HOME=%s: %+v, %v", release, got, err)
		}
		t.Setenv("ZOOKEEPER_HOME", filepath.Join(root, "nothing"))
		if _, err := Find("", ""); err == nil || !strings.Contains(err.Error(), "from ZOOKEEPER_HOME") {
			t.Errorf("Find with a missing ZOOKEEPER_HOME: %v; want it to name ZOOKEEPER_HOME", err)
		}
	})
	t.Run("no java", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		if _, err := Find(debian, ""); err == nil || !strings.Contains(err.Error(), "java on PATH") {
			t.Errorf("Find without java: %v; want it to ask for java on PATH", err)
		}
	})
}
