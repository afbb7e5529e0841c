package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// softirqSample is what the kernel's receive path has done up to a moment
// (see sampleSoftirq).
type softirqSample struct {
	dropped, squeezed uint64
	ksoftirqd         time.Duration
}

// ksoftirqdMS is the ksoftirqd threads' run time in milliseconds, NaN
// where it is unknown (negative).
func (s softirqSample) ksoftirqdMS() float64 {
	if s.ksoftirqd < 0 {
		return math.NaN()
	}
	return float64(s.ksoftirqd) / float64(time.Millisecond)
}

// since is what happened between earlier and s.
func (s softirqSample) since(earlier softirqSample) softirqSample {
	return softirqSample{
		dropped:   s.dropped - earlier.dropped,
		squeezed:  s.squeezed - earlier.squeezed,
		ksoftirqd: s.ksoftirqd - earlier.ksoftirqd,
	}
}

// parseSoftnet sums softnet_stat's second and third columns (hexadecimal,
// a row per CPU) over the CPUs.
func parseSoftnet(stat []byte) (dropped, squeezed uint64, err error) {
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			return 0, 0, fmt.Errorf("softnet_stat: %q has fewer than 3 columns", sc.Text())
		}
		d, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("softnet_stat: dropped %q: %w", f[1], err)
		}
		q, err := strconv.ParseUint(f[2], 16, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("softnet_stat: time_squeeze %q: %w", f[2], err)
		}
		dropped += d
		squeezed += q
	}
	return dropped, squeezed, sc.Err()
}

func TestParseSoftnet(t *testing.T) {
	for _, tc := range []struct {
		name              string
		stat              string
		dropped, squeezed uint64
		err               bool
	}{
		{"two CPUs", "0000000e 00000001 0000000a 00000000\n000046e0 00000002 000000ff 00000000\n", 3, 0x109, false},
		{"empty", "", 0, 0, false},
		{"short row", "0000000e 00000001\n", 0, 0, true},
		{"not hex", "0000000e 0000000g 00000000\n", 0, 0, true},
	} {
		d, q, err := parseSoftnet([]byte(tc.stat))
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v, want one: %v", tc.name, err, tc.err)
			continue
		}
		if !tc.err && (d != tc.dropped || q != tc.squeezed) {
			t.Errorf("%s: dropped %d, squeezed %d; want %d, %d", tc.name, d, q, tc.dropped, tc.squeezed)
		}
	}
}
