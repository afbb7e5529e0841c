package metrics

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"io"
	"math"
	"strconv"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// V2 encoding cookies, with the word size nibble HdrHistogram's writers set.
const (
	v2PayloadCookie    = 0x1c849303 | 0x10
	v2CompressedCookie = 0x1c849304 | 0x10
)

// lineEncoder writes interval log lines, byte for byte what
// hdr.HistogramLogWriter.OutputIntervalHistogram writes, but keeps its
// compressor and buffers from line to line. The library builds a new zlib
// writer at BestCompression for every histogram, about 800 KB of state
// allocated and cleared, and that was nine tenths of what a collector tick
// allocated (BenchmarkTick): garbage made once a second on the goroutine
// that the dispatcher shares two cores with.
type lineEncoder struct {
	zw      *zlib.Writer
	payload []byte       // the uncompressed V2 payload
	comp    bytes.Buffer // its zlib stream
	frame   []byte       // cookie, length, zlib stream
	line    []byte
}

// write appends one line for h, tagged, covering [startMs, endMs) in
// milliseconds since the log's base time baseMs, to w.
func (e *lineEncoder) write(w io.Writer, h *hdr.Histogram, tag string, baseMs, startMs, endMs int64) error {
	if err := e.encode(h); err != nil {
		return err
	}
	start := float64(startMs-baseMs) / 1000
	end := float64(endMs-baseMs) / 1000
	b := e.line[:0]
	if tag != "" {
		b = append(b, "Tag="...)
		b = append(b, tag...)
		b = append(b, ',')
	}
	b = strconv.AppendFloat(b, start, 'f', 6, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, end-start, 'f', 6, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, float64(h.Max())/hdr.MsToNsRatio, 'f', 6, 64)
	b = append(b, ',')
	b = base64.StdEncoding.AppendEncode(b, e.frame)
	b = append(b, '\n')
	e.line = b
	_, err := w.Write(b)
	return err
}

// encode fills e.frame with h in the V2 compressed encoding.
func (e *lineEncoder) encode(h *hdr.Histogram) error {
	snap := h.Export()
	counts := snap.Counts
	// The library encodes up to the bucket of Max, and one zero count for
	// an empty histogram.
	limit := 1
	for i := len(counts) - 1; i > 0; i-- {
		if counts[i] != 0 {
			limit = i + 1
			break
		}
	}
	p := binary.BigEndian.AppendUint32(e.payload[:0], v2PayloadCookie)
	lenAt := len(p)
	p = binary.BigEndian.AppendUint32(p, 0) // counts length, filled below
	p = binary.BigEndian.AppendUint32(p, 0) // normalizing index offset
	p = binary.BigEndian.AppendUint32(p, uint32(snap.SignificantFigures))
	p = binary.BigEndian.AppendUint64(p, uint64(snap.LowestTrackableValue))
	p = binary.BigEndian.AppendUint64(p, uint64(snap.HighestTrackableValue))
	ratio := snap.IntegerToDoubleConversionRatio
	if ratio == 0 {
		ratio = 1
	}
	p = binary.BigEndian.AppendUint64(p, math.Float64bits(ratio))
	countsAt := len(p)
	for i := 0; i < limit; {
		n := counts[i]
		i++
		if n == 0 {
			zeros := int64(1)
			for i < limit && counts[i] == 0 {
				zeros++
				i++
			}
			if zeros > 1 {
				n = -zeros
			}
		}
		p = appendZigZag(p, n)
	}
	binary.BigEndian.PutUint32(p[lenAt:], uint32(len(p)-countsAt))
	e.payload = p

	e.comp.Reset()
	if e.zw == nil {
		zw, err := zlib.NewWriterLevel(&e.comp, zlib.BestCompression)
		if err != nil {
			return err
		}
		e.zw = zw
	} else {
		e.zw.Reset(&e.comp)
	}
	if _, err := e.zw.Write(p); err != nil {
		return err
	}
	if err := e.zw.Close(); err != nil {
		return err
	}
	f := binary.BigEndian.AppendUint32(e.frame[:0], v2CompressedCookie)
	f = binary.BigEndian.AppendUint32(f, uint32(e.comp.Len()))
	e.frame = append(f, e.comp.Bytes()...)
	return nil
}

// appendZigZag appends v in HdrHistogram's ZigZag LEB128-64b9B format: 7
// bits a byte for up to eight bytes, the ninth carrying all of its eight.
func appendZigZag(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for range 8 {
		if u>>7 == 0 {
			return append(b, byte(u))
		}
		b = append(b, byte(u&0x7f|0x80))
		u >>= 7
	}
	return append(b, byte(u))
}
