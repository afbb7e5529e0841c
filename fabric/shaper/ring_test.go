//go:build linux

package shaper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/uring"
	"golang.org/x/sys/unix"
)

// fdDev is a device backed by a file descriptor, as a TUN device is: one
// end of a SOCK_SEQPACKET socket pair, which keeps frames whole, opened
// non-blocking for the runtime's poller. The router reads and writes dev;
// the test writes what the host sends to peer and reads what it receives.
type fdDev struct {
	dev  *os.File
	peer int
}

func newFDDev(t *testing.T) *fdDev {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 8<<20); err != nil {
			t.Fatal(err)
		}
	}
	// The test's end blocks: it waits for what the router writes.
	if err := unix.SetNonblock(fds[1], false); err != nil {
		t.Fatal(err)
	}
	d := &fdDev{dev: os.NewFile(uintptr(fds[0]), "seqpacket"), peer: fds[1]}
	t.Cleanup(func() { d.dev.Close(); unix.Close(d.peer) })
	return d
}

// TestReadsThroughRing sends frames of every size class over a delayed link
// and a direct one, and checks they arrive whole and in order, with both
// devices read through an io_uring (or, with PlainReads, neither), and
// both readers watched (readerWatch) whichever way they read. A burst
// makes each wake-up of the reader find many; a trickle, frames a few
// microseconds apart, makes batches start on an empty device and find
// frames that arrive while they run (a reader that waited on its first
// read alone lost such frames).
func TestReadsThroughRing(t *testing.T) {
	if r, err := uring.New(ringReadBufs); errors.Is(err, uring.ErrUnsupported) {
		t.Skipf("this machine forbids io_uring: %v", err)
	} else if err != nil {
		t.Fatal(err)
	} else {
		r.Close()
	}
	for _, tc := range []struct {
		name    string
		plain   bool
		link    Link
		n       int
		trickle bool
	}{
		{"ring/delayed", false, Link{Delay: 5 * time.Millisecond}, 2000, false},
		{"ring/direct", false, Link{}, 2000, false},
		{"ring/direct/trickle", false, Link{}, 20000, true},
		{"plain/delayed", true, Link{Delay: 5 * time.Millisecond}, 2000, false},
	} {
		plain, n, trickle := tc.plain, tc.n, tc.trickle
		t.Run(tc.name, func(t *testing.T) {
			r := New(Options{PlainReads: plain})
			devs := []*fdDev{newFDDev(t), newFDDev(t)}
			for i, d := range devs {
				if err := r.AddHost(hostID(i), hostAddr(i), d.dev); err != nil {
					t.Fatal(err)
				}
			}
			r.SetLink(hostID(0), hostID(1), tc.link)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()

			sizes := []int{60, 1400, smallFrame + 1, 9000}
			sent := make([][]byte, n)
			for k := range n {
				p := ipv4(0, 1, sizes[k%len(sizes)], uint32(k))
				for i := 24; i < len(p); i++ {
					p[i] = byte(k*7 + i)
				}
				sent[k] = p
			}
			// Sent as fast as the devices take them (or 0-6 µs apart), while
			// this goroutine reads: a direct link writes from the reader,
			// which waits while the receiving end is full.
			sendErr := make(chan error, 1)
			go func() {
				for k, p := range sent {
					if trickle {
						gap := time.Duration(k%7) * time.Microsecond
						for start := time.Now(); time.Since(start) < gap; {
						}
					}
					for {
						_, err := unix.Write(devs[0].peer, p)
						if err == nil {
							break
						}
						if err != unix.EAGAIN {
							sendErr <- err
							return
						}
						time.Sleep(100 * time.Microsecond)
					}
				}
				sendErr <- nil
			}()
			buf := make([]byte, maxPacket)
			tv := unix.NsecToTimeval(int64(10 * time.Second))
			if err := unix.SetsockoptTimeval(devs[1].peer, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
				t.Fatal(err)
			}
			for k := range n {
				m, err := unix.Read(devs[1].peer, buf)
				// A read under SO_RCVTIMEO is not restarted after a
				// signal (signal(7)), and the Go runtime sends its
				// threads preemption signals: a CI run failed here
				// on EINTR.
				for err == unix.EINTR {
					m, err = unix.Read(devs[1].peer, buf)
				}
				if err != nil {
					t.Fatalf("frame %d of %d: %v", k, n, err)
				}
				if !bytes.Equal(buf[:m], sent[k]) {
					t.Fatalf("frame %d: got %d bytes (seq %d), want %d bytes (seq %d): out of order or torn", k, m, seqOf(buf[:m]), len(sent[k]), k)
				}
			}
			if err := <-sendErr; err != nil {
				t.Fatal(err)
			}
			waitFor(t, time.Second, "stats settled", func() bool { return r.Stats()[[2]int{hostID(0), hostID(1)}].Forwarded == uint64(n) })
			if st := r.Stats()[[2]int{hostID(0), hostID(1)}]; st.WriteErrors != 0 {
				t.Errorf("stats %+v, want no write errors", st)
			}
			if readers, want := r.RingReaders(), map[bool]int{false: 2, true: 0}[plain]; readers != want {
				t.Errorf("%d hosts read through a ring, want %d", readers, want)
			}
			// Either way the watcher knows both readers, and that they
			// wait on the poller once the devices are empty.
			waitFor(t, 10*time.Second, "both readers watched and parked", func() bool { return r.watch.parked() == 2 })
		})
	}
}

// TestReaderStopsOnClosedDevice closes a device while its reader waits on
// the poller, as a host's teardown may before the router's context ends:
// the reader stops without an error and the router goes on with the other
// host, whichever way it reads. Readers read through the device's raw
// connection, whose error for a closed file is not os.ErrClosed.
func TestReaderStopsOnClosedDevice(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "ring", true: "plain"}[plain], func(t *testing.T) {
			r := New(Options{PlainReads: plain})
			devs := []*fdDev{newFDDev(t), newFDDev(t)}
			for i, d := range devs {
				if err := r.AddHost(hostID(i), hostAddr(i), d.dev); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			waitFor(t, 10*time.Second, "both readers watched and parked", func() bool { return r.watch.parked() == 2 })

			if err := devs[0].dev.Close(); err != nil {
				t.Fatal(err)
			}
			var stopped error
			waitFor(t, 10*time.Second, "the closed device's reader to stop", func() bool {
				select {
				case err := <-done:
					stopped = fmt.Errorf("Run returned %v", err)
					return true
				default:
					return r.watch.watching() == 1
				}
			})
			if stopped != nil {
				t.Fatalf("the router stopped with its context still live (%v): one closed device stopped every reader", stopped)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run after a device closed and the context ended: %v, want nil", err)
			}
		})
	}
}
