// Package safefile reads and writes the files users name on the command
// line without the ways that goes wrong: blocking on a FIFO, reading a
// device or a growing file without end, leaving half a file after an
// interrupt, or writing over a file that is an input of the same command.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ReadRegular reads the regular file at path if it holds at most limit
// bytes. The open does not block (O_NONBLOCK: opening a FIFO for reading
// would wait for a writer), and the type is checked on the opened file, so
// a path swapped between a stat and the open is caught too.
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, Kind(fi.Mode()))
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, larger than the limit of %d bytes", path, fi.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: grew past the limit of %d bytes while being read", path, limit)
	}
	return b, nil
}

// Kind names a file type for an error message.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a file of type " + m.Type().String()
}

// WriteAtomic writes data to a temporary file in path's directory and
// renames it to path, so that a reader, or an interrupt, sees the old file
// or the new one, never half of one. The file gets mode perm (umask
// aside), or the mode of the file it replaces when keepMode is set.
func WriteAtomic(path string, data []byte, perm fs.FileMode, keepMode bool) (err error) {
	if keepMode {
		if fi, serr := os.Stat(path); serr == nil {
			perm = fi.Mode().Perm()
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm &^ umask()); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// umask reads the process's umask without changing it for longer than
// the two calls (this package sets no other file mode concurrently).
func umask() fs.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return fs.FileMode(m)
}

// ErrOverwrite is returned by CheckOutput when writing would destroy an input.
var ErrOverwrite = errors.New("would overwrite")

// CheckOutput refuses an output path that is one of inputs (the same file
// by inode, or by cleaned absolute path when it does not exist yet), or an
// existing file that is not a regular file.
func CheckOutput(out string, inputs ...string) error {
	outAbs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	outInfo, statErr := os.Stat(out)
	if statErr == nil && !outInfo.Mode().IsRegular() {
		return fmt.Errorf("%s is %s, not a file to write", out, Kind(outInfo.Mode()))
	}
	for _, in := range inputs {
		inAbs, err := filepath.Abs(in)
		if err != nil {
			return err
		}
		same := inAbs == outAbs
		if !same && statErr == nil {
			if inInfo, err := os.Stat(in); err == nil {
				same = os.SameFile(inInfo, outInfo)
			}
		}
		if same {
			return fmt.Errorf("%w its input %s", ErrOverwrite, in)
		}
	}
	return nil
}
