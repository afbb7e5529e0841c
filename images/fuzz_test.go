package images

import (
	"strings"
	"testing"
)

// FuzzParseSpec feeds the command line's STORE[@VERSION] parser: it never
// panics, and what it accepts names a known store, a version, an official
// tag, and parses again to itself.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"etcd", "etcd@3.5.17", "etcd@v3.6.4", "consul@1.20.2", "zookeeper@3.8.0", "zookeeper@3.9.1", "etcd@", "@3.5", "etcd@3.5.17@x", "consul@2.0.0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		s, err := ParseSpec(arg)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseSpec(%q): empty error", arg)
			}
			return
		}
		if s.Version == "" || strings.HasPrefix(s.Version, "v") || s.Tag() == "" {
			t.Fatalf("ParseSpec(%q) = %+v, tag %q", arg, s, s.Tag())
		}
		again, err := ParseSpec(s.String())
		if err != nil || again != s {
			t.Fatalf("ParseSpec(%q) = %+v, but ParseSpec(%q) = %+v, %v", arg, s, s.String(), again, err)
		}
		if back, ok := SpecOf(s.Tag()); !ok || back != s {
			t.Fatalf("SpecOf(%q) = %+v, %v; want %+v", s.Tag(), back, ok, s)
		}
	})
}
