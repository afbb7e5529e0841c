package fabric

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

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
	out, err := exec.Command(h.ip, "-n", h.ns, "-s", "-j", "link", "show", tunName).Output()
	if err != nil {
		t.Fatalf("ip link show: %v", err)
	}
	var links []struct {
		Stats struct {
			TX struct {
				Dropped uint64 `json:"dropped"`
			} `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		t.Fatalf("ip link show: %v in %s", err, out)
	}
	return links[0].Stats.TX.Dropped
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
