package metrics

import (
	"bytes"
	"math/rand/v2"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// TestLineEncoderMatchesLibrary checks that the collector's interval log
// lines are the bytes hdrhistogram-go's log writer produces for the same
// histogram, so every HdrHistogram tool reads them as before, with one
// encoder reused across all of them as the collector does.
func TestLineEncoderMatchesLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name   string
		values func() []int64
	}{
		{"empty", func() []int64 { return nil }},
		{"one value", func() []int64 { return []int64{1} }},
		{"zero", func() []int64 { return []int64{0, 0} }},
		{"range top", func() []int64 { return []int64{histHighest, histHighest - 1, 7} }},
		{"dense", func() []int64 {
			v := make([]int64, 5000)
			for i := range v {
				v[i] = 500 + int64(i%3000)
			}
			return v
		}},
		{"spread", func() []int64 {
			v := make([]int64, 2000)
			for i := range v {
				v[i] = int64(rng.ExpFloat64() * 20000)
			}
			return v
		}},
		{"huge counts", func() []int64 { return nil }},
	}
	var enc lineEncoder
	const baseMs = 1_700_000_000_123
	for k, tt := range tests {
		for _, tag := range []string{tagCorrected, tagRaw, ""} {
			h := newHist()
			for _, v := range tt.values() {
				if err := h.RecordValue(v); err != nil {
					t.Fatalf("%s: record %d: %v", tt.name, v, err)
				}
			}
			if tt.name == "huge counts" {
				_ = h.RecordValues(12345, 1<<40)
				_ = h.RecordValues(3, 1<<62)
			}
			start := baseMs + int64(k)*1000 + 7
			var want bytes.Buffer
			lw := hdr.NewHistogramLogWriter(&want)
			lw.SetBaseTime(baseMs)
			h.SetTag(tag)
			h.SetStartTimeMs(start)
			h.SetEndTimeMs(start + 1000)
			if err := lw.OutputIntervalHistogram(h); err != nil {
				t.Fatalf("%s: library: %v", tt.name, err)
			}
			var got bytes.Buffer
			if err := enc.write(&got, h, tag, baseMs, start, start+1000); err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if got.String() != want.String() {
				t.Errorf("%s, tag %q:\n got %s\nwant %s", tt.name, tag, got.String(), want.String())
			}
		}
	}
}

// TestAppendZigZag checks the varint against the library's decoder across
// the widths where its byte layout changes.
func TestAppendZigZag(t *testing.T) {
	var values []int64
	for shift := range 64 {
		v := int64(1) << shift
		values = append(values, v, v-1, -v, -v+1, v+1)
	}
	values = append(values, 0, -1, 1<<63-1, -1<<63)
	for _, v := range values {
		h := hdr.New(1, 1000, 3)
		b := appendZigZag(nil, v)
		if len(b) > 9 {
			t.Errorf("%d: %d bytes, at most 9", v, len(b))
		}
		// One count in the payload, decoded by the library: a count of v at
		// value 1 when v is positive.
		if v <= 0 || v > 1<<62 {
			continue
		}
		var enc lineEncoder
		_ = h.RecordValues(1, v)
		if err := enc.encode(h); err != nil {
			t.Fatal(err)
		}
		var line bytes.Buffer
		if err := enc.write(&line, h, "", 0, 0, 1000); err != nil {
			t.Fatal(err)
		}
		r := hdr.NewHistogramLogReader(&line)
		got, err := r.NextIntervalHistogram()
		if err != nil || got == nil {
			t.Fatalf("%d: read back: %v", v, err)
		}
		if got.TotalCount() != v {
			t.Errorf("count %d read back as %d", v, got.TotalCount())
		}
	}
}

// BenchmarkIntervalLine compares one interval log line of a second of
// 1,000 latencies written by hdrhistogram-go's log writer (the reference)
// and by the collector's lineEncoder.
func BenchmarkIntervalLine(b *testing.B) {
	h := newHist()
	for i := range 1000 {
		_ = h.RecordValue(int64(500 + i*7))
	}
	h.SetTag(tagCorrected)
	h.SetStartTimeMs(1000)
	h.SetEndTimeMs(2000)
	var out bytes.Buffer
	b.Run("library", func(b *testing.B) {
		lw := hdr.NewHistogramLogWriter(&out)
		b.ReportAllocs()
		for b.Loop() {
			out.Reset()
			if err := lw.OutputIntervalHistogram(h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reused", func(b *testing.B) {
		var enc lineEncoder
		b.ReportAllocs()
		for b.Loop() {
			out.Reset()
			if err := enc.write(&out, h, tagCorrected, 0, 1000, 2000); err != nil {
				b.Fatal(err)
			}
		}
	})
}
