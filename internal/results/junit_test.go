package results

import (
	"bytes"
	"encoding/xml"
	"slices"
	"strings"
	"testing"
)

func TestWriteJUnitRepetitions(t *testing.T) {
	pass := sample()
	pass.Checks = pass.Checks[:1]
	var buf bytes.Buffer
	if err := WriteJUnitRepetitions(&buf, []*Results{sample(), pass, sample()}, []string{"rep-1", "rep-2", "rep-3"}); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, buf.String())
	}
	if got.Name != "sample" || got.Tests != 5 || got.Failures != 2 || got.Errors != 0 || len(got.Suites) != 3 {
		t.Fatalf("testsuites %q: %d tests, %d failures, %d errors, %d suites; want sample, 5, 2, 0, 3:\n%s",
			got.Name, got.Tests, got.Failures, got.Errors, len(got.Suites), buf.String())
	}
	for i, want := range []struct {
		name     string
		failures int
	}{{"sample (rep-1)", 1}, {"sample (rep-2)", 0}, {"sample (rep-3)", 1}} {
		s := got.Suites[i]
		if s.Name != want.name || s.Failures != want.failures {
			t.Errorf("suite %d: %q with %d failures, want %q with %d", i, s.Name, s.Failures, want.name, want.failures)
		}
	}
}

// TestJUnitNotes: the run's notes on its own measurement reach a CI
// reporter as suite properties, in order of key.
func TestJUnitNotes(t *testing.T) {
	r := sample()
	r.Notes = map[string]string{NoteShaperReads: "the shaper read all 178554 frames its devices handed it", "aborted": "check x failed"}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	var got junitSuite
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, buf.String())
	}
	var notes []junitProperty
	for _, p := range got.Properties {
		if strings.HasPrefix(p.Name, "note.") {
			notes = append(notes, p)
		}
	}
	want := []junitProperty{{"note.aborted", "check x failed"}, {"note.shaper_reads", "the shaper read all 178554 frames its devices handed it"}}
	if !slices.Equal(notes, want) {
		t.Errorf("note properties %+v, want %+v:\n%s", notes, want, buf.String())
	}
}
