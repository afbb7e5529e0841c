package metrics

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// A long run at a high rate would otherwise keep every interval log line
// and every write's completion time in memory until it ends: ~2 MB a
// minute at 2,000 requests/s. Spooling moves both to files as soon as they
// are final, so that what a run keeps in memory per second is a small
// descriptor, whatever the request rate.

// spoolBacking is what a spool file is written to and read back from: an
// *os.File, or in tests one that fails on demand.
type spoolBacking interface {
	io.WriterAt
	io.ReaderAt
	io.Closer
}

func openSpoolFile(path string) (spoolBacking, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// spooler owns a collector's spool files. c.mu guards it.
type spooler struct {
	dir    string
	open   func(path string) (spoolBacking, error)
	writes *spoolFile // every write track's sealed chunks
	files  []spoolBacking
	hlogs  int // interval log spools opened, to name the next
	err    error
	closed bool
}

// fail remembers the first error: later ones are usually its consequences.
func (s *spooler) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// create opens a new spool file in the spool's directory.
func (s *spooler) create(name string) (*spoolFile, error) {
	path := filepath.Join(s.dir, name)
	b, err := s.open(path)
	if err != nil {
		err = fmt.Errorf("spool: create %s: %w", path, err)
		s.fail(err)
		return nil, err
	}
	s.files = append(s.files, b)
	return &spoolFile{name: path, b: b, fail: s.fail}, nil
}

// close closes every spool file. Whatever is still to be read from them
// is gone: call it once the outputs are written.
func (s *spooler) close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, b := range s.files {
		if err := b.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close spool %s: %w", s.dir, err)
	}
	return nil
}

// spoolFile is an append-only spool file. Appends go at size, not at the
// file's own offset, so that a failed partial write is overwritten by the
// next append instead of corrupting what follows.
type spoolFile struct {
	name    string
	b       spoolBacking
	size    int64       // bytes of data in the file
	fail    func(error) // records an error in the spooler
	scratch []byte      // read buffer, reused: reads come one at a time
}

// append writes p at the end of the file and returns where it starts. On
// error nothing counts as written: the caller keeps p.
func (f *spoolFile) append(p []byte) (off int64, err error) {
	off = f.size
	if _, err := f.b.WriteAt(p, off); err != nil {
		err = fmt.Errorf("spool: write %d bytes to %s at %d: %w", len(p), f.name, off, err)
		f.fail(err)
		return 0, err
	}
	f.size += int64(len(p))
	return off, nil
}

// read returns the n bytes at off, valid until the next read.
func (f *spoolFile) read(off int64, n int) ([]byte, error) {
	f.scratch = slices.Grow(f.scratch[:0], n)[:n]
	if _, err := f.b.ReadAt(f.scratch, off); err != nil {
		err = fmt.Errorf("spool: read %d bytes from %s at %d: %w", n, f.name, off, err)
		f.fail(err)
		return nil, err
	}
	return f.scratch, nil
}

// SpoolTo makes the collector keep its interval logs and write times in
// files in dir (created if needed) instead of memory, once they are final.
// Call it once, before any sample is merged, and Close once the outputs
// are written. Without it everything stays in memory.
func (c *Collector) SpoolTo(dir string) error {
	return c.spoolTo(dir, openSpoolFile)
}

func (c *Collector) spoolTo(dir string, open func(string) (spoolBacking, error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.spool != nil:
		return errors.New("spool: already spooling")
	case len(c.ops) > 0:
		// The lines logged so far would have to precede the file's.
		return errors.New("spool: samples were already merged")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	s := &spooler{dir: dir, open: open}
	w, err := s.create("writes.spool")
	if err != nil {
		return err
	}
	s.writes = w
	c.spool = s
	c.writes.log.spool = w
	for _, t := range c.wlWrites {
		t.log.spool = w
	}
	return nil
}

// Close closes the spool files. It does nothing when not spooling, or
// closed already. Results and interval logs need the files: close after
// the outputs are written.
func (c *Collector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spool == nil {
		return nil
	}
	return c.spool.close()
}

// SpoolErr returns the first error met writing to or reading from the
// spool, or nil. A failed write loses nothing (what it held stays in
// memory), but a failed read may leave write gaps and the last write
// before an instant computed without some writes.
func (c *Collector) SpoolErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spool == nil {
		return nil
	}
	return c.spool.err
}
