package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/coordlab/scenario/internal/safefile"
)

func TestWriteIsReadableLikeEveryOutput(t *testing.T) {
	// The usual umask; with it, 0644 like report.html and the logs.
	defer syscall.Umask(syscall.Umask(0o022))
	dir := t.TempDir()
	if err := Write(dir, sample()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode().Perm(), os.FileMode(0o644); got != want {
		t.Fatalf("results.json mode %v, want %v", got, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("left %d entries in the directory, want results.json only", len(entries))
	}
}

func TestReadRefuses(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"null run", `{"schema_version": 1, "run": null, "phases": []}`, `"run" is missing or null`},
		{"no phases", `{"schema_version": 1, "run": {"name": "run"}}`, `"phases" is missing or null`},
		{"negative schema", `{"schema_version": -1, "run": {}, "phases": []}`, "schema_version -1 is not a version"},
		{"no schema", `{"run": {}, "phases": []}`, "no schema_version"},
		{"newer schema", `{"schema_version": 99, "run": {}, "phases": []}`, "newer than this build understands"},
		{"not JSON", `<html>`, "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Read(path); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := Read("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Read(/dev/zero): %v", err)
	}
}

func TestGuardOutput(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, sample()); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, FileName)
	copied := filepath.Join(dir, "baseline.json")
	b, _ := os.ReadFile(in)
	os.WriteFile(copied, b, 0o644)
	oldReport := filepath.Join(dir, "report.html")
	os.WriteFile(oldReport, []byte("<html>"), 0o644)
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, out string
		ok        bool
	}{
		{"the input itself", in, false},
		{"the input by another spelling", filepath.Join(dir, ".", "..", filepath.Base(dir), FileName), false},
		{"a link to the input", link, false},
		{"another results file", copied, false},
		{"a directory", dir, false},
		{"a device", "/dev/null", false},
		{"an old report", oldReport, true},
		{"a new file", filepath.Join(dir, "new.html"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := GuardOutput(tt.out, in)
			if tt.ok != (err == nil) {
				t.Fatalf("GuardOutput(%s) = %v", tt.out, err)
			}
			if err != nil && !errors.Is(err, safefile.ErrOverwrite) && !strings.Contains(err.Error(), "not a file to write") {
				t.Fatalf("unexpected error %v", err)
			}
		})
	}
}
