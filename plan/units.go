package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// ParseDuration parses a Go-style duration such as "250ms" or "1m30s".
// Bare numbers are refused: a unit is always required so that "5" never
// silently means five nanoseconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration; write a number with a unit, such as \"250ms\" or \"5s\"")
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("duration %q has no unit; write %q or %q", s, s+"ms", s+"s")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration; write a number with a unit (ns, us, ms, s, m, h), such as \"250ms\"", s)
	}
	return d, nil
}

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	// Longest suffixes first so "KiB" wins over "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseSize parses a byte size: "512", "1KiB", "4 MiB", "1GB".
func ParseSize(s string) (int64, error) {
	num, unit := splitNumber(s)
	if num == "" {
		return 0, fmt.Errorf("%q is not a size; write a number of bytes or a number with a unit (B, KiB, MiB, GiB, KB, MB, GB), such as \"1KiB\"", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %v", s, err)
	}
	mult := 0.0
	if unit == "" {
		mult = 1
	}
	for _, u := range sizeUnits {
		if strings.EqualFold(unit, u.suffix) {
			mult = u.mult
			break
		}
	}
	if mult == 0 {
		return 0, fmt.Errorf("%q has an unknown size unit %q; use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB", s, unit)
	}
	return checkedInt(v*mult, s)
}

var bitRateUnits = []struct {
	suffix string
	mult   float64 // bits per second
}{
	{"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9},
	{"bps", 1}, {"kbps", 1e3}, {"mbps", 1e6}, {"gbps", 1e9},
}

// perSecondPrefixes scale the "b/s" and "B/s" units.
var perSecondPrefixes = []struct {
	prefix string
	mult   float64
}{
	{"", 1}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"ki", 1 << 10}, {"mi", 1 << 20}, {"gi", 1 << 30},
}

// ParseBandwidth parses a link rate into bits per second: "10mbit",
// "100Mbps", "1gbit", "10Mb/s", or bytes per second: "5MB/s", "1MiB/s".
// Before "/s" the case of the b matters, as in SI: b is a bit, B a byte.
func ParseBandwidth(s string) (int64, error) {
	num, unit := splitNumber(s)
	if num == "" || unit == "" {
		return 0, fmt.Errorf("%q is not a bandwidth; write a rate with a unit, such as \"10mbit\", \"100Mbps\" or \"5MB/s\"", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a bandwidth: %v", s, err)
	}
	for _, bu := range bitRateUnits {
		if strings.EqualFold(unit, bu.suffix) {
			return checkedInt(v*bu.mult, s)
		}
	}
	if stem, ok := strings.CutSuffix(unit, "/s"); ok && stem != "" {
		per := 1.0 // bits
		switch stem[len(stem)-1] {
		case 'B':
			per = 8
		case 'b':
		default:
			per = 0
		}
		prefix := strings.ToLower(stem[:len(stem)-1])
		for _, p := range perSecondPrefixes {
			if per > 0 && prefix == p.prefix {
				return checkedInt(v*p.mult*per, s)
			}
		}
	}
	return 0, fmt.Errorf("%q has an unknown bandwidth unit %q; use bit, kbit, mbit, gbit (or bps, kbps, mbps, gbps, Mb/s) for bits, or B/s, KB/s, MB/s, KiB/s, MiB/s for bytes per second", s, unit)
}

// ParsePercent parses a loss rate: 10, "10%", "0.5%".
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a percentage; write a number between 0 and 100, such as 10 or \"0.5%%\"", s)
	}
	return v, nil
}

func splitNumber(s string) (num, unit string) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool {
		return !(unicode.IsDigit(r) || r == '.' || r == '-' || r == '+')
	})
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

func checkedInt(v float64, s string) (int64, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v > math.MaxInt64/2 || v < math.MinInt64/2 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return int64(math.Round(v)), nil
}

// FormatBytes renders a byte count the way a person writes it: "1KiB", "300B".
func FormatBytes(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return fmt.Sprintf("%d%s", n/u.m, u.s)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// FormatBandwidth renders bits per second: "10mbit". A rate given in bytes
// that is no round number of bits is shown in bytes: "1MiB/s".
func FormatBandwidth(bps int64) string {
	switch {
	case bps >= 1e9 && bps%1e9 == 0:
		return fmt.Sprintf("%dgbit", bps/1e9)
	case bps >= 1e6 && bps%1e6 == 0:
		return fmt.Sprintf("%dmbit", bps/1e6)
	case bps >= 1e3 && bps%1e3 == 0:
		return fmt.Sprintf("%dkbit", bps/1e3)
	case bps >= 8<<10 && bps%(8<<10) == 0:
		return FormatBytes(bps/8) + "/s"
	}
	return fmt.Sprintf("%dbit", bps)
}
