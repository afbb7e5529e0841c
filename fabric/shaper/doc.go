// Package shaper is a userspace IPv4 router that shapes the traffic
// between hosts: one-way delay, jitter, random loss, a bandwidth limit and
// partitions, per ordered pair of hosts. Each host is a device (in
// practice the TUN of a network namespace, see package fabric) from which
// the Router reads the packets the host sends and to which it writes the
// packets addressed to it. The kernels this project runs on have no
// sch_netem, so this router is the shaper. It works at the IP level, so
// TCP, UDP and anything else over IPv4 pass alike.
//
// # Design
//
// One goroutine per host reads its device into pooled buffers (on Linux
// up to 16 frames in one io_uring submission of reads that never wait,
// instead of a read(2) a frame, and on the runtime's poller when the
// device is empty; package uring; a watcher wakes a reader the poller
// leaves waiting on a readable device while the process is busy), looks up
// the destination host by the packet's destination address and consults
// the link of the pair in a table that SetLink republishes whole through
// an atomic pointer, so the hot path takes no global lock. Down and Loss
// drop the packet there (loss draws come from a PCG seeded with
// Options.Seed and the host's index, one per reader, so no lock either).
// A packet on a link with no delay, jitter or rate, with nothing of its
// pair still queued, is written straight from that buffer: no copy, no
// allocation, no clock read.
//
// Any other packet is given a due time and appended to its pair's FIFO
// queue: a small one copied into a small pooled buffer, a larger one (a TSO
// segment) in the reader's buffer itself, the reader drawing another. Each
// pair that has ever queued a packet has a scheduler goroutine that sleeps
// until the head of its queue is due and then writes every packet that is
// due, in order, in one wake-up. Due times never decrease within a pair, so
// an arriving packet never changes what the scheduler sleeps for; it is
// woken only when its queue goes from empty to non-empty. On Linux it
// sleeps on a timerfd read through the runtime's poller: the runtime's own
// timers are rounded to milliseconds when the process is idle
// (epoll_pwait), a timerfd is not, so packets leave ~50–100 µs after their
// due time instead of up to ~1 ms. A read deadline 100 µs later wakes it
// when the process is too busy to poll (hrsleep.NewDual). Elsewhere it
// uses a time.Timer.
//
// # Timing rules
//
// For a packet of n bytes read at time t on a link L:
//
//	sent = max(t, busy) + n*8/L.Rate  // if L.Rate > 0; busy: when the previous one was sent
//	sent = t                          // otherwise
//	due  = max(prevDue, sent + max(0, L.Delay + N(0, L.Jitter²)))
//
// so a packet arrives after its last bit is sent plus the propagation
// delay, and never before the pair's previous packet (prevDue): pairs are
// FIFO, because TCP collapses under reordering. Jitter is normal with
// standard deviation L.Jitter, clamped so that the delay is never
// negative; since it cannot reorder, a packet that would overtake leaves
// right after its predecessor, which narrows the spread and raises the
// mean when packets are closer together than the jitter. When a pair holds
// Options.QueueLimit packets, new ones are dropped (tail drop); with a
// rate limit the queue, and so the queueing delay, can grow up to that
// limit. A SetLink applies to packets read after it; queued packets keep
// their due time.
//
// # Limits
//
//   - IPv4 only: other packets (IPv6 router solicitations, for one) and
//     packets to addresses of no host are dropped and counted (HostStats).
//     Fragments, options and checksums are neither inspected nor changed.
//   - Loss is independent per packet (no bursts); jitter never reorders.
//   - A pair's scheduler is late by the wake-up latency of its goroutine,
//     which grows when the machine's CPUs are busy, and by the writes
//     before a packet's own and its own; PairStats reports it.
//   - Packets that are still queued when Run stops are discarded.
//   - Devices: each Read returns one packet, each Write takes one, Write
//     is safe for concurrent use and does not block for long. Run stops a
//     device's reads with a read deadline when it has SetReadDeadline;
//     otherwise the caller must close it after cancelling Run's context.
package shaper
