package fabric

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/fabric/shaper"
)

// TestSegmentationOffload streams data over TCP from a to b and counts the
// frames the shaper forwarded: with the offload, the kernel hands over
// segments of many packets each, until a link that acts per packet (loss
// here) turns it off for its source, when frames are of the MTU again, as
// with NoOffload. Every byte must arrive intact whichever way, through
// checksums left to the receiver included.
func TestSegmentationOffload(t *testing.T) {
	const (
		size = 8 << 20
		mtu  = 1500
	)
	payload := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range payload {
		payload[i] = byte(rng.Uint32())
	}
	want := sha256.Sum256(payload)
	// At most this many bytes per frame means no segmentation offload.
	tests := []struct {
		name      string
		opts      Options
		loss      bool // a lossy link a>b
		cleared   bool // and then an unshaped one again
		lossBack  bool // a lossy link b>a: b's device takes segments without making them
		segmented bool // frames carry several packets' worth on average
	}{
		{"offload", Options{}, false, false, false, true},
		{"no offload", Options{NoOffload: true}, false, false, false, false},
		{"offload, lossy link", Options{}, true, false, false, false},
		{"offload, lossy link cleared", Options{}, true, true, false, true},
		{"offload, lossy link back", Options{}, false, false, true, true},
		{"no offload, engaged", Options{NoOffload: true, Engage: true}, false, false, false, false},
		{"offload, engaged", Options{Engage: true}, false, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFabricWith(t, tt.opts, "a", "b")
			if tt.loss {
				// A draw that never drops, but a link that acts per packet.
				if err := f.SetLink(f.Host("a"), f.Host("b"), shaper.Link{Loss: 1e-12}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.lossBack {
				if err := f.SetLink(f.Host("b"), f.Host("a"), shaper.Link{Loss: 1e-12}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.cleared {
				if err := f.SetLink(f.Host("a"), f.Host("b"), shaper.Link{}); err != nil {
					t.Fatal(err)
				}
			}
			sendIntact(t, f, payload, want)
			frames := f.Stats()["a>b"].Forwarded
			perFrame := float64(size) / float64(frames)
			t.Logf("%d MiB in %d frames a>b: %.0f bytes of payload per frame", size>>20, frames, perFrame)
			if tt.segmented && perFrame < 4*mtu {
				t.Errorf("%.0f bytes per frame with the offload, want segments of several packets (> %d)", perFrame, 4*mtu)
			}
			if !tt.segmented && perFrame > mtu {
				t.Errorf("%.0f bytes per frame, more than the MTU of %d: segments were not cut", perFrame, mtu)
			}
		})
	}
}

// sendIntact streams payload over TCP from host a to host b and fails
// unless b receives bytes whose sha256 is want.
func sendIntact(t *testing.T, f *Fabric, payload []byte, want [32]byte) {
	t.Helper()
	addr, ln, _ := listenIn(t, f.Host("b"), "tcp")
	got := make(chan [32]byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- [32]byte{}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		h := sha256.New()
		io.Copy(h, c)
		got <- [32]byte(h.Sum(nil))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := f.Host("a").Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(c, bytes.NewReader(payload)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if h := <-got; h != want {
		t.Fatalf("b received other bytes than a sent (sha256 %x, want %x)", h[:8], want[:8])
	}
}

// TestRejectSegment cuts a TCP stream carried as segments of many packets
// with a rejecting partition: the reset the shaper answers a 64 KiB
// segment with must end the sender's connection at once, as it does for
// a packet of the MTU.
func TestRejectSegment(t *testing.T) {
	f := newFabricWith(t, Options{}, "a", "b")
	addr, ln, _ := listenIn(t, f.Host("b"), "tcp")
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		io.Copy(io.Discard, c)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := f.Host("a").Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	chunk := make([]byte, 256<<10)
	var sent int
	for sent < 8<<20 {
		n, err := c.Write(chunk)
		sent += n
		if err != nil {
			t.Fatalf("write before the cut: %v", err)
		}
	}
	st := f.Stats()["a>b"]
	if perFrame := float64(sent) / float64(st.Forwarded); perFrame < 4*1500 {
		t.Fatalf("%.0f bytes per frame before the cut: no segments to reject", perFrame)
	}
	if err := f.SetLink(f.Host("a"), f.Host("b"), shaper.Link{Down: true, Reject: true}); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	var werr error
	for werr == nil {
		_, werr = c.Write(chunk)
	}
	if errors.Is(werr, os.ErrDeadlineExceeded) {
		t.Fatalf("the sender still had its connection 10 s after a rejecting cut (%d rejected)", f.Stats()["a>b"].Rejected)
	}
	t.Logf("the sender's write failed %s after the cut: %v", time.Since(cut).Round(time.Millisecond), werr)
	if !errors.Is(werr, syscall.ECONNRESET) && !errors.Is(werr, syscall.EPIPE) {
		t.Errorf("the sender's write failed with %v, want a reset", werr)
	}
	if r := f.Stats()["a>b"].Rejected; r == 0 {
		t.Error("no packet was answered with a reset")
	}
}
