//go:build unix

package etcd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeGo puts a stand-in go command first on PATH. Its build step records
// each call in the returned file, waits a little so that concurrent installs
// overlap, and writes a tiny executable; with fail set, its get step fails.
func fakeGo(t *testing.T, fail bool) (calls string) {
	t.Helper()
	dir := t.TempDir()
	calls = filepath.Join(dir, "calls")
	getExit := "0"
	if fail {
		getExit = "1"
	}
	script := `#!/bin/sh
[ "$GOFLAGS" = "-mod=mod" ] && [ "$CGO_ENABLED" = "0" ] && [ "$GOWORK" = "off" ] || { echo "bad build env" >&2; exit 3; }
case "$1" in
mod) [ "$2" = init ] || exit 4 ;;
get) [ "$2" = -tool ] || exit 4; echo "go: module not served" >&2; exit ` + getExit + ` ;;
build)
	echo "$@" >> "` + calls + `"
	sleep 0.3
	while [ "$1" != -o ]; do shift; done
	printf '#!/bin/sh\n' > "$2" && chmod 755 "$2" ;;
*) exit 4 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return calls
}

func TestInstallBuildsOnceUnderConcurrency(t *testing.T) {
	calls := fakeGo(t, false)
	cache := t.TempDir()
	var progress bytes.Buffer
	var mu sync.Mutex
	var wg sync.WaitGroup
	paths := make([]string, 4)
	errs := make([]error, 4)
	for i := range paths {
		wg.Go(func() {
			var buf bytes.Buffer
			paths[i], errs[i] = Install(context.Background(), InstallOptions{Version: "3.5.17", CacheDir: cache, Progress: &buf})
			mu.Lock()
			progress.Write(buf.Bytes())
			mu.Unlock()
		})
	}
	wg.Wait()
	want := filepath.Join(cache, "etcd", "v3.5.17", "etcd")
	for i := range paths {
		if errs[i] != nil || paths[i] != want {
			t.Errorf("install %d: %q, %v; want %q", i, paths[i], errs[i], want)
		}
	}
	b, _ := os.ReadFile(calls)
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Errorf("go build ran %d times, want once:\n%s", n, b)
	}
	if !strings.Contains(string(b), "go.etcd.io/etcd/server/v3") {
		t.Errorf("go build args %q do not name the server package", b)
	}
	if got := strings.Count(progress.String(), "building etcd v3.5.17 from its Go module"); got != 1 {
		t.Errorf("progress announced %d builds:\n%s", got, progress.String())
	}
	left, _ := filepath.Glob(filepath.Join(cache, "etcd", "v3.5.17", ".build-*"))
	if len(left) > 0 {
		t.Errorf("temporary build output left behind: %v", left)
	}

	// The benchmark shares the version directory but is its own binary.
	bench, err := InstallBenchmark(context.Background(), InstallOptions{Version: "v3.5.17", CacheDir: cache})
	if err != nil || bench != filepath.Join(cache, "etcd", "v3.5.17", "benchmark") {
		t.Errorf("InstallBenchmark = %q, %v", bench, err)
	}
}

func TestInstallReportsFetchFailure(t *testing.T) {
	fakeGo(t, true)
	cache := t.TempDir()
	_, err := Install(context.Background(), InstallOptions{Version: "3.6.16", CacheDir: cache})
	if err == nil || !strings.Contains(err.Error(), "fetch module go.etcd.io/etcd/server/v3@v3.6.16") || !strings.Contains(err.Error(), "module not served") {
		t.Errorf("Install with a failing fetch: %v", err)
	}
	if _, ok := Exists("3.6.16", cache); ok {
		t.Error("a failed build left a binary")
	}
	_, err = Install(context.Background(), InstallOptions{Version: "3.4.35", CacheDir: cache})
	if err == nil || !strings.Contains(err.Error(), "etcd 3.4 predates Go modules") {
		t.Errorf("Install of 3.4 with a failing fetch: %v", err)
	}
}
