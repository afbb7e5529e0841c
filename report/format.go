package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// fmtMS writes a duration in milliseconds with three significant digits,
// switching to seconds from one second on.
func fmtMS(ms float64) string {
	switch {
	case math.IsNaN(ms):
		return "-"
	case ms >= 1000:
		return fmt.Sprintf("%.3g s", ms/1000)
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.3g ms", ms)
}

// fmtOptMS writes an optional duration; "-" when it was not measured.
func fmtOptMS(ms *float64) string {
	if ms == nil {
		return "-"
	}
	return fmtMS(*ms)
}

// fmtSeconds writes an offset or a length of the run in seconds, to the
// millisecond.
func fmtSeconds(ms float64) string {
	return trimFloat(ms/1000, 3) + " s"
}

// fmtRatio writes a fraction such as availability as a percentage. A
// fraction just short of 1 is not rounded up to 100%: "lost nothing" and
// "lost one in a million" must read differently.
func fmtRatio(v *float64) string {
	if v == nil {
		return "-"
	}
	s := trimFloat(*v*100, 2)
	if s == "100" && *v < 1 {
		s = ">99.99"
	}
	return s + "%"
}

// trimFloat writes v with at most decimals digits after the point and no
// trailing zeros.
func trimFloat(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func strconvG(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
