package dsl_test

import (
	"strings"
	"testing"
	"time"

	"github.com/coordlab/scenario/plan"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    time.Duration
		wantErr string // substring; "" means no error
	}{
		{name: "milliseconds", in: "250ms", want: 250 * time.Millisecond},
		{name: "seconds", in: "5s", want: 5 * time.Second},
		{name: "compound", in: "1m30s", want: 90 * time.Second},
		{name: "fraction", in: "1.5s", want: 1500 * time.Millisecond},
		{name: "microseconds", in: "10us", want: 10 * time.Microsecond},
		{name: "hours", in: "2h", want: 2 * time.Hour},
		{name: "surrounding space", in: "  3s ", want: 3 * time.Second},
		{name: "zero with unit", in: "0s", want: 0},
		{name: "negative parses", in: "-1s", want: -time.Second}, // the decoder refuses it, with the attribute's range
		{name: "bare number", in: "5", wantErr: `duration "5" has no unit; write "5ms" or "5s"`},
		{name: "bare fraction", in: "0.5", wantErr: "has no unit"},
		{name: "bare zero", in: "0", wantErr: "has no unit"},
		{name: "empty", in: "", wantErr: "empty duration"},
		{name: "blank", in: "   ", wantErr: "empty duration"},
		{name: "days are not a unit", in: "1d", wantErr: `"1d" is not a duration`},
		{name: "space before unit", in: "5 s", wantErr: "is not a duration"},
		{name: "word", in: "soon", wantErr: "is not a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plan.ParseDuration(tt.in)
			checkParse(t, tt.in, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int64
		wantErr string
	}{
		{name: "plain bytes", in: "512", want: 512},
		{name: "B", in: "300B", want: 300},
		{name: "KiB", in: "1KiB", want: 1024},
		{name: "MiB with space", in: "4 MiB", want: 4 << 20},
		{name: "GiB", in: "2GiB", want: 2 << 30},
		{name: "TiB", in: "1TiB", want: 1 << 40},
		{name: "KB is decimal", in: "1KB", want: 1000},
		{name: "MB is decimal", in: "1MB", want: 1000000},
		{name: "GB is decimal", in: "1GB", want: 1000000000},
		{name: "fraction", in: "1.5KiB", want: 1536},
		{name: "case-insensitive unit", in: "1kib", want: 1024},
		{name: "rounds to whole bytes", in: "0.5B", want: 1},
		{name: "negative parses", in: "-1KiB", want: -1024}, // range checks belong to the decoder
		{name: "junk after unit", in: "1KB2", wantErr: `"1KB2" has an unknown size unit "KB2"`},
		{name: "unknown unit", in: "1PB", wantErr: `unknown size unit "PB"`},
		{name: "no number", in: "KiB", wantErr: `"KiB" is not a size`},
		{name: "empty", in: "", wantErr: "is not a size"},
		{name: "two points", in: "1..5KiB", wantErr: "is not a size"},
		{name: "out of range", in: "99999999999TiB", wantErr: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plan.ParseSize(tt.in)
			checkParse(t, tt.in, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestParseBandwidth(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int64 // bits per second
		wantErr string
	}{
		{name: "bit", in: "800bit", want: 800},
		{name: "kbit", in: "64kbit", want: 64000},
		{name: "mbit", in: "10mbit", want: 10000000},
		{name: "gbit", in: "1gbit", want: 1000000000},
		{name: "fraction", in: "1.5gbit", want: 1500000000},
		{name: "Mbps is bits", in: "100Mbps", want: 100000000},
		{name: "bps", in: "9600bps", want: 9600},
		{name: "space before unit", in: "10 mbit", want: 10000000},
		{name: "MB/s is bytes", in: "5MB/s", want: 40000000},
		{name: "KB/s is bytes", in: "100KB/s", want: 800000},
		{name: "MiB/s is bytes", in: "1MiB/s", want: 8 << 20},
		{name: "KiB/s is bytes", in: "1KiB/s", want: 8 << 10},
		{name: "B/s is bytes", in: "125B/s", want: 1000},
		{name: "Mb/s is bits", in: "10Mb/s", want: 10000000}, // SI: b is a bit, B a byte
		{name: "kb/s is bits", in: "64kb/s", want: 64000},
		{name: "no unit", in: "100", wantErr: `"100" is not a bandwidth; write a rate with a unit`},
		{name: "unknown unit", in: "10furlongs", wantErr: `unknown bandwidth unit "furlongs"`},
		{name: "unknown per-second unit", in: "10MX/s", wantErr: "unknown bandwidth unit"},
		{name: "bare per second", in: "10/s", wantErr: "unknown bandwidth unit"},
		{name: "empty", in: "", wantErr: "is not a bandwidth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plan.ParseBandwidth(tt.in)
			checkParse(t, tt.in, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestParsePercent(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    float64
		wantErr string
	}{
		{name: "whole", in: "10", want: 10},
		{name: "with sign", in: "10%", want: 10},
		{name: "fraction", in: "0.5%", want: 0.5},
		{name: "space before sign", in: "5 %", want: 5},
		{name: "zero", in: "0", want: 0},
		{name: "above 100 parses", in: "150%", want: 150}, // the decoder refuses it
		{name: "word", in: "lots", wantErr: `"lots" is not a percentage`},
		{name: "not a number", in: "NaN", wantErr: "is not a percentage"},
		{name: "empty", in: "", wantErr: "is not a percentage"},
		{name: "sign only", in: "%", wantErr: "is not a percentage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plan.ParsePercent(tt.in)
			checkParse(t, tt.in, got, err, tt.want, tt.wantErr)
		})
	}
}

func checkParse[T comparable](t *testing.T, in string, got T, err error, want T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil {
			t.Fatalf("parse %q = %v, want an error containing %q", in, got, wantErr)
		}
		if !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("parse %q: error %q does not contain %q", in, err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("parse %q: unexpected error %v", in, err)
	}
	if got != want {
		t.Fatalf("parse %q = %v, want %v", in, got, want)
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		name string
		in   int64
		want string
	}{
		{name: "zero", in: 0, want: "0B"},
		{name: "bytes", in: 300, want: "300B"},
		{name: "KiB", in: 1024, want: "1KiB"},
		{name: "not a round KiB", in: 1536, want: "1536B"},
		{name: "round KiB above a MiB", in: 1536 << 10, want: "1536KiB"},
		{name: "MiB", in: 64 << 20, want: "64MiB"},
		{name: "GiB", in: 2 << 30, want: "2GiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plan.FormatBytes(tt.in); got != tt.want {
				t.Fatalf("FormatBytes(%d) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFormatBandwidth(t *testing.T) {
	tests := []struct {
		name string
		in   int64
		want string
	}{
		{name: "bits", in: 800, want: "800bit"},
		{name: "kbit", in: 64000, want: "64kbit"},
		{name: "mbit", in: 10000000, want: "10mbit"},
		{name: "gbit", in: 2000000000, want: "2gbit"},
		{name: "bytes per second", in: 8 << 20, want: "1MiB/s"},
		{name: "odd", in: 1234567, want: "1234567bit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plan.FormatBandwidth(tt.in)
			if got != tt.want {
				t.Fatalf("FormatBandwidth(%d) = %q, want %q", tt.in, got, tt.want)
			}
			// What is printed parses back to the same rate.
			back, err := plan.ParseBandwidth(got)
			if err != nil || back != tt.in {
				t.Fatalf("ParseBandwidth(%q) = %d, %v; want %d", got, back, err, tt.in)
			}
		})
	}
}

// A network fault over a declared link replaces what it sets and keeps
// the rest.
func TestShapingOver(t *testing.T) {
	ms := func(n int) plan.Duration { return plan.Duration(time.Duration(n) * time.Millisecond) }
	link := plan.Shaping{RTT: ms(40), Jitter: ms(5), Loss: 1, Bandwidth: 10e6}
	tests := []struct {
		name  string
		fault plan.Shaping
		want  plan.Shaping
	}{
		{"nothing", plan.Shaping{}, link},
		{"loss only", plan.Shaping{Loss: 20}, plan.Shaping{RTT: ms(40), Jitter: ms(5), Loss: 20, Bandwidth: 10e6}},
		{"everything", plan.Shaping{RTT: ms(200), Jitter: ms(50), Loss: 2, Bandwidth: 1e6}, plan.Shaping{RTT: ms(200), Jitter: ms(50), Loss: 2, Bandwidth: 1e6}},
	}
	for _, tc := range tests {
		if got := link.Over(tc.fault); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if (plan.Shaping{}).Shaped() || !(plan.Shaping{Loss: 0.1}).Shaped() {
		t.Error("Shaped is wrong")
	}
}
