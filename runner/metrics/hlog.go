package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Interval log tags: each second of each op is logged twice, once per
// latency measure, so HdrHistogram's tools can select one with -tag.
const (
	tagCorrected = "corrected"
	tagRaw       = "raw"
)

// startLog points st's interval log at a spool file of its own when
// spooling, else at memory.
func (c *Collector) startLog(st *opState) {
	var w io.Writer = &st.log
	if c.spool != nil {
		c.spool.hlogs++
		// Numbered, not named after the op: names need not be file-safe.
		if f, err := c.spool.create(fmt.Sprintf("%d.hlog.spool", c.spool.hlogs)); err == nil {
			st.spool = &hlogSpool{file: f, mem: &st.log}
			st.spool.buf = bufio.NewWriter(st.spool)
			w = st.spool.buf
		}
	}
	st.logw = w
}

// hlogSpool is an op's interval log in a spool file. Lines are buffered on
// their way to the file; from the first write the file fails on, they go
// to memory (the op's log) instead, after what the file holds, so that no
// line is lost and the order is kept.
type hlogSpool struct {
	file   *spoolFile
	mem    *bytes.Buffer
	failed bool
	buf    *bufio.Writer // writes to the hlogSpool itself
}

// Write never fails: what the file does not take goes to memory (the
// error is recorded in the spool).
func (h *hlogSpool) Write(p []byte) (int, error) {
	if !h.failed {
		if _, err := h.file.append(p); err == nil {
			return len(p), nil
		}
		h.failed = true
	}
	return h.mem.Write(p)
}

// copyTo writes the lines in the spool file to w. Those in memory are the
// caller's to write after them.
func (h *hlogSpool) copyTo(w io.Writer) error {
	if err := h.buf.Flush(); err != nil {
		return err
	}
	const piece = 64 << 10
	for off := int64(0); off < h.file.size; off += piece {
		b, err := h.file.read(off, int(min(piece, h.file.size-off)))
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// logSeconds appends the interval histograms of st's seconds
// [st.logged, upTo) to its log and recycles them. Seconds with no successful
// op are logged empty so that the log has no holes. c.mu must be held.
func (c *Collector) logSeconds(st *opState, upTo int) {
	baseMs := c.base.UnixMilli()
	var empty *hdr.Histogram
	for k := st.logged; k < upTo; k++ {
		var row *second
		if k < len(st.seconds) {
			row = &st.seconds[k]
		}
		var pair [2]*hdr.Histogram
		if row != nil {
			pair = [2]*hdr.Histogram{row.corrected, row.raw}
		}
		for i, tag := range [2]string{tagCorrected, tagRaw} {
			h := pair[i]
			if h == nil {
				if empty == nil {
					empty = c.getHist()
				}
				h = empty
			}
			start := baseMs + int64(k)*1000
			if err := c.lines.write(st.logw, h, tag, baseMs, start, start+1000); err != nil && c.logErr == nil {
				c.logErr = fmt.Errorf("interval log %s.%s second %d: %w", st.workload, st.op, k, err)
			}
		}
		if row != nil {
			c.putHist(row.corrected)
			c.putHist(row.raw)
			row.corrected, row.raw = nil, nil
		}
	}
	if empty != nil {
		c.putHist(empty)
	}
	st.logged = max(st.logged, upTo)
}

// WriteIntervalLogs writes one HdrHistogram interval log per workload × op,
// dir/<workload>.<op>.hlog, with one corrected and one raw histogram per
// sealed second (call it after Flush). Values are in microseconds, so the
// Interval_Max column (HdrHistogram's default ratio of 1e6) reads in seconds;
// with HistogramLogProcessor use -outputValueUnitRatio 1000 for ms.
//
// A spooled log that cannot be read back fails it, since the file would
// lack seconds. A spool write that failed does not: its lines were kept in
// memory and the files are whole (SpoolErr reports it).
func (c *Collector) WriteIntervalLogs(dir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logErr != nil {
		return c.logErr
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write interval logs: %w", err)
	}
	keys := make([]opKey, 0, len(c.ops))
	for k := range c.ops {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b opKey) int {
		return strings.Compare(a.workload+"\x00"+a.op, b.workload+"\x00"+b.op)
	})
	for _, k := range keys {
		if err := c.writeLog(dir, c.ops[k]); err != nil {
			return err
		}
	}
	return nil
}

func (c *Collector) writeLog(dir string, st *opState) error {
	path := filepath.Join(dir, fileSafe(st.workload)+"."+fileSafe(st.op)+".hlog")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write interval log: %w", err)
	}
	w := bufio.NewWriter(f)
	hw := hdr.NewHistogramLogWriter(w)
	err = hw.OutputLogFormatVersion()
	if err == nil {
		err = hw.OutputComment(fmt.Sprintf("[scenario: workload %s, op %s; values in microseconds; tags %s (from intended send time) and %s (from actual send time)]",
			st.workload, st.op, tagCorrected, tagRaw))
	}
	if err == nil {
		err = hw.OutputStartTime(c.base.UnixMilli())
	}
	if err == nil {
		err = hw.OutputLegend()
	}
	if err == nil && st.spool != nil {
		err = st.spool.copyTo(w)
	}
	if err == nil {
		_, err = w.Write(st.log.Bytes())
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write interval log %s: %w", path, err)
	}
	return nil
}

// fileSafe keeps a name usable as part of a file name.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, s)
}
