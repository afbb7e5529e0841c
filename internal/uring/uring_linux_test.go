//go:build linux

package uring

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testRing returns a ring, skipping the test where io_uring is forbidden.
func testRing(t testing.TB, entries int) *Ring {
	t.Helper()
	r, err := New(entries)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("this machine forbids io_uring (the shaper then reads each frame with read(2)): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// seqpacket returns a connected pair of sockets that keep message
// boundaries, as a TUN device keeps frames: the first end to read, the
// second to write.
func seqpacket(t testing.TB) (int, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

func frameBufs(n, size int) [][]byte {
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = make([]byte, size)
	}
	return bufs
}

// TestReadsInOrder reads batches of frames: each read takes one frame, the
// frames come in the order written, and reads past the last find nothing
// and do not wait. More rounds than the completion queue has entries: its
// head must wrap for the ring to go on.
func TestReadsInOrder(t *testing.T) {
	r := testRing(t, 8)
	if r.Size() != 8 {
		t.Fatalf("Size = %d, want 8", r.Size())
	}
	rd, w := seqpacket(t)
	bufs := frameBufs(8, 256)
	res := make([]int, 8)
	next := 0
	for round := range 10 {
		n := 1 + round*3%12 // sometimes more than a batch, sometimes fewer
		for k := range n {
			if _, err := unix.Write(w, fmt.Appendf(nil, "frame %d%s", next+k, bytes.Repeat([]byte{'x'}, k))); err != nil {
				t.Fatal(err)
			}
		}
		for left := n; left > 0; {
			if err := r.Reads(rd, bufs, res); err != nil {
				t.Fatal(err)
			}
			for i, m := range res {
				switch {
				case m > 0:
					want := fmt.Sprintf("frame %d%s", next, bytes.Repeat([]byte{'x'}, n-left))
					if got := string(bufs[i][:m]); got != want {
						t.Fatalf("round %d, read %d: %q, want %q", round, i, got, want)
					}
					next++
					left--
				case m != -int(unix.EAGAIN):
					t.Fatalf("round %d, read %d: result %d, want a frame or -EAGAIN", round, i, m)
				case left > 0:
					t.Fatalf("round %d, read %d found nothing with %d frames queued", round, i, left)
				}
			}
		}
	}
}

func TestReadsReportEachResult(t *testing.T) {
	r := testRing(t, 8)
	res := []int{99, 99, 99}
	if err := r.Reads(-1, frameBufs(2, 8), res); err != nil {
		t.Fatal(err)
	}
	if res[0] != -int(unix.EBADF) || res[1] != -int(unix.EBADF) || res[2] != 99 {
		t.Fatalf("results on a bad descriptor %v, want -EBADF twice and the third untouched", res)
	}
	// The ring goes on after failed reads.
	rd, w := seqpacket(t)
	unix.Write(w, []byte("ok"))
	bufs := frameBufs(1, 8)
	if err := r.Reads(rd, bufs, res); err != nil || res[0] != 2 || string(bufs[0][:2]) != "ok" {
		t.Fatalf("read after failures: %v, result %d, %q", err, res[0], bufs[0])
	}
}

// TestReadsNeverWait reads an empty socket opened blocking: the reads fail
// with -EAGAIN at once.
func TestReadsNeverWait(t *testing.T) {
	r := testRing(t, 4)
	rd, _ := seqpacket(t)
	res := make([]int, 4)
	done := make(chan error, 1)
	go func() { done <- r.Reads(rd, frameBufs(4, 64), res) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Reads waited on an empty socket")
	}
	for i, m := range res {
		if m != -int(unix.EAGAIN) {
			t.Fatalf("read %d of an empty socket: result %d, want -EAGAIN", i, m)
		}
	}
}

func TestReadsRefusesMoreThanTheRingHolds(t *testing.T) {
	r := testRing(t, 2)
	rd, _ := seqpacket(t)
	if err := r.Reads(rd, frameBufs(3, 8), make([]int, 3)); err == nil {
		t.Fatal("three reads on a ring of two: no error")
	}
	if err := r.Reads(rd, frameBufs(2, 8), make([]int, 1)); err == nil {
		t.Fatal("two reads with room for one result: no error")
	}
}

func TestNewRefusesBadSizes(t *testing.T) {
	for _, n := range []int{0, -1, 5000} {
		if r, err := New(n); err == nil {
			r.Close()
			t.Errorf("New(%d): no error", n)
		}
	}
}

func TestClosedRingRefuses(t *testing.T) {
	r, err := New(4)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("this machine forbids io_uring: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	rd, _ := seqpacket(t)
	if err := r.Reads(rd, frameBufs(1, 8), make([]int, 1)); err == nil {
		t.Fatal("Reads on a closed ring: no error")
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// BenchmarkReads compares 16 small frames read from a datagram socket one
// read(2) at a time with the same read through the ring (ns/op is one
// frame, its write by the peer included).
func BenchmarkReads(b *testing.B) {
	const batch = 16
	frame := bytes.Repeat([]byte{7}, 100)
	fill := func(b *testing.B, w int) {
		for range batch {
			if _, err := unix.Write(w, frame); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("read", func(b *testing.B) {
		rd, w := seqpacket(b)
		buf := make([]byte, 256)
		for i := 0; i < b.N; i += batch {
			fill(b, w)
			for range batch {
				if _, err := unix.Read(rd, buf); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("ring", func(b *testing.B) {
		r := testRing(b, batch)
		rd, w := seqpacket(b)
		bufs := frameBufs(batch, 256)
		res := make([]int, batch)
		for i := 0; i < b.N; i += batch {
			fill(b, w)
			if err := r.Reads(rd, bufs, res); err != nil {
				b.Fatal(err)
			}
		}
	})
}
