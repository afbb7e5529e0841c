package images

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCacheMake(t *testing.T) {
	c := cache{dir: t.TempDir()}
	boom := errors.New("boom")
	calls := 0

	// A failed fill leaves nothing behind, complete or not.
	_, err := c.make("rootfs-x", func(tmp string) error {
		calls++
		if err := os.WriteFile(filepath.Join(tmp, "half"), nil, 0o644); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("make with a failing fill = %v, want boom", err)
	}
	if ents, _ := os.ReadDir(c.dir); len(ents) != 0 {
		t.Fatalf("a failed fill left %v", ents)
	}

	// A killed build leaves its temporary directory and, at worst, a
	// renamed directory without its marker: neither counts as complete.
	if err := os.Mkdir(filepath.Join(c.dir, tmpPrefix+"rootfs-x-123"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(c.dir, "rootfs-x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.complete("rootfs-x"); ok {
		t.Fatal("a directory without its marker counts as complete")
	}
	if err := c.removeStale(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, tmpPrefix+"rootfs-x-123")); !os.IsNotExist(err) {
		t.Errorf("removeStale left the temporary directory: %v", err)
	}

	fill := func(tmp string) error {
		calls++
		if fi, err := os.Stat(tmp); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("fill's directory: %v, %v; want mode 0755 (it becomes the image's /)", fi.Mode(), err)
		}
		return os.WriteFile(filepath.Join(tmp, "done"), nil, 0o644)
	}
	dir, err := c.make("rootfs-x", fill)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "done")); err != nil {
		t.Errorf("made directory lacks fill's file: %v", err)
	}
	if _, ok := c.complete("rootfs-x"); !ok {
		t.Error("made directory is not complete")
	}
	// The second time it is reused.
	if _, err := c.make("rootfs-x", fill); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("fill called %d times, want 2 (one failure, one success)", calls)
	}
}

func TestCacheLock(t *testing.T) {
	c := cache{dir: t.TempDir()}
	unlock, err := c.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// flock excludes other open files, in this process too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.lock(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("second lock = %v, want it to wait until cancelled", err)
	}
	unlock()
	unlock2, err := c.lock(context.Background())
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}

// TestCacheWaitBuild: a check waits for a build holding the lock and
// returns as soon as it lets go; with no build, or no cache yet, at once.
func TestCacheWaitBuild(t *testing.T) {
	c := cache{dir: filepath.Join(t.TempDir(), "images")}
	never := func() { t.Error("waited with no build in progress") }
	if err := c.waitBuild(context.Background(), never); err != nil {
		t.Fatalf("waitBuild on a cache never used = %v, want nil", err)
	}
	unlock, err := c.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- c.waitBuild(context.Background(), func() { close(waited) }) }()
	<-waited
	select {
	case err := <-done:
		t.Fatalf("waitBuild returned %v while the build held the lock", err)
	default:
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("waitBuild after the build let go = %v, want nil", err)
	}
	if err := c.waitBuild(context.Background(), never); err != nil {
		t.Fatalf("waitBuild with no build in progress = %v, want nil", err)
	}

	unlock, err = c.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.waitBuild(ctx, func() {}); !errors.Is(err, context.Canceled) {
		t.Errorf("waitBuild with the lock held and ctx cancelled = %v, want context.Canceled", err)
	}
}

func TestRunFailureCarriesOutput(t *testing.T) {
	err := run(context.Background(), nil, "sh", "-c", "echo first; echo last >&2; exit 3")
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "first\nlast") {
		t.Errorf("run = %v, want the exit status and the output's tail", err)
	}
}

func TestTail(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"", 3, ""},
	}
	for _, tt := range tests {
		if got := string(tail([]byte(tt.in), tt.n)); got != tt.want {
			t.Errorf("tail(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
