package main

import (
	"fmt"
	"io"
	"os"

	"github.com/coordlab/scenario/dsl"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// varFlags are the -var and -var-file flags shared by every command that
// reads a scenario.
type varFlags struct {
	vars     []string
	varFiles []string
}

func (v *varFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&v.vars, "var", nil, "set a variable: -var name=value (repeatable)")
	cmd.Flags().StringArrayVar(&v.varFiles, "var-file", nil, "read variables from an HCL file of name = value lines (repeatable)")
}

func (v *varFlags) options() dsl.VarOptions {
	return dsl.VarOptions{Vars: v.vars, VarFiles: v.varFiles}
}

// isTerminal reports whether w is a terminal, so colour and live progress
// are used only there.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// printDiagnostics writes each diagnostic as a file:line:col: severity:
// summary line, which editors and CI annotators parse, followed by HCL's
// rendering: the source line marked, and what to write instead.
func printDiagnostics(w io.Writer, parser *hclparse.Parser, diags hcl.Diagnostics) {
	if len(diags) == 0 {
		return
	}
	width := 0
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		width, _, _ = term.GetSize(int(f.Fd()))
	}
	dw := hcl.NewDiagnosticTextWriter(w, parser.Files(), uint(width), isTerminal(w))
	for _, d := range diags {
		severity := "error"
		if d.Severity == hcl.DiagWarning {
			severity = "warning"
		}
		if r := d.Subject; r != nil {
			fmt.Fprintf(w, "%s:%d:%d: %s: %s\n", r.Filename, r.Start.Line, r.Start.Column, severity, d.Summary)
		}
		_ = dw.WriteDiagnostic(d)
	}
}

// loadScenario reads, validates and compiles one file, printing diagnostics.
func loadScenario(cmd *cobra.Command, path string, vf *varFlags) (*dsl.Build, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &exitError{code: exitInvalid, err: fmt.Errorf("read scenario: %w", err)}
	}
	parser := hclparse.NewParser()
	build, diags := dsl.Load(parser, path, src, vf.options())
	printDiagnostics(cmd.ErrOrStderr(), parser, diags)
	if diags.HasErrors() {
		return nil, &exitError{code: exitInvalid, err: fmt.Errorf("%s: %d error(s)", path, countErrors(diags)), quiet: false}
	}
	return build, nil
}

func countErrors(diags hcl.Diagnostics) int {
	n := 0
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			n++
		}
	}
	return n
}
