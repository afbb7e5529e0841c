package process

import (
	"bytes"
	"io"
	"os"
)

const (
	tailChunk = 8 << 10
	// tailMax bounds how much of a log Tail reads: a node that writes
	// megabyte lines gets a truncated tail rather than a stalled runner.
	tailMax = 1 << 20
	// addrScanMax is how much of a dead node's last output is searched for
	// a bind failure; such messages come at the end.
	addrScanMax = 64 << 10
)

// TailFile returns the last n lines of the file at path, without the final
// newline, reading backwards from its end. Container nodes log to files
// too, and use it.
func TailFile(path string, n int) (string, error) {
	if n <= 0 {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	b, err := lastLines(f, fi.Size(), n)
	return string(b), err
}

func lastLines(r io.ReaderAt, size int64, n int) ([]byte, error) {
	var buf []byte
	end := size
	for {
		start := max(0, end-tailChunk)
		part := make([]byte, end-start)
		if _, err := r.ReadAt(part, start); err != nil && err != io.EOF {
			return nil, err
		}
		buf = append(part, buf...)
		end = start
		body := bytes.TrimSuffix(buf, []byte{'\n'})
		// n lines need n-1 separators, plus the newline that ends the
		// line before them unless the file starts there.
		if bytes.Count(body, []byte{'\n'}) >= n || start == 0 || size-start >= tailMax {
			break
		}
	}
	body := bytes.TrimSuffix(buf, []byte{'\n'})
	for i, at := 0, len(body); i < n; i++ {
		j := bytes.LastIndexByte(body[:at], '\n')
		if j < 0 {
			return body, nil
		}
		at = j
		if i == n-1 {
			return body[j+1:], nil
		}
	}
	return body, nil
}

// mentionsAddrInUse reports whether the log written since offset from holds
// a bind failure. Go (etcd, Consul) prints "bind: address already in use";
// Java (ZooKeeper) "java.net.BindException: Address already in use".
func mentionsAddrInUse(path string, from int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	start := max(from, fi.Size()-addrScanMax)
	if start >= fi.Size() {
		return false
	}
	b := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(b, start); err != nil && err != io.EOF {
		return false
	}
	return bytes.Contains(bytes.ToLower(b), []byte("address already in use"))
}
