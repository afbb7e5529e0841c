package etcd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = invalid
	}{
		{"3.5.17", "v3.5.17"},
		{"v3.5.17", "v3.5.17"},
		{"3.6.0-rc.3", "v3.6.0-rc.3"},
		{"3.4.35", "v3.4.35"},
		{"", ""},
		{"3.5", ""},
		{"v3", ""},
		{"3.5.17+incompatible", ""},
		{"3.5.017", ""},
		{"3.5.17/../../x", ""},
		{"latest", ""},
		{" 3.5.17", ""},
	}
	for _, tt := range tests {
		v, err := ParseVersion(tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("ParseVersion(%q) = %s, want an error", tt.in, v)
		case tt.want != "" && err != nil:
			t.Errorf("ParseVersion(%q): %v", tt.in, err)
		case tt.want != "" && v.String() != tt.want:
			t.Errorf("ParseVersion(%q) = %s, want %s", tt.in, v, tt.want)
		}
	}
}

func TestToolModules(t *testing.T) {
	tests := []struct {
		tool    tool
		version string
		pkg     string
		err     bool
	}{
		{serverTool, "3.5.17", "go.etcd.io/etcd/server/v3", false},
		{serverTool, "3.6.16", "go.etcd.io/etcd/server/v3", false},
		{serverTool, "3.4.35", "go.etcd.io/etcd", false},
		{serverTool, "3.3.27", "", true},
		{benchmarkTool, "3.5.17", "go.etcd.io/etcd/v3/tools/benchmark", false},
		{benchmarkTool, "3.4.35", "go.etcd.io/etcd/tools/benchmark", false},
		{benchmarkTool, "2.3.8", "", true},
	}
	for _, tt := range tests {
		v, err := ParseVersion(tt.version)
		if err != nil {
			t.Fatal(err)
		}
		pkg, _, err := tt.tool.pkg(v)
		if (err != nil) != tt.err || pkg != tt.pkg {
			t.Errorf("%s %s: got %q, %v; want %q, error %v", tt.tool.name, tt.version, pkg, err, tt.pkg, tt.err)
		}
	}
}

func TestCacheLayout(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	d, err := DefaultCacheDir()
	if err != nil || d != "/xdg/scenario/stores" {
		t.Errorf("DefaultCacheDir() = %q, %v; want /xdg/scenario/stores", d, err)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if d, err := DefaultCacheDir(); err != nil || d != "/home/u/.cache/scenario/stores" {
		t.Errorf("DefaultCacheDir() = %q, %v; want /home/u/.cache/scenario/stores", d, err)
	}

	cache := t.TempDir()
	if _, ok := Exists("3.5.17", cache); ok {
		t.Fatal("Exists on an empty cache")
	}
	path := filepath.Join(cache, "etcd", "v3.5.17", "etcd")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, ok := Exists("3.5.17", cache)
	if !ok || got != path {
		t.Errorf("Exists = %q, %v; want %q, true", got, ok, path)
	}
	// A cached binary is returned without building anything, and both
	// spellings of a version share it.
	got, err = Install(context.Background(), InstallOptions{Version: "v3.5.17", CacheDir: cache})
	if err != nil || got != path {
		t.Errorf("Install from cache = %q, %v; want %q", got, err, path)
	}
	if _, ok := Exists("3.5.17/../x", cache); ok {
		t.Error("Exists accepted a malformed version")
	}
}

func TestInstallRejectsBadVersions(t *testing.T) {
	for _, v := range []string{"", "latest", "3.5", "2.3.8"} {
		_, err := Install(context.Background(), InstallOptions{Version: v, CacheDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "etcd") {
			t.Errorf("Install(%q) error = %v, want a clear error", v, err)
		}
	}
}
