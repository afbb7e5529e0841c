package images

import (
	"cmp"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/moby/moby/client"
)

// AgentRepo is the image of the kubernetes provider's in-pod agent: this
// program alone, static, FROM scratch. Its default command is the pause
// process of a pod sandbox, so a local cluster uses it as its pause image.
const AgentRepo = "scenario/agent"

// AgentImage is the agent image of this program's version.
func AgentImage(version string) string { return AgentRepo + ":" + version }

// StaticError says a binary cannot go into an image FROM scratch.
type StaticError struct{ Path string }

func (e *StaticError) Error() string {
	return fmt.Sprintf("%s is dynamically linked, so it cannot run in the agent image (FROM scratch): build it with CGO_ENABLED=0 (make build does)", e.Path)
}

// Static reports whether the ELF executable at path needs no dynamic
// loader.
func Static(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

// BuildAgent imports binary, which must be static, as the agent image tag.
func BuildAgent(ctx context.Context, cli *client.Client, tag, binary string, progress io.Writer) (Result, error) {
	ok, err := Static(binary)
	if err != nil {
		return Result{}, fmt.Errorf("agent image: %w", err)
	}
	if !ok {
		return Result{}, &StaticError{Path: binary}
	}
	empty, err := os.MkdirTemp("", "scenario-agent-root-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(empty)
	b := builder{cli: cli, opts: BuildOptions{Progress: progress}}
	_, version, _ := strings.Cut(tag, ":")
	chg := append(changes(nil, map[string]string{LabelBuiltBy: BuiltBy, LabelStore: "agent", LabelVersion: cmp.Or(version, "latest")}),
		`ENTRYPOINT ["/scenario"]`, `CMD ["agent", "pause"]`)
	return b.importImage(ctx, tag, empty, []entry{{name: "/tmp", dir: true, mode: 0o1777}, file("/scenario", binary)}, chg)
}
