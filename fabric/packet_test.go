package fabric

import (
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordlab/scenario/fabric/shaper"
)

// TestPacketWrites runs what a run needs of the shaper with its frames
// delivered through packet sockets: a delay, a stream carried whole in
// segments of many packets (the offsets of their virtio-net headers moved
// past the Ethernet header), and a rejecting cut.
func TestPacketWrites(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts Options
	}{
		{"writes", Options{PacketWrites: true, Engage: true}},
		{"writes, bypass", Options{PacketWrites: true, Bypass: true}},
		{"writes, no offload", Options{PacketWrites: true, Engage: true, NoOffload: true}},
	} {
		t.Run(tt.name, func(t *testing.T) { testPacketWrites(t, tt.opts) })
	}
}

func testPacketWrites(t *testing.T, opts Options) {
	t.Run("delay", func(t *testing.T) {
		f := newFabricWith(t, opts, "a", "b")
		if got := f.Backend(); !strings.Contains(got, "packet sockets") {
			t.Errorf("backend %q does not say the deliveries go through packet sockets", got)
		}
		checkRoundTrip(t, f, "a", "b", 25*time.Millisecond, 30)
	})
	t.Run("segments", func(t *testing.T) {
		f := newFabricWith(t, opts, "a", "b")
		if opts.Bypass {
			// Through the shaper, which delivers through the veth.
			both(f, "a", "b", shaper.Link{Delay: time.Millisecond})
		}
		payload := make([]byte, 8<<20)
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
		sendIntact(t, f, payload, sha256.Sum256(payload))
		perFrame := float64(len(payload)) / float64(f.Stats()["a>b"].Forwarded)
		t.Logf("%.0f bytes of payload a frame", perFrame)
		switch {
		case opts.NoOffload && perFrame > 1500:
			t.Errorf("%.0f bytes a frame without offloads, more than the MTU", perFrame)
		case !opts.NoOffload && perFrame < 4*1500:
			t.Errorf("%.0f bytes a frame, want segments of several packets", perFrame)
		}
		if d, err := f.Drops(); err != nil || d != 0 {
			t.Errorf("Drops() = %d, %v; want none", d, err)
		}
	})
	t.Run("drops", func(t *testing.T) {
		f := newFabricWith(t, opts, "a", "b")
		if opts.Bypass {
			both(f, "a", "b", shaper.Link{Delay: time.Millisecond})
		}
		// A host that takes nothing from its delivering veth: every frame
		// delivered to it is a drop no link declared.
		b := f.Host("b")
		if err := runIP(t.Context(), f.ip, "-n", b.ns, "link", "set", deliverName, "down"); err != nil {
			t.Fatal(err)
		}
		c, err := dialIn(t.Context(), f.Host("a").NetnsPath(), "udp", netip.AddrPortFrom(b.Addr, 9).String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		const sent = 20
		for range sent {
			if _, err := c.Write([]byte("lost")); err != nil {
				t.Fatal(err)
			}
		}
		var d uint64
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if d, err = f.Drops(); err != nil || d >= sent {
				break
			}
		}
		if err != nil || d != sent {
			t.Errorf("Drops() = %d, %v after %d datagrams to a host whose delivering veth is down; want %d", d, err, sent, sent)
		}
	})
	t.Run("reject", func(t *testing.T) {
		f := newFabricWith(t, opts, "a", "b")
		e := dialEcho(t, f, "a", "b")
		e.roundTrips(t, 3)
		if err := f.SetLink(f.Host("a"), f.Host("b"), shaper.Link{Down: true, Reject: true}); err != nil {
			t.Fatal(err)
		}
		e.c.SetDeadline(time.Now().Add(10 * time.Second))
		var err error
		for err == nil {
			_, err = e.c.Write([]byte("ping\n"))
			if err == nil {
				_, err = e.r.ReadString('\n')
			}
		}
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
			t.Errorf("the connection ended with %v, want a reset", err)
		}
	})
}

// TestPacketWritesRefused checks that delivery through packet sockets is
// refused where it is not built, rather than done wrong.
func TestPacketWritesRefused(t *testing.T) {
	needFabric(t)
	if _, err := New(context.Background(), []HostSpec{{Name: "a"}}, Options{PacketWrites: true, Kernel: true}); err == nil || !strings.Contains(err.Error(), "packet sockets") {
		t.Errorf("New with the kernel backend = %v, want a refusal", err)
	}
	if _, err := New(context.Background(), []HostSpec{{Name: "a", AttachPID: os.Getpid()}}, Options{PacketWrites: true, RunID: "refused"}); err == nil || !strings.Contains(err.Error(), "packet sockets") {
		t.Errorf("New on an attached namespace = %v, want a refusal", err)
	}
}
