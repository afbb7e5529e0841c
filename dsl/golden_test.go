package dsl_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// update rewrites golden files from what the code produces now:
//
//	go test ./dsl -run Golden -update
//
// Review the diff before committing it.
var update = flag.Bool("update", false, "rewrite golden files in testdata/golden")

// goldenBuild is what a golden file holds: every plan, and the sweep points
// left out as invalid.
type goldenBuild struct {
	Plans   []*plan.Plan  `json:"plans"`
	Skipped []dsl.Skipped `json:"skipped,omitempty"`
}

// TestGoldenPlans compiles every file in testdata/good and compares its
// plans, JSON-encoded, with testdata/golden/<name>.json.
func TestGoldenPlans(t *testing.T) {
	paths, err := filepath.Glob("testdata/good/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no files in testdata/good")
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".hcl")
		t.Run(name, func(t *testing.T) {
			build := mustLoad(t, path, dsl.VarOptions{})
			got, err := json.MarshalIndent(goldenBuild{Plans: build.Plans, Skipped: build.Skipped}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			compareGolden(t, filepath.Join("testdata", "golden", name+".json"), got)
		})
	}
}

// compareGolden compares got with the golden file, or rewrites it with -update.
func compareGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./dsl -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the code produces now:\n%s\n(run go test ./dsl -run Golden -update and review the diff)", golden, firstDifference(string(want), string(got)))
	}
}

// firstDifference shows the first differing line with a little context.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return "(same lines, different bytes)"
}

// mustLoad loads a file that must be valid: no diagnostics at all, not even
// warnings.
func mustLoad(t *testing.T, path string, opts dsl.VarOptions) *dsl.Build {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return mustLoadSource(t, path, src, opts)
}

func mustLoadSource(t *testing.T, path string, src []byte, opts dsl.VarOptions) *dsl.Build {
	t.Helper()
	parser := hclparse.NewParser()
	build, diags := dsl.Load(parser, path, src, opts)
	if len(diags) > 0 {
		t.Fatalf("Load(%s): unexpected diagnostics:\n%s", path, diagText(parser, diags))
	}
	if build == nil || len(build.Plans) == 0 {
		t.Fatalf("Load(%s): no plans", path)
	}
	return build
}

func diagText(parser *hclparse.Parser, diags hcl.Diagnostics) string {
	var b bytes.Buffer
	_ = hcl.NewDiagnosticTextWriter(&b, parser.Files(), 100, false).WriteDiagnostics(diags)
	return b.String()
}
