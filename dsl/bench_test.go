package dsl_test

import (
	"os"
	"testing"

	"github.com/coordlab/scenario/dsl"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// BenchmarkLoad measures the whole pipeline on the reference example; the
// fuzzer's speed and `scenario validate` on large sweeps both depend on it.
func BenchmarkLoad(b *testing.B) {
	src, err := os.ReadFile("../examples/etcd-geo.hcl")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, diags := dsl.Load(hclparse.NewParser(), "etcd-geo.hcl", src, dsl.VarOptions{}); diags.HasErrors() {
			b.Fatal(diags)
		}
	}
}
