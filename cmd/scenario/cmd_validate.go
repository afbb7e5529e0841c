package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCommand() *cobra.Command {
	var vf varFlags
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check scenario files without running them",
		Long: `Check scenario files: syntax, every block and attribute, references between
blocks, fault timing and targets, and every metric a check reads. Prints every
problem at once, each at its file:line:col. Exits 0 when all files are valid, 2 otherwise.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var failed []string
			for _, path := range args {
				build, err := loadScenario(cmd, path, &vf)
				if err != nil {
					var ee *exitError
					if errors.As(err, &ee) && ee.code == exitInvalid {
						// Diagnostics are printed already; this names the
						// file, or says why it could not be read.
						fmt.Fprintf(cmd.ErrOrStderr(), "%s\n", escapeControls(ee.err.Error()))
						failed = append(failed, path)
						continue
					}
					return err
				}
				points := ""
				if n := len(build.Plans); n > 1 {
					points = fmt.Sprintf(" (%d sweep points", n)
					if len(build.Skipped) > 0 {
						points += fmt.Sprintf(", %d skipped as invalid", len(build.Skipped))
					}
					points += ")"
				}
				if build.File.Repeat > 1 {
					points += fmt.Sprintf(" (repeat = %d: %d runs)", build.File.Repeat, build.File.Repeat*len(build.Plans))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: valid%s\n", path, points)
			}
			if len(failed) > 0 {
				return &exitError{code: exitInvalid, err: fmt.Errorf("%d of %d file(s) invalid", len(failed), len(args))}
			}
			return nil
		},
	}
	vf.register(cmd)
	return cmd
}
