//go:build unix

package consul

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Install hands gobuild the module, package and environment Consul needs.
// A stand-in go command first on PATH checks the environment of every step
// and records the build's arguments.
func TestInstallBuildsWithConsulEnv(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	script := `#!/bin/sh
[ "$GONOSUMDB" = "github.com/hashicorp/consul/*,github.com/hashicorp/consul-awsauth" ] || { echo "GONOSUMDB=$GONOSUMDB" >&2; exit 3; }
[ "$GOFLAGS" = "-mod=mod" ] && [ "$CGO_ENABLED" = "0" ] || { echo "bad build env" >&2; exit 3; }
case "$1" in
mod) [ "$2" = init ] || exit 4 ;;
get) [ "$2" = -tool ] && [ "$3" = github.com/hashicorp/consul@v1.20.2 ] || { echo "get $*" >&2; exit 4; } ;;
build)
	echo "$@" >> "` + calls + `"
	while [ "$1" != -o ]; do shift; done
	printf '#!/bin/sh\n' > "$2" && chmod 755 "$2" ;;
*) exit 4 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	cache := t.TempDir()
	got, err := Install(context.Background(), InstallOptions{Version: "1.20.2", CacheDir: cache})
	want := filepath.Join(cache, "consul", "v1.20.2", "consul")
	if err != nil || got != want {
		t.Fatalf("Install = %q, %v; want %q", got, err, want)
	}
	b, _ := os.ReadFile(calls)
	if !strings.HasSuffix(strings.TrimSpace(string(b)), " github.com/hashicorp/consul") {
		t.Errorf("go build %q does not build the agent package", b)
	}
	if p, ok := Exists("v1.20.2", cache); !ok || p != want {
		t.Errorf("Exists after Install = %q, %v", p, ok)
	}
}
