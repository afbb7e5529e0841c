package dsl_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/coordlab/scenario/dsl"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// Each file in testdata/bad holds one mistake (many-errors.hcl several) and
// says, in its leading comment lines, what Load must report:
//
//	# expect: LINE:COL Summary | substring of the detail
//	# expect: FILE:LINE:COL Summary | ...   (a subject in another file: a var file, or "-var name=value")
//	# var: name=value                        (passed as -var)
//	# var-file: ../vars/file.hcl             (passed as -var-file, relative to the bad file)
//
// One expect line per diagnostic, in the order Load returns them (sorted by
// position). LINE:COL is where the diagnostic's Subject starts.

type expectation struct {
	file      string // "" for the scenario file itself
	line, col int
	summary   string
	detail    string
}

func (e expectation) String() string {
	loc := fmt.Sprintf("%d:%d", e.line, e.col)
	if e.file != "" {
		loc = e.file + ":" + loc
	}
	return fmt.Sprintf("# expect: %s %s | %s", loc, e.summary, e.detail)
}

var expectLine = regexp.MustCompile(`^# expect: (?:(.*?):)?(\d+):(\d+) (.+?) \| (.+)$`)

// badCase is one file of testdata/bad with its expectations and options.
type badCase struct {
	name    string
	path    string
	src     []byte
	expect  []expectation
	options dsl.VarOptions
}

func readBadCase(t *testing.T, path string) badCase {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := badCase{name: strings.TrimSuffix(filepath.Base(path), ".hcl"), path: path, src: src}
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		switch {
		case strings.HasPrefix(line, "# expect:"):
			m := expectLine.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%s: malformed expectation %q", path, line)
			}
			l, _ := strconv.Atoi(m[2])
			col, _ := strconv.Atoi(m[3])
			c.expect = append(c.expect, expectation{file: m[1], line: l, col: col, summary: m[4], detail: m[5]})
		case strings.HasPrefix(line, "# var: "):
			c.options.Vars = append(c.options.Vars, strings.TrimPrefix(line, "# var: "))
		case strings.HasPrefix(line, "# var-file: "):
			c.options.VarFiles = append(c.options.VarFiles, filepath.Join(filepath.Dir(path), strings.TrimPrefix(line, "# var-file: ")))
		}
	}
	if len(c.expect) == 0 {
		t.Fatalf("%s: no `# expect:` line", path)
	}
	return c
}

func badCases(t *testing.T) []badCase {
	t.Helper()
	paths, err := filepath.Glob("testdata/bad/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 35 {
		t.Fatalf("only %d bad cases in testdata/bad", len(paths))
	}
	var out []badCase
	for _, p := range paths {
		out = append(out, readBadCase(t, p))
	}
	return out
}

func TestBadScenarios(t *testing.T) {
	for _, c := range badCases(t) {
		t.Run(c.name, func(t *testing.T) {
			build, diags := dsl.Load(hclparse.NewParser(), c.path, c.src, c.options)
			if !diags.HasErrors() {
				t.Fatalf("Load accepted %s (%d plans)", c.path, len(build.Plans))
			}
			assertDiagnosticShape(t, diags)
			var got []expectation
			for _, d := range diags {
				e := expectation{summary: d.Summary, detail: d.Detail}
				if d.Subject != nil {
					e.line, e.col = d.Subject.Start.Line, d.Subject.Start.Column
					if d.Subject.Filename != c.path {
						e.file = filepath.Base(d.Subject.Filename)
					}
				}
				got = append(got, e)
			}
			ok := len(got) == len(c.expect)
			for i := 0; ok && i < len(got); i++ {
				g, w := got[i], c.expect[i]
				ok = g.file == w.file && g.line == w.line && g.col == w.col && g.summary == w.summary && strings.Contains(g.detail, w.detail)
			}
			if !ok {
				var b strings.Builder
				for _, e := range c.expect {
					fmt.Fprintf(&b, "\n  want %s", e)
				}
				for _, g := range got {
					fmt.Fprintf(&b, "\n  got  %s", g)
				}
				t.Errorf("diagnostics of %s differ:%s", c.path, b.String())
			}
		})
	}
}

// assertDiagnosticShape checks what every diagnostic must have, whatever
// the mistake: a subject that points into a file (or the command line), a
// summary and a detail, and context only around a subject.
func assertDiagnosticShape(t *testing.T, diags hcl.Diagnostics) {
	t.Helper()
	for _, d := range diags {
		switch {
		case d.Subject == nil:
			t.Errorf("diagnostic %q has no subject", d.Summary)
		case d.Subject.Filename == "" || d.Subject.Start.Line < 1 || d.Subject.Start.Column < 1:
			t.Errorf("diagnostic %q has a bad subject %#v", d.Summary, d.Subject)
		case d.Subject.End.Byte < d.Subject.Start.Byte:
			t.Errorf("diagnostic %q has a subject that ends before it starts: %s", d.Summary, d.Subject)
		}
		if d.Summary == "" || d.Detail == "" {
			t.Errorf("diagnostic without summary or detail: %#v", d)
		}
		if d.Context != nil && d.Subject == nil {
			t.Errorf("diagnostic %q has context but no subject", d.Summary)
		}
	}
}
