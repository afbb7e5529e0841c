package fabric

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/coordlab/scenario/internal/uring"
	"github.com/vishvananda/netlink"
)

// setDeviceQueue sets the TUN device's queue in h's namespace to n frames.
func setDeviceQueue(t *testing.T, h *Host, n int) {
	t.Helper()
	err := inNetns(h.NetnsPath(), func() error {
		return withTUN(func(nl *netlink.Handle, tun netlink.Link) error { return nl.LinkSetTxQLen(tun, n) })
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ipDrops is the TUN device's transmit drops in h's namespace as iproute2
// reports them: a reading made another way than Drops'.
func ipDrops(t *testing.T, h *Host) uint64 {
	t.Helper()
	return ipTX(t, h).Dropped
}

// ipTX is the TUN device's transmit counters in h's namespace as iproute2
// reports them. A TUN device transmits a frame when its reader reads it.
func ipTX(t *testing.T, h *Host) (tx struct{ Packets, Dropped uint64 }) {
	t.Helper()
	out, err := exec.Command(h.ip, "-n", h.ns, "-s", "-j", "link", "show", tunName).Output()
	if err != nil {
		t.Fatalf("ip link show: %v", err)
	}
	var links []struct {
		Stats struct {
			TX struct {
				Packets uint64 `json:"packets"`
				Dropped uint64 `json:"dropped"`
			} `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		t.Fatalf("ip link show: %v in %s", err, out)
	}
	tx.Packets, tx.Dropped = links[0].Stats.TX.Packets, links[0].Stats.TX.Dropped
	return tx
}

// burst sends n datagrams from a to addr back to back.
func burst(t *testing.T, f *Fabric, from, addr string, n int) {
	t.Helper()
	c, err := f.Host(from).DialNetwork(context.Background(), "udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range n {
		if _, err := c.Write([]byte(fmt.Sprintf("datagram %d", i))); err != nil {
			t.Fatal(err)
		}
	}
}

// Drops counts the frames a device dropped for want of room, as the kernel
// counts them: with a queue of one frame, bursts overrun it.
func TestDropsCountsOverruns(t *testing.T) {
	f := newFabric(t, "a", "b")
	addr, _, _ := listenIn(t, f.Host("b"), "udp")
	setDeviceQueue(t, f.Host("a"), 1)
	var n uint64
	for deadline := time.Now().Add(30 * time.Second); n == 0 && time.Now().Before(deadline); {
		burst(t, f, "a", addr, 2000)
		var err error
		if n, err = f.Drops(); err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 {
		t.Fatal("no drop counted after bursts of 2,000 datagrams into a device queue of one frame")
	}
	if ip := ipDrops(t, f.Host("a")); ip != n {
		t.Errorf("Drops counts %d, ip shows %d transmit drops on a's device", n, ip)
	}
	t.Logf("%d frames dropped, as ip counts them", n)
}

// Frames counts every frame the shaper read, as the kernel counts what the
// devices handed to their reader, and Close finds the two counts equal. The datagrams go out one by one, a few
// microseconds apart, so that the reader often finds its device empty and
// frames arrive while it reads: a ring reader that lost frames so (read by
// a batch whose first read found nothing) counted 1 to 5 fewer than the
// kernel in each of three runs.
func TestFramesCountsWhatDevicesSent(t *testing.T) {
	// With the devices read in batches through io_uring where the kernel
	// has it, and by read(2): the count must be the same either way.
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "ring", true: "plain"}[plain], func(t *testing.T) {
			f := newFabricWith(t, Options{PlainReads: plain}, "a", "b")
			addr, _, _ := listenIn(t, f.Host("b"), "udp")
			const n = 20000
			burst(t, f, "a", addr, n)
			var frames, ip, dropped uint64
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				// The device's count first: Frames can only have grown since.
				a, b := ipTX(t, f.Host("a")), ipTX(t, f.Host("b"))
				ip, dropped = a.Packets+b.Packets, a.Dropped+b.Dropped
				if frames = f.Frames(); frames == ip && ip+dropped >= n {
					break
				}
			}
			// A device drops what overflows its queue while the reader
			// is behind (Drops): those frames were never read.
			if frames != ip || ip+dropped < n {
				t.Fatalf("Frames counts %d, the devices handed their reader %d and dropped %d; want the same count, and the %d datagrams sent among them", frames, ip, dropped, n)
			}
			// Once stopped, the fabric makes the same comparison itself.
			if err := f.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if rc := f.Reads(); !rc.Checked || rc.Lost != 0 || rc.Frames < ip {
				t.Errorf("Reads: %+v; want checked, at least the %d frames the devices had handed the shaper, none lost", rc, ip)
			}
			readers := f.router.RingReaders()
			t.Logf("%d frames read, as ip counts them, %d dropped by the devices; %d devices read through io_uring", frames, dropped, readers)
			if plain && readers != 0 {
				t.Errorf("plain reads: %d devices read through io_uring, want none", readers)
			}
			if !plain && uringReads(t) && readers != 2 {
				t.Errorf("%d devices read through io_uring, want both", readers)
			}
		})
	}
}

// uringReads reports whether the shaper can read devices through io_uring
// here (package uring).
func uringReads(t *testing.T) bool {
	ring, err := uring.New(1)
	if err != nil {
		t.Logf("the shaper reads frame by frame here: %v", err)
		return false
	}
	ring.Close()
	return true
}
