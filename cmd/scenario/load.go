package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

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
	// Source lines, names and messages can carry terminal escape
	// sequences (a -var value, a file name): neutralise them, so that
	// showing a diagnostic never drives the user's terminal.
	files := map[string]*hcl.File{}
	for name, f := range parser.Files() {
		files[name] = &hcl.File{Body: f.Body, Bytes: inertBytes(f.Bytes), Nav: f.Nav}
	}
	dw := hcl.NewDiagnosticTextWriter(w, files, uint(width), isTerminal(w))
	for _, d := range diags {
		severity := "error"
		if d.Severity == hcl.DiagWarning {
			severity = "warning"
		}
		safe := *d
		safe.Summary, safe.Detail = escapeControls(d.Summary), escapeControls(d.Detail)
		if r := d.Subject; r != nil {
			subject := *r
			subject.Filename = escapeControls(r.Filename)
			safe.Subject = &subject
			fmt.Fprintf(w, "%s:%d:%d: %s: %s\n", subject.Filename, r.Start.Line, r.Start.Column, severity, safe.Summary)
		}
		if c := d.Context; c != nil {
			ctxRange := *c
			ctxRange.Filename = escapeControls(c.Filename)
			safe.Context = &ctxRange
		}
		if r := d.Subject; r != nil && files[r.Filename] == nil {
			// A file refused before parsing (binary, too deep): there is
			// no source line worth showing, only what to do.
			fmt.Fprintf(w, "\n%s\n\n", safe.Detail)
			continue
		}
		_ = dw.WriteDiagnostic(&safe)
	}
}

// escapeControls writes control characters (C0 but tab and newline, DEL,
// C1) as Go escapes, so that text from the user cannot drive a terminal.
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool {
	return r != '\n' && r != '\t' && unicode.IsControl(r)
}

// inertBytes replaces control characters and bytes that are not UTF-8 in
// source text with '?' byte for byte (a C1 character's two bytes with
// two), so that every range into the source still points where it did.
func inertBytes(src []byte) []byte {
	out := src
	copied := false
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		if isControl(r) && r != '\r' || r == utf8.RuneError && n == 1 {
			if !copied {
				out, copied = bytes.Clone(src), true
			}
			for j := range n {
				out[i+j] = '?'
			}
		}
		i += n
	}
	return out
}

// loadScenario reads, validates and compiles one file, printing diagnostics.
func loadScenario(cmd *cobra.Command, path string, vf *varFlags) (*dsl.Build, error) {
	src, err := dsl.ReadSource(path)
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
