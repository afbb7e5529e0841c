package dsl_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/plan"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// nested returns a check whose condition is wrapped in n parentheses.
func nested(n int) string {
	return minimalScenario + "check \"deep\" {\n  condition = " + strings.Repeat("(", n) + "phase.p.put.p99 < ms(5)" + strings.Repeat(")", n) + "\n}\n"
}

const minimalScenario = `cluster "main" {
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

func TestHostileSources(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 1_000_000)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	manyErrors := minimalScenario + bogusLines(50)
	tests := []struct {
		name      string
		src       string
		summary   string // "" when the source must load
		line, col int
		detail    string
	}{
		{name: "random bytes", src: string(random), summary: "Not a text file", line: 1, col: 1, detail: "The byte at offset 0 is"},
		{name: "NUL after text", src: "cluster \"main\" {\x00", summary: "Not a text file", line: 1, col: 17, detail: `'\x00'`},
		{name: "escape sequence", src: "# \x1b[31mred\n" + minimalScenario, summary: "Not a text file", line: 1, col: 3, detail: `'\x1b'`},
		{name: "too large", src: strings.Repeat("# padding\n", 5_000_000), summary: "File too large", line: 1, col: 1, detail: "at most 1048576 bytes"},
		{name: "120000 nested parentheses", src: nested(120_000), summary: "Nesting too deep", line: 12, col: 78, detail: "more than 64 levels"},
		{name: "50000 nested brackets", src: minimalScenario + "seed = " + strings.Repeat("[", 50_000), summary: "Nesting too deep", line: 11, col: 72, detail: "more than 64 levels"},
		{name: "nested interpolations", src: minimalScenario + "description = \"" + strings.Repeat("${\"", 100), summary: "Nesting too deep"},
		{name: "60 nested parentheses load", src: nested(60)},
		{name: "brackets in strings, comments and heredocs do not count", src: minimalScenario +
			"# " + strings.Repeat("(", 200) + "\n// " + strings.Repeat("[", 200) + "\n/* " + strings.Repeat("{", 200) + " */\n" +
			"description = <<EOT\n" + strings.Repeat("(", 200) + "\nEOT\n" +
			"check \"c\" {\n  condition = phase.p.put.p99 < ms(5) || \"" + strings.Repeat("(", 200) + "$${\" == \"x\"\n}\n"},
		{name: "diagnostics are capped", src: manyErrors, summary: "Unsupported argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := dsl.Load(hclparse.NewParser(), "hostile.hcl", []byte(tt.src), dsl.VarOptions{})
			if tt.summary == "" {
				if diags.HasErrors() {
					t.Fatalf("want no errors, got %v", diags)
				}
				return
			}
			if !diags.HasErrors() {
				t.Fatal("want an error, got none")
			}
			d := diags[0]
			if d.Summary != tt.summary || !strings.Contains(d.Detail, tt.detail) {
				t.Fatalf("got %q / %q, want %q / ...%q...", d.Summary, d.Detail, tt.summary, tt.detail)
			}
			if d.Subject == nil {
				t.Fatal("no subject")
			}
			if tt.line > 0 && (d.Subject.Start.Line != tt.line || d.Subject.Start.Column != tt.col) {
				t.Fatalf("at %d:%d, want %d:%d", d.Subject.Start.Line, d.Subject.Start.Column, tt.line, tt.col)
			}
		})
	}
}

// bogusLines is n unknown top-level attributes, one per line.
func bogusLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "bogus%d = 1\n", i)
	}
	return b.String()
}

func TestDiagnosticsCapped(t *testing.T) {
	src := minimalScenario + bogusLines(50)
	_, diags := dsl.Load(hclparse.NewParser(), "many.hcl", []byte(src), dsl.VarOptions{})
	if len(diags) != dsl.MaxErrors+1 {
		t.Fatalf("got %d diagnostics, want %d", len(diags), dsl.MaxErrors+1)
	}
	last := diags[len(diags)-1]
	if last.Severity != hcl.DiagError || last.Summary != "And 30 more error(s)" || last.Subject == nil || last.Subject.Start.Line != 11+dsl.MaxErrors {
		t.Fatalf("last diagnostic %q at %v", last.Summary, last.Subject)
	}
}

func TestReadSource(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "ok.hcl")
	if err := os.WriteFile(regular, []byte(minimalScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.hcl")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#\n"), dsl.MaxSourceBytes), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		err  string // "" for success
	}{
		{regular, ""},
		{fifo, "not a regular file (a FIFO)"},
		{"/dev/zero", "not a regular file (a character device)"},
		{dir, "not a regular file (a directory)"},
		{big, fmt.Sprintf("larger than the limit of %d bytes", dsl.MaxSourceBytes)},
		{filepath.Join(dir, "missing.hcl"), "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			b, err := dsl.ReadSource(tt.path)
			switch {
			case tt.err == "" && err != nil:
				t.Fatal(err)
			case tt.err == "" && string(b) != minimalScenario:
				t.Fatalf("read %q", b)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("err = %v, want ...%q...", err, tt.err)
			}
		})
	}
}

// The language decodes exactly the fault kinds the plan knows.
func TestFaultKindsMatchPlan(t *testing.T) {
	var want []string
	for _, k := range plan.FaultKinds() {
		want = append(want, k.Name)
	}
	slices.Sort(want)
	if got := dsl.FaultKinds(); !slices.Equal(got, want) {
		t.Errorf("language fault kinds %v, plan's %v", got, want)
	}
}
