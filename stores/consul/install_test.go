package consul

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = invalid
	}{
		{"1.20.2", "v1.20.2"},
		{"v1.20.2", "v1.20.2"},
		{"1.21.0-rc1", "v1.21.0-rc1"},
		{"1.0.0", "v1.0.0"},
		{"", ""},
		{"1.20", ""},
		{"v1", ""},
		{"0.9.3", ""},
		{"2.0.0", ""},
		{"1.20.2+ent", ""},
		{"1.20.02", ""},
		{"1.20.2/../../x", ""},
		{"1.20.2 ", ""},
		{"latest", ""},
		{"1.99999.0", ""},
		{"V1.20.2", ""},
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

// A version that parses is safe as a path element and a module query, and
// reads back as itself.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"1.20.2", "v1.20.2", "1.21.0-rc1", "1.2.3-a.b.c", "../1.2.3", "1.2.3\x00", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		out := v.String()
		if strings.ContainsAny(out, "/\\@ \t\n\x00") || strings.Contains(out, "..") || filepath.Base(out) != out {
			t.Fatalf("ParseVersion(%q) = %q: not a safe path element", s, out)
		}
		if out != s && out != "v"+s {
			t.Fatalf("ParseVersion(%q) = %q: not the same version", s, out)
		}
		again, err := ParseVersion(out)
		if err != nil || again != v {
			t.Fatalf("ParseVersion(%q) = %+v, %v; want %+v", out, again, err, v)
		}
	})
}

func TestTarget(t *testing.T) {
	v, err := ParseVersion("1.20.2")
	if err != nil {
		t.Fatal(err)
	}
	got := target(v)
	if got.Store != "consul" || got.Version != "v1.20.2" || got.Name != "consul" ||
		got.Pkg != "github.com/hashicorp/consul" || got.Module != "github.com/hashicorp/consul" || got.ModVersion != "v1.20.2" {
		t.Errorf("target = %+v", got)
	}
	if !slices.Contains(got.Env, "GONOSUMDB=github.com/hashicorp/consul/*,github.com/hashicorp/consul-awsauth") {
		t.Errorf("target env %q lacks the GONOSUMDB Consul's module needs", got.Env)
	}
}

func TestCacheLayout(t *testing.T) {
	cache := t.TempDir()
	if _, ok := Exists("1.20.2", cache); ok {
		t.Fatal("Exists on an empty cache")
	}
	path := filepath.Join(cache, "consul", "v1.20.2", "consul")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, ok := Exists("1.20.2", cache)
	if !ok || got != path {
		t.Errorf("Exists = %q, %v; want %q, true", got, ok, path)
	}
	// A cached binary is returned without building anything, and both
	// spellings of a version share it.
	got, err := Install(context.Background(), InstallOptions{Version: "v1.20.2", CacheDir: cache})
	if err != nil || got != path {
		t.Errorf("Install from cache = %q, %v; want %q", got, err, path)
	}
	if _, ok := Exists("1.20.2/../x", cache); ok {
		t.Error("Exists accepted a malformed version")
	}
}

func TestInstallRejectsBadVersions(t *testing.T) {
	for _, v := range []string{"", "latest", "1.20", "0.9.3", "2.0.0"} {
		_, err := Install(context.Background(), InstallOptions{Version: v, CacheDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "consul version") {
			t.Errorf("Install(%q) error = %v, want a clear error", v, err)
		}
	}
}
