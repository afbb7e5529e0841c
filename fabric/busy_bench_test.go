package fabric

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/coordlab/scenario/fabric/shaper"
	"github.com/coordlab/scenario/internal/cpuhog"
)

var (
	busyYielders   = flag.Int("busy.yielders", 2, "goroutines that keep BenchmarkBusyRoundTrip's Ps busy in its busy case, yielding between 20 µs turns")
	busyPlainReads = flag.Bool("busy.plain-reads", false, "BenchmarkBusyRoundTrip's shaper reads each frame with read(2), as where io_uring is missing or forbidden")
	busyPackets    = flag.Bool("busy.packet-writes", false, "BenchmarkBusyRoundTrip's shaper delivers through packet sockets (Options.PacketWrites), for timing what that adds to a round trip")
)

// BenchmarkBusyRoundTrip times TCP round trips over a link of 20 ms RTT,
// with the process idle and with its Ps kept busy by yielding goroutines
// (cpuhog.Yielders), beside the shaper's own lateness. The shaper, the echo
// server and the client all run in this process, as the shaper and the
// load generator share the runner's: a goroutine waiting on the runtime's
// poller (a TUN device's reader, a socket's) is woken up to 10 ms late
// while both Ps have goroutines to run, and the shaper's lateness, timed
// from when a frame is read, does not see it. rtt-excess-* is the round
// trip over the link's 20 ms. Run it with -benchtime 300x (b.N round
// trips; the percentiles need a few hundred).
func BenchmarkBusyRoundTrip(b *testing.B) {
	const delay = 10 * time.Millisecond
	for _, busy := range []bool{false, true} {
		b.Run(fmt.Sprintf("busy=%t", busy), func(b *testing.B) {
			f := newFabricWith(b, Options{PlainReads: *busyPlainReads, PacketWrites: *busyPackets}, "a", "b")
			both(f, "a", "b", shaper.Link{Delay: delay})
			e := dialEcho(b, f, "a", "b")
			e.roundTrips(b, 10)
			if busy {
				cpuhog.Yielders(b, *busyYielders)
			}
			n := b.N
			b.ResetTimer()
			rtts := e.roundTrips(b, n)
			b.StopTimer()
			slices.Sort(rtts)
			// The whole shaper's, as a run's network_late_p99_ms is.
			_, _, late, _ := f.router.Lateness().Summary()
			ms := func(d time.Duration) float64 { return float64(d-2*delay) / 1e6 }
			b.ReportMetric(ms(rtts[n/2]), "rtt-excess-p50-ms")
			b.ReportMetric(ms(rtts[n*99/100]), "rtt-excess-p99-ms")
			b.ReportMetric(float64(late)/1e6, "shaper-late-p99-ms")
			b.ReportMetric(float64(f.router.ReadersWoken())/float64(n), "readers-woken/rtt")
		})
	}
}
