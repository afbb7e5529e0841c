package results

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The JUnit XML shape that CI systems (Jenkins, GitLab, GitHub actions
// reporters) agree on: one suite, one case per check.
type junitSuite struct {
	XMLName    xml.Name        `xml:"testsuite"`
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes the checks as a JUnit XML test suite: one test case per
// check, a <failure> for a check whose condition was false and an <error>
// for one that could not be evaluated. Both carry the condition and the
// observed values, which is what someone reading a CI report needs first.
func WriteJUnit(w io.Writer, r *Results) error {
	return encodeJUnit(w, junitSuiteOf(r))
}

// junitSuites is the JUnit shape of several suites in one file.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

// WriteJUnitRepetitions writes the checks of a repeated run (scenario run
// --repeat N) as one JUnit file: a suite per repetition, named after its
// directory, so that a CI reporter shows which repetition failed which
// check. runs[i] ran in dirs[i].
func WriteJUnitRepetitions(w io.Writer, runs []*Results, dirs []string) error {
	all := junitSuites{}
	for i, r := range runs {
		s := junitSuiteOf(r)
		all.Name = s.Name
		s.Name += " (" + dirs[i] + ")"
		s.Properties = append(s.Properties, junitProperty{"repetition", dirs[i]})
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Errors += s.Errors
		all.Suites = append(all.Suites, s)
	}
	return encodeJUnit(w, all)
}

func junitSuiteOf(r *Results) junitSuite {
	class := filepath.Base(r.ScenarioFile)
	if r.ScenarioFile == "" {
		class = r.Scenario
	}
	name := r.Scenario
	if name == "" {
		name = class
	}
	s := junitSuite{
		Name:  name,
		Tests: len(r.Checks),
		Time:  seconds(r.DurationMS),
	}
	if !r.Started.IsZero() {
		s.Timestamp = r.Started.UTC().Format(time.RFC3339)
	}
	s.Properties = append(s.Properties, junitProperty{"run_id", r.RunID})
	if r.ScenarioFile != "" {
		s.Properties = append(s.Properties, junitProperty{"scenario_file", r.ScenarioFile})
	}
	for _, p := range r.Point {
		s.Properties = append(s.Properties, junitProperty{"point." + p.Variable, p.Value})
	}
	for _, k := range sortedKeys(r.Seeds) {
		s.Properties = append(s.Properties, junitProperty{"seed." + k, strconv.FormatInt(r.Seeds[k], 10)})
	}
	// What the run says about its own measurement (a late shaper, lost
	// frames, an abort), beside the checks it qualifies.
	for _, k := range sortedKeys(r.Notes) {
		s.Properties = append(s.Properties, junitProperty{"note." + k, r.Notes[k]})
	}
	for _, c := range r.Checks {
		tc := junitCase{ClassName: class, Name: c.Name, Time: seconds(c.DurationMS), File: c.Pos}
		switch c.Status() {
		case StatusFail:
			s.Failures++
			msg := c.Message
			if msg == "" {
				msg = "condition is false: " + c.Condition
			}
			tc.Failure = &junitProblem{Message: msg, Type: "CheckFailed", Body: describe(c)}
		case StatusError:
			s.Errors++
			tc.Error = &junitProblem{Message: c.Error, Type: "CheckError", Body: describe(c)}
		}
		s.Cases = append(s.Cases, tc)
	}
	return s
}

func encodeJUnit(w io.Writer, s any) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	return nil
}

// describe renders a check's condition and observed values, one per line.
func describe(c Check) string {
	var b strings.Builder
	fmt.Fprintf(&b, "condition: %s\n", c.Condition)
	if c.Pos != "" {
		fmt.Fprintf(&b, "declared at: %s\n", c.Pos)
	}
	if len(c.Observed) > 0 {
		b.WriteString("observed:\n")
		for _, k := range sortedKeys(c.Observed) {
			fmt.Fprintf(&b, "  %s = %s\n", k, FormatValue(c.Observed[k]))
		}
	}
	if c.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", c.Error)
	}
	return b.String()
}

// FormatValue renders an observed metric value: numbers with up to six
// significant digits and no exponent for everyday magnitudes, null as
// "null".
func FormatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		if s := strconv.FormatFloat(v, 'g', 6, 64); !strings.ContainsRune(s, 'e') {
			return s
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

func seconds(ms float64) string { return strconv.FormatFloat(ms/1000, 'f', 3, 64) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
