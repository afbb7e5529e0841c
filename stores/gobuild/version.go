package gobuild

import (
	"fmt"
	"regexp"
	"strconv"
)

// Version is a validated release number of a store built from its module,
// such as v3.5.17 or v1.21.0-rc1. Its String is safe as a path element and
// as a module query.
type Version struct {
	Major, Minor, Patch int
	Pre                 string // "-rc.1", "-rc1" or ""
}

// Pre-releases are allowed because stores publish them as module versions.
// Build metadata ("+incompatible", "+ent") is not: the caller adds what
// the module proxy needs.
var versionRE = regexp.MustCompile(`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?$`)

// ParseVersion accepts "3.5.17" and "v3.5.17". Errors name store and show
// example as a release to write.
func ParseVersion(store, example, s string) (Version, error) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return Version{}, fmt.Errorf("%s version %q: want a release like %s", store, s, example)
	}
	var v Version
	var err error
	for i, p := range []*int{&v.Major, &v.Minor, &v.Patch} {
		if *p, err = strconv.Atoi(m[i+1]); err != nil {
			return Version{}, fmt.Errorf("%s version %q: %w", store, s, err)
		}
	}
	v.Pre = m[4]
	return v, nil
}

func (v Version) String() string {
	return fmt.Sprintf("v%d.%d.%d%s", v.Major, v.Minor, v.Patch, v.Pre)
}

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}
