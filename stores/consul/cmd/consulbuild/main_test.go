package main

import (
	"context"
	"strings"
	"testing"
)

// The refusals come before any build starts, so they take no time and
// need no network.
func TestRunRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{name: "two versions", args: []string{"1.20.2", "1.19.0"}, want: "usage: consulbuild [VERSION]"},
		{name: "not a release", args: []string{"latest"}, want: "want a release like"},
		{name: "a v2", args: []string{"2.0.0"}, want: "only 1.x releases"},
		{name: "a path", args: []string{"../../x"}, want: "consul"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}
