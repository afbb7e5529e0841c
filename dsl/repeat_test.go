package dsl_test

import (
	"testing"

	"github.com/coordlab/scenario/dsl"
)

func TestRepeat(t *testing.T) {
	const body = `
cluster "main" {
  store = "etcd"
}

workload "w" {
  mix = { put = 1 }
}

phase "p" {
  duration = "1s"
  load "w" {}
}
`
	tests := []struct {
		name string
		src  string
		want int
	}{
		{name: "not set", src: body, want: 0},
		{name: "five", src: "repeat = 5\n" + body, want: 5},
		{name: "one", src: "repeat = 1\n" + body, want: 1},
		{name: "an expression", src: "repeat = max(2, 3)\n" + body, want: 3},
		{name: "the largest", src: "repeat = 100\n" + body, want: dsl.MaxRepeat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			build := mustLoadSource(t, "repeat.hcl", []byte(tt.src), dsl.VarOptions{})
			if got := build.File.Repeat; got != tt.want {
				t.Errorf("Repeat = %d, want %d", got, tt.want)
			}
		})
	}
}
