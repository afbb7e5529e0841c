package images

import (
	"slices"
	"strings"
	"testing"
)

func TestDefault(t *testing.T) {
	tests := []struct {
		name, store, version, want string
	}{
		{"etcd adds v", "etcd", "3.5.17", "gcr.io/etcd-development/etcd:v3.5.17"},
		{"etcd keeps one v", "etcd", "v3.6.16", "gcr.io/etcd-development/etcd:v3.6.16"},
		{"etcd default", "etcd", "", "gcr.io/etcd-development/etcd:v3.5.17"},
		{"consul", "consul", "1.20.2", "hashicorp/consul:1.20.2"},
		{"consul drops v", "consul", "v1.21.0-rc1", "hashicorp/consul:1.21.0-rc1"},
		{"consul default", "consul", "", "hashicorp/consul:1.20.2"},
		{"zookeeper", "zookeeper", "3.8.0", "zookeeper:3.8.0"},
		{"zookeeper default", "zookeeper", "", "zookeeper:3.8.0"},
		{"unknown store", "redis", "7.0.0", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Default(tt.store, tt.version); got != tt.want {
				t.Errorf("Default(%q, %q) = %q, want %q", tt.store, tt.version, got, tt.want)
			}
		})
	}
}

func TestParseSpec(t *testing.T) {
	tests := []struct {
		name, arg string
		want      Spec
		wantErr   string // a substring of the error; "" for none
	}{
		{name: "store alone", arg: "etcd", want: Spec{"etcd", "3.5.17"}},
		{name: "empty version", arg: "consul@", want: Spec{"consul", "1.20.2"}},
		{name: "version", arg: "etcd@3.6.16", want: Spec{"etcd", "3.6.16"}},
		{name: "v prefix dropped", arg: "etcd@v3.6.16", want: Spec{"etcd", "3.6.16"}},
		{name: "pre-release", arg: "consul@1.21.0-rc1", want: Spec{"consul", "1.21.0-rc1"}},
		{name: "zookeeper default", arg: "zookeeper", want: Spec{"zookeeper", "3.8.0"}},
		{name: "zookeeper debian's", arg: "zookeeper@v3.8.0", want: Spec{"zookeeper", "3.8.0"}},
		{name: "unknown store", arg: "redis@7.0.0", wantErr: `"redis@7.0.0": unknown store; write one of etcd, zookeeper, consul`},
		{name: "empty", arg: "", wantErr: "unknown store"},
		{name: "store case matters", arg: "ETCD", wantErr: "unknown store"},
		{name: "bad version", arg: "etcd@latest", wantErr: `etcd version "latest": want a release like 3.5.17`},
		{name: "two parts", arg: "etcd@3.5", wantErr: "want a release like 3.5.17"},
		{name: "build metadata", arg: "consul@1.20.2+ent", wantErr: "want a release like 1.20.2"},
		{name: "old etcd", arg: "etcd@3.3.27", wantErr: "from 3.4 on"},
		{name: "consul 2", arg: "consul@2.0.0", wantErr: "only 1.x"},
		{name: "other zookeeper", arg: "zookeeper@3.9.2", wantErr: "only 3.8.0 can be built here, from Debian bookworm's zookeeper package; where a registry is reachable, docker pull zookeeper:3.9.2"},
		{name: "bad zookeeper", arg: "zookeeper@x", wantErr: `zookeeper version "x": want a release like 3.8.0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSpec(tt.arg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseSpec(%q) = %v, %v; want an error containing %q", tt.arg, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseSpec(%q) = %v, %v; want %v", tt.arg, got, err, tt.want)
			}
		})
	}
}

func TestDefaultSpecs(t *testing.T) {
	var tags []string
	for _, s := range DefaultSpecs() {
		tags = append(tags, s.Tag())
	}
	want := []string{"gcr.io/etcd-development/etcd:v3.5.17", "zookeeper:3.8.0", "hashicorp/consul:1.20.2"}
	if !slices.Equal(tags, want) {
		t.Errorf("default tags = %q, want %q", tags, want)
	}
}

func TestSpecOf(t *testing.T) {
	tests := []struct {
		name, tag string
		want      Spec
		ok        bool
	}{
		{"etcd", "gcr.io/etcd-development/etcd:v3.6.16", Spec{"etcd", "3.6.16"}, true},
		{"consul", "hashicorp/consul:1.20.2", Spec{"consul", "1.20.2"}, true},
		{"zookeeper", "zookeeper:3.8.0", Spec{"zookeeper", "3.8.0"}, true},
		{"etcd without v", "gcr.io/etcd-development/etcd:3.5.17", Spec{}, false},
		{"consul with v", "hashicorp/consul:v1.20.2", Spec{}, false},
		{"zookeeper not debian's", "zookeeper:3.9.2", Spec{}, false},
		{"other repo", "quay.io/coreos/etcd:v3.5.17", Spec{}, false},
		{"base", BaseImage, Spec{}, false},
		{"no tag", "zookeeper", Spec{}, false},
		{"registry port", "localhost:5000/zookeeper", Spec{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := SpecOf(tt.tag)
			if got != tt.want || ok != tt.ok {
				t.Errorf("SpecOf(%q) = %v, %v; want %v, %v", tt.tag, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestNotFoundError(t *testing.T) {
	tests := []struct{ name, tag, want string }{
		{"store image", "gcr.io/etcd-development/etcd:v3.5.17",
			`image gcr.io/etcd-development/etcd:v3.5.17 not found locally: run "scenario images build etcd@3.5.17" (or docker pull gcr.io/etcd-development/etcd:v3.5.17 where a registry is reachable)`},
		{"base", BaseImage, `image scenario/debian:bookworm not found locally: run "scenario images build"`},
		{"foreign", "redis:7", "image redis:7 not found locally: docker pull redis:7 where a registry is reachable, or build it; scenario images build makes only scenario/debian:bookworm and the stores' default images"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&NotFoundError{Tag: tt.tag}).Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestChanges(t *testing.T) {
	got := changes([]string{"JAVA_HOME=/opt/java/openjdk"}, map[string]string{
		LabelVersion: "3.8.0", LabelStore: "zookeeper", LabelBuiltBy: BuiltBy,
	})
	want := []string{
		"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"ENV JAVA_HOME=/opt/java/openjdk",
		`LABEL org.coordlab.scenario.built-by="scenario images build"`,
		`LABEL org.coordlab.scenario.store="zookeeper"`,
		`LABEL org.coordlab.scenario.version="3.8.0"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes =\n%q\nwant\n%q", got, want)
	}
}

func TestHumanSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {999, "999 B"}, {1000, "1.0 kB"}, {212_345_678, "212 MB"},
		{1_100_000_000, "1.1 GB"}, {12_000_000_000_000, "12000 GB"},
	}
	for _, tt := range tests {
		if got := HumanSize(tt.n); got != tt.want {
			t.Errorf("HumanSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
