package dsl

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"

	"github.com/coordlab/scenario/internal/safefile"
)

// Limits on what Load reads. They bound time and memory on hostile input
// before HCL's parser sees it: the parser recurses once per nesting level
// (120,000 parentheses overflow the stack) and its error recovery is
// quadratic on garbage (100 KB of random bytes took a minute).
const (
	// MaxSourceBytes is the largest scenario or variable file accepted.
	// The largest curated scenario is under 8 KB; a megabyte is absurd
	// already.
	MaxSourceBytes = 1 << 20
	// MaxNesting is the deepest nesting of brackets, braces, parentheses
	// and template interpolations accepted.
	MaxNesting = 64
	// MaxErrors is how many error diagnostics Load returns for one
	// input; past it, one more says how many were left out.
	MaxErrors = 20
)

// CheckSource refuses input the parser should never see: too large, not
// UTF-8 text, or nested too deep. It is linear in the input.
func CheckSource(filename string, src []byte) hcl.Diagnostics {
	if len(src) > MaxSourceBytes {
		return hcl.Diagnostics{errorAt(pos(filename, src, 0), "File too large",
			"%s is %d bytes; a scenario may be at most %d bytes (%d KiB). Split it, or check that this is the file you meant.",
			filename, len(src), MaxSourceBytes, MaxSourceBytes>>10)}
	}
	if off, what := binaryAt(src); off >= 0 {
		return hcl.Diagnostics{errorAt(pos(filename, src, off), "Not a text file",
			"The byte at offset %d is %s. A scenario is UTF-8 HCL text; check that this is the file you meant.", off, what)}
	}
	if off := tooDeep(src); off >= 0 {
		return hcl.Diagnostics{errorAt(pos(filename, src, off), "Nesting too deep",
			"Brackets, braces, parentheses and ${...} nest more than %d levels deep here. Split the expression with locals or variables.", MaxNesting)}
	}
	return nil
}

// binaryAt returns the offset of the first byte that cannot be in a text
// file (NUL, invalid UTF-8, or a control character other than tab, CR, LF
// and form feed) and what it is, or -1.
func binaryAt(src []byte) (int, string) {
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' || c == 0x7f {
				return i, fmt.Sprintf("the control character %s", strconv.QuoteRune(rune(c)))
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && n <= 1 {
			return i, fmt.Sprintf("0x%02x, not valid UTF-8", c)
		}
		if unicode.Is(unicode.Cc, r) {
			return i, fmt.Sprintf("the control character %s", strconv.QuoteRune(r))
		}
		i += n
	}
	return -1, ""
}

// tooDeep returns the offset where nesting first exceeds MaxNesting, or -1.
// It follows HCL's lexical structure closely enough not to count brackets
// inside strings and comments: quoted strings with escapes and ${ }/%{ }
// interpolations, heredocs, and #, // and /* */ comments. Where it is
// unsure it counts, so it can refuse a pathological file but never lets a
// deep one through.
func tooDeep(src []byte) int {
	// Each frame is a bracket in code, or a string whose interpolations
	// push code frames on top of it.
	type frame struct {
		str     bool   // a quoted string or heredoc body
		heredoc string // closing marker, for heredocs
	}
	var stack []frame
	depth := func() int { return len(stack) }
	inString := func() bool { return len(stack) > 0 && stack[len(stack)-1].str }
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString() {
			top := stack[len(stack)-1]
			switch {
			case c == '\\' && top.heredoc == "":
				i++
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == c:
				i++ // $${ and %%{ are literal
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				stack = append(stack, frame{}) // code again, until its }
				i++
			case c == '"' && top.heredoc == "":
				stack = stack[:len(stack)-1]
			case c == '\n' && top.heredoc == "":
				stack = stack[:len(stack)-1] // an unterminated string ends at the line
			case c == '\n':
				end := i + 1
				for end < len(src) && src[end] != '\n' {
					end++
				}
				if strings.TrimSpace(string(src[i+1:end])) == top.heredoc {
					stack = stack[:len(stack)-1]
					i = end - 1
				}
			}
			if depth() > MaxNesting {
				return i
			}
			continue
		}
		switch c {
		case '#':
			i = skipLine(src, i)
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				i = skipLine(src, i)
			} else if i+1 < len(src) && src[i+1] == '*' {
				if j := bytes.Index(src[i+2:], []byte("*/")); j >= 0 { // no copy: many comments stay linear
					i += j + 3
				} else {
					i = len(src)
				}
			}
		case '"':
			stack = append(stack, frame{str: true})
		case '<':
			if marker, end, ok := heredocStart(src, i); ok {
				stack = append(stack, frame{str: true, heredoc: marker})
				i = end - 1 // the newline ending the opening line
			}
		case '(', '[', '{':
			stack = append(stack, frame{})
		case ')', ']', '}':
			if len(stack) > 0 && !stack[len(stack)-1].str {
				stack = stack[:len(stack)-1]
			}
		}
		if depth() > MaxNesting {
			return i
		}
	}
	return -1
}

// skipLine returns the offset of the newline ending the line at i (or the
// end of src), so the scanner resumes on it.
func skipLine(src []byte, i int) int {
	for i < len(src) && src[i] != '\n' {
		i++
	}
	return i - 1
}

// heredocStart recognises <<MARKER or <<-MARKER followed by a newline at
// src[i] and returns the marker and the offset of that newline.
func heredocStart(src []byte, i int) (string, int, bool) {
	j := i + 2
	if j > len(src) || src[i+1] != '<' {
		return "", 0, false
	}
	if j < len(src) && src[j] == '-' {
		j++
	}
	start := j
	for j < len(src) && (src[j] == '_' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= '0' && src[j] <= '9') {
		j++
	}
	if j == start || j >= len(src) || (src[j] != '\n' && !(src[j] == '\r' && j+1 < len(src) && src[j+1] == '\n')) {
		return "", 0, false
	}
	marker := string(src[start:j])
	if src[j] == '\r' {
		j++
	}
	return marker, j, true
}

// pos is the one-character range at byte offset off of src.
func pos(filename string, src []byte, off int) hcl.Range {
	line, col := 1, 1
	for _, c := range src[:min(off, len(src))] {
		if c == '\n' {
			line, col = line+1, 1
		} else if c&0xc0 != 0x80 {
			col++
		}
	}
	start := hcl.Pos{Line: line, Column: col, Byte: off}
	end := start
	if off < len(src) {
		end.Byte, end.Column = off+1, col+1
	}
	return hcl.Range{Filename: filename, Start: start, End: end}
}

// capErrors keeps the first MaxErrors error diagnostics (diags sorted by
// position) and every warning among them, and says how many errors it
// left out, at the first of them.
func capErrors(diags hcl.Diagnostics) hcl.Diagnostics {
	n := 0
	for i, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		n++
		if n <= MaxErrors {
			continue
		}
		more := 0
		for _, r := range diags[i:] {
			if r.Severity == hcl.DiagError {
				more++
			}
		}
		out := append(hcl.Diagnostics(nil), diags[:i]...)
		return append(out, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("And %d more error(s)", more),
			Detail:   fmt.Sprintf("Only the first %d errors of a file are shown; fix these and validate again.", MaxErrors),
			Subject:  d.Subject,
		})
	}
	return diags
}

// ReadSource reads a scenario or variable file for Load, refusing what is
// not a regular file (a FIFO, a device such as /dev/zero, a directory) and
// anything larger than MaxSourceBytes, without blocking on a FIFO and
// without reading more than the limit from a file that grows meanwhile.
func ReadSource(path string) ([]byte, error) {
	return safefile.ReadRegular(path, MaxSourceBytes)
}
