package main

import (
	"bytes"
	"fmt"

	"github.com/coordlab/scenario/dsl"
	"github.com/coordlab/scenario/internal/safefile"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/spf13/cobra"
)

func newFmtCommand() *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "fmt [--check] FILE...",
		Short: "Rewrite scenario files in canonical format",
		Long: `Rewrite scenario files in the canonical HCL layout (aligned '=', two-space
indent). With --check, change nothing: list the files that need formatting and exit 1
if any do. A file with syntax errors is reported and exits 2.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			parser := hclparse.NewParser()
			var unformatted []string
			var diags hcl.Diagnostics
			for _, path := range args {
				src, err := dsl.ReadSource(path)
				if err != nil {
					return &exitError{code: exitInvalid, err: fmt.Errorf("read scenario: %w", err)}
				}
				if d := dsl.CheckSource(path, src); d.HasErrors() {
					diags = append(diags, d...)
					continue
				}
				// Format only what parses: hclwrite would otherwise reflow broken input.
				if _, d := parser.ParseHCL(src, path); d.HasErrors() {
					diags = append(diags, d...)
					continue
				}
				out := hclwrite.Format(src)
				if bytes.Equal(out, src) {
					continue
				}
				unformatted = append(unformatted, path)
				if check {
					fmt.Fprintln(cmd.OutOrStdout(), path)
					continue
				}
				if err := cmd.Context().Err(); err != nil {
					return err
				}
				if err := safefile.WriteAtomic(path, out, 0, true); err != nil {
					return &exitError{code: exitInfra, err: err}
				}
				fmt.Fprintln(cmd.OutOrStdout(), path)
			}
			if diags.HasErrors() {
				printDiagnostics(cmd.ErrOrStderr(), parser, diags)
				return &exitError{code: exitInvalid, err: fmt.Errorf("%d file(s) have syntax errors", countErrors(diags))}
			}
			if check && len(unformatted) > 0 {
				return &exitError{code: exitCheckFailed, err: fmt.Errorf("%d file(s) need formatting: run scenario fmt", len(unformatted))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "only report files that need formatting; exit 1 if any")
	return cmd
}
