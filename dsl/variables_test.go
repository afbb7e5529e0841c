package dsl_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2/hclparse"
)

const typedVariables = `
variable "nodes" {
  type    = number
  default = 3
}
variable "preload" {
  type    = bool
  default = false
}
variable "store" {
  type    = string
  default = "etcd"
}
variable "clients" {
  default = 10 # untyped: a -var is read as a literal, like the default
}
variable "length" {
  default = "20s"
}
cluster "main" {
  store = var.store
  nodes = var.nodes
}
workload "w" {
  mix     = { put = 1, get = 1 }
  preload = var.preload
  clients = var.clients
}
phase "p" {
  duration = var.length
  load "w" {}
}
`

func TestVariableOverrides(t *testing.T) {
	dir := t.TempDir()
	varFile := filepath.Join(dir, "ci.hcl")
	if err := os.WriteFile(varFile, []byte("nodes = 5\nstore = \"zookeeper\"\nlength = \"1m\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := filepath.Join(dir, "later.hcl")
	if err := os.WriteFile(later, []byte("nodes = 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		Store    string
		Nodes    int
		Preload  bool
		Clients  int
		Duration string
		Vars     map[string]string
	}
	defaults := map[string]string{"nodes": "3", "preload": "false", "store": `"etcd"`, "clients": "10", "length": `"20s"`}
	with := func(kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range defaults {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name string
		opts dsl.VarOptions
		want result
	}{
		{
			name: "defaults",
			want: result{Store: "etcd", Nodes: 3, Preload: false, Clients: 10, Duration: "20s", Vars: defaults},
		},
		{
			name: "number bool and string from -var",
			opts: dsl.VarOptions{Vars: []string{"nodes=5", "preload=true", "store=consul"}},
			want: result{Store: "consul", Nodes: 5, Preload: true, Clients: 10, Duration: "20s",
				Vars: with("nodes", "5", "preload", "true", "store", `"consul"`)},
		},
		{
			name: "untyped variable keeps the default's type",
			opts: dsl.VarOptions{Vars: []string{"clients=40", "length=45s"}},
			want: result{Store: "etcd", Nodes: 3, Clients: 40, Duration: "45s",
				Vars: with("clients", "40", "length", `"45s"`)},
		},
		{
			name: "string variable takes the raw text",
			opts: dsl.VarOptions{Vars: []string{"store=zookeeper"}},
			want: result{Store: "zookeeper", Nodes: 3, Clients: 10, Duration: "20s", Vars: with("store", `"zookeeper"`)},
		},
		{
			name: "the last -var wins",
			opts: dsl.VarOptions{Vars: []string{"nodes=5", "nodes=1"}},
			want: result{Store: "etcd", Nodes: 1, Clients: 10, Duration: "20s", Vars: with("nodes", "1")},
		},
		{
			name: "var file",
			opts: dsl.VarOptions{VarFiles: []string{varFile}},
			want: result{Store: "zookeeper", Nodes: 5, Clients: 10, Duration: "1m0s",
				Vars: with("nodes", "5", "store", `"zookeeper"`, "length", `"1m"`)},
		},
		{
			name: "later var files override earlier ones",
			opts: dsl.VarOptions{VarFiles: []string{varFile, later}},
			want: result{Store: "zookeeper", Nodes: 7, Clients: 10, Duration: "1m0s",
				Vars: with("nodes", "7", "store", `"zookeeper"`, "length", `"1m"`)},
		},
		{
			name: "-var overrides a var file",
			opts: dsl.VarOptions{VarFiles: []string{varFile}, Vars: []string{"nodes=3"}},
			want: result{Store: "zookeeper", Nodes: 3, Clients: 10, Duration: "1m0s",
				Vars: with("store", `"zookeeper"`, "length", `"1m"`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := loadPlan(t, typedVariables, tt.opts)
			got := result{
				Store: p.Clusters[0].Store, Nodes: p.Clusters[0].Nodes, Preload: p.Workloads[0].Preload,
				Clients: p.Workloads[0].Clients, Duration: p.Duration.String(), Vars: p.Variables,
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestVariableErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    dsl.VarOptions
		summary string
		detail  string
		file    string // the subject's file name
	}{
		{name: "no equals sign", opts: dsl.VarOptions{Vars: []string{"nodes"}},
			summary: "Invalid -var option", detail: "write -var name=value", file: "-var nodes"},
		{name: "number variable given a word", opts: dsl.VarOptions{Vars: []string{"nodes=many"}},
			summary: "Invalid value for variable", detail: `variable "nodes" is number`, file: "-var nodes=many"},
		{name: "bool variable given a word", opts: dsl.VarOptions{Vars: []string{"preload=yes"}},
			summary: "Invalid value for variable", detail: "such as true or false", file: "-var preload=yes"},
		{name: "bool variable given a number", opts: dsl.VarOptions{Vars: []string{"preload=5"}},
			summary: "Invalid value for variable", detail: `Variable "preload" must be bool`, file: "-var preload=5"},
		{name: "undeclared", opts: dsl.VarOptions{Vars: []string{"node=5"}},
			summary: "Undeclared variable", detail: `Did you mean "nodes"?`, file: "-var node=5"},
		{name: "missing var file", opts: dsl.VarOptions{VarFiles: []string{"testdata/vars/does-not-exist.hcl"}},
			summary: "Cannot read variable file", detail: "does-not-exist.hcl: no such file or directory", file: "-var-file testdata/vars/does-not-exist.hcl"},
		{name: "var file is a directory", opts: dsl.VarOptions{VarFiles: []string{"testdata/vars"}},
			summary: "Cannot read variable file", detail: "not a regular file (a directory)", file: "-var-file testdata/vars"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := dsl.Load(hclparse.NewParser(), "test.hcl", []byte(typedVariables), tt.opts)
			if len(diags) != 1 {
				t.Fatalf("got %d diagnostics, want 1: %v", len(diags), diags)
			}
			d := diags[0]
			if d.Summary != tt.summary || !strings.Contains(d.Detail, tt.detail) {
				t.Fatalf("got %q / %q, want %q / ...%q...", d.Summary, d.Detail, tt.summary, tt.detail)
			}
			if tt.file != "" && (d.Subject == nil || d.Subject.Filename != tt.file) {
				t.Fatalf("subject = %v, want one in %q", d.Subject, tt.file)
			}
		})
	}
}

const sweepSource = `
variable "heartbeat" {
  default = "100ms"
}
variable "election" {
  default = "1s"
}
variable "nodes" {
  type    = number
  default = 3
}
cluster "main" {
  store = "etcd"
  nodes = var.nodes
  etcd {
    heartbeat_interval = var.heartbeat
    election_timeout   = var.election
  }
}
workload "w" {
  mix = { put = 1 }
}
phase "p" {
  duration = "10s"
  load "w" {}
}
sweep {
  matrix = {
    nodes     = [3, 5]
    heartbeat = ["100ms", "300ms"]
    election  = ["1s", "2s"]
  }
  skip_invalid = true
}
`

func pointList(plans []*plan.Plan) []string {
	var out []string
	for _, p := range plans {
		out = append(out, dsl.Point(p.Point).String())
	}
	return out
}

func TestSweepExpansion(t *testing.T) {
	b := mustLoadSource(t, "sweep.hcl", []byte(sweepSource), dsl.VarOptions{})
	// Source order of the dimensions, the last varying fastest; 300ms with
	// a 1s election is refused by etcd, so skip_invalid leaves it out.
	want := []string{
		`nodes=3, heartbeat="100ms", election="1s"`,
		`nodes=3, heartbeat="100ms", election="2s"`,
		`nodes=3, heartbeat="300ms", election="2s"`,
		`nodes=5, heartbeat="100ms", election="1s"`,
		`nodes=5, heartbeat="100ms", election="2s"`,
		`nodes=5, heartbeat="300ms", election="2s"`,
	}
	if got := pointList(b.Plans); !reflect.DeepEqual(got, want) {
		t.Fatalf("points:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	var skipped []string
	for _, s := range b.Skipped {
		skipped = append(skipped, s.Point.String())
		if !strings.Contains(s.Reason, "Election timeout too short for the heartbeat") {
			t.Errorf("skipped %s for %q", s.Point, s.Reason)
		}
	}
	if want := []string{`nodes=3, heartbeat="300ms", election="1s"`, `nodes=5, heartbeat="300ms", election="1s"`}; !reflect.DeepEqual(skipped, want) {
		t.Fatalf("skipped %q, want %q", skipped, want)
	}
	// Each plan carries its point's values.
	for _, p := range b.Plans {
		c := p.Clusters[0]
		if got := dsl.Point(p.Point).String(); !strings.Contains(got, "nodes="+p.Variables["nodes"]) ||
			!strings.Contains(got, "heartbeat="+p.Variables["heartbeat"]) || c.Etcd.HeartbeatInterval.String() != strings.Trim(p.Variables["heartbeat"], `"`) {
			t.Errorf("plan for %s has variables %v and heartbeat %s", got, p.Variables, c.Etcd.HeartbeatInterval)
		}
	}
}

func TestSweepPinnedByVar(t *testing.T) {
	// A -var or a -var-file setting a swept variable pins it: that
	// dimension leaves the matrix. The same rule for both.
	for name, opts := range map[string]dsl.VarOptions{
		"var":      {Vars: []string{"heartbeat=300ms", "nodes=5"}},
		"var-file": {VarFiles: []string{"testdata/vars/pin-sweep.hcl"}},
	} {
		t.Run(name, func(t *testing.T) {
			b := mustLoadSource(t, "sweep.hcl", []byte(sweepSource), opts)
			want := []string{`election="2s"`}
			if got := pointList(b.Plans); !reflect.DeepEqual(got, want) {
				t.Fatalf("points %q, want %q", got, want)
			}
			if len(b.Skipped) != 1 || b.Skipped[0].Point.String() != `election="1s"` {
				t.Fatalf("skipped %+v, want election=\"1s\" only", b.Skipped)
			}
			p := b.Plans[0]
			if p.Clusters[0].Nodes != 5 || p.Variables["heartbeat"] != `"300ms"` || p.Variables["nodes"] != "5" {
				t.Fatalf("pinned values not applied: nodes %d, variables %v", p.Clusters[0].Nodes, p.Variables)
			}
		})
	}
	// Pinning every dimension leaves one plan with no point.
	b := mustLoadSource(t, "sweep.hcl", []byte(sweepSource), dsl.VarOptions{Vars: []string{"heartbeat=100ms", "nodes=3", "election=1s"}})
	if len(b.Plans) != 1 || len(b.Plans[0].Point) != 0 {
		t.Fatalf("fully pinned sweep: %d plans, point %v", len(b.Plans), b.Plans[0].Point)
	}
}

func TestSweepInvalidPointWithoutSkip(t *testing.T) {
	src := strings.Replace(sweepSource, "skip_invalid = true", "skip_invalid = false", 1)
	build, diags := dsl.Load(hclparse.NewParser(), "sweep.hcl", []byte(src), dsl.VarOptions{})
	if !diags.HasErrors() {
		t.Fatalf("invalid point accepted: %d plans", len(build.Plans))
	}
	if len(diags) != 1 {
		t.Fatalf("want one diagnostic (the first invalid point stops the sweep), got %v", diags)
	}
	d := diags[0]
	if d.Summary != "Election timeout too short for the heartbeat" || !strings.Contains(d.Detail, `(sweep point nodes=3, heartbeat="300ms", election="1s";`) {
		t.Fatalf("got %q: %q", d.Summary, d.Detail)
	}
}

func TestVarOnFileWithoutVariables(t *testing.T) {
	_, diags := dsl.Load(hclparse.NewParser(), "plain.hcl", []byte(minimalScenario), dsl.VarOptions{Vars: []string{"nodes=5"}})
	if len(diags) != 1 || diags[0].Summary != "Undeclared variable" || !strings.Contains(diags[0].Detail, "The file declares no variables") || strings.Contains(diags[0].Detail, "Allowed: .") {
		t.Fatalf("diagnostics %v", diags)
	}
}
