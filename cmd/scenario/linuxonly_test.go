package main

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// The stand-in for a command a non-Linux build cannot run takes whatever it
// is given and fails as infrastructure, saying why and what works instead.
// The stand-ins themselves build only off Linux or with the tag
// scenario_norun (run_norun.go, run by TestWithoutRunner); make vet builds
// the command for macOS.
func TestLinuxOnlyCommand(t *testing.T) {
	for _, args := range [][]string{nil, {"--state-dir", "/x", "--kubernetes"}, {"run", "sock"}} {
		cmd := linuxOnlyCommand("reap", "Remove what killed runs left behind", false)
		cmd.SetArgs(args)
		err := cmd.Execute()
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitInfra {
			t.Fatalf("args %q: got %v, want an exit %d", args, err, exitInfra)
		}
		for _, want := range []string{"scenario reap needs Linux", runtime.GOOS + "/" + runtime.GOARCH, "validate, plan, fmt, compare"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("args %q: %q does not say %q", args, err, want)
			}
		}
	}
	if s := linuxOnlyCommand("reap", "Remove", false).Short; !strings.HasSuffix(s, "(Linux only)") {
		t.Errorf("short help %q does not say Linux only", s)
	}
}
