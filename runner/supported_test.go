package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/plan"
)

func TestCheckSupported(t *testing.T) {
	const cluster = `
cluster "main" {
  store = "etcd"
  nodes = 3
}
workload "w" {
  mix = { put = 1 }
}
`
	noRoot := func() error { return errors.New("network shaping and partitions need root") }
	ok := func() error { return nil }
	tests := []struct {
		name  string
		src   string
		avail func() error
		want  []string // substrings of the refusal; none: accepted
	}{
		{name: "loopback needs nothing", src: cluster + `phase "p" {
  duration = "1s"
  load "w" {}
}`, avail: noRoot},
		{name: "shaping without root is refused, saying why", src: cluster + `network {
  default {
    rtt = "10ms"
  }
}
phase "p" {
  duration = "1s"
  load "w" {}
}`, avail: noRoot, want: []string{"network shaping and partitions", "need root"}},
		{name: "a partition without root is refused", src: cluster + `phase "p" {
  duration = "2s"
  load "w" {}
  fault "partition" {
    target = "leader"
  }
}`, avail: noRoot, want: []string{"need root"}},
		{name: "a disk throttle on a kubernetes cluster is refused", src: strings.Replace(cluster, `nodes = 3`, `nodes = 3
  provider = "kubernetes"`, 1) + `phase "p" {
  duration = "2s"
  load "w" {}
  fault "disk" {
    target = "leader"
    throttle = "1MiB/s"
  }
}`, avail: ok, want: []string{"disk throttle with the kubernetes provider"}},
		{name: "competing writers on a kubernetes cluster run", src: strings.Replace(cluster, `nodes = 3`, `nodes = 3
  provider = "kubernetes"`, 1) + `phase "p" {
  duration = "2s"
  load "w" {}
  fault "disk" {
    target = "leader"
  }
}`, avail: ok},
		{name: "shaping with root runs", src: cluster + `network {
  default {
    rtt = "10ms"
  }
}
phase "p" {
  duration = "1s"
  load "w" {}
}`, avail: ok},
		{name: "zookeeper and consul run", src: strings.Replace(cluster, `"etcd"`, `"consul"`, 1) + `phase "p" {
  duration = "1s"
  load "w" {}
}`, avail: ok},
		{name: "two clusters in one scenario run", src: `cluster "main" {
  store = "etcd"
  nodes = 3
}
workload "w" {
  cluster = cluster.main
  mix     = { put = 1 }
}
cluster "zk" {
  store = "zookeeper"
  nodes = 3
}
workload "z" {
  cluster = cluster.zk
  mix     = { get = 1 }
}
phase "p" {
  duration = "1s"
  load "w" {}
  load "z" {}
}`, avail: ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			build, diags := dsl.Load(hclparse.NewParser(), "t.hcl", []byte(tt.src), dsl.VarOptions{})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			err := checkSupported(build.Plans[0], tt.avail)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ue *UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("got %v, want an UnsupportedError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q lacks %q", err, w)
				}
			}
		})
	}
}

// Every kind the plan knows is one the runner injects, and no other.
func TestInjectorsCoverFaultKinds(t *testing.T) {
	inj := injectors()
	for _, k := range plan.FaultKinds() {
		if _, ok := inj[k.Name]; !ok {
			t.Errorf("no injector for fault kind %q", k.Name)
		}
	}
	if len(inj) != len(plan.FaultKinds()) {
		t.Errorf("%d injectors for %d fault kinds", len(inj), len(plan.FaultKinds()))
	}
}
