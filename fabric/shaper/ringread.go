package shaper

import (
	"context"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/coordlab/scenario/internal/uring"
)

// ringReadBufs is how many frames one wake-up of a host's reader reads at
// most, into buffers of the largest frame (80 KiB each).
const ringReadBufs = 16

// ringReadLoop reads h's device through an io_uring: up to ringReadBufs
// frames in one system call, none of which waits (uring.Ring.Reads),
// instead of one read(2) a frame; when the device is empty it waits on the
// runtime's poller, as an *os.File's Read does. It reports false, having
// read nothing, where that cannot be done, and readLoop reads with read(2).
// It stops as readLoop does.
func (r *Router) ringReadLoop(ctx context.Context, h *host) (bool, error) {
	sc, ok := h.dev.(syscall.Conn)
	dl, _ := h.dev.(deadliner)
	if r.opts.PlainReads || !ok || dl == nil {
		return false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, nil
	}
	ring, err := uring.New(ringReadBufs)
	if err != nil {
		r.readsPlain(err)
		return false, nil
	}
	defer ring.Close()
	stop := context.AfterFunc(ctx, func() { dl.SetReadDeadline(time.Now()) })
	defer stop()
	wait, unwatch := r.watched(rc, dl)
	defer unwatch()
	pks := make([]*packet, ringReadBufs)
	bufs := make([][]byte, ringReadBufs)
	for i := range pks {
		pks[i] = getLarge()
		bufs[i] = pks[i].b[:cap(pks[i].b)]
	}
	defer func() {
		for _, pk := range pks {
			putPacket(pk)
		}
	}()
	res := make([]int, ringReadBufs)
	r.ringReaders.Add(1)
	rng := rand.New(rand.NewPCG(uint64(r.opts.Seed), uint64(h.idx)))
	// How many frames to ask for: twice what the last wake-up found, so
	// that an idle device costs few reads that find nothing.
	want := 2
	readAny := false
	for {
		var readErr error
		// RawConn.Read holds the descriptor while the ring reads it, and
		// waits on the poller for the device to have a frame whenever no
		// read found one.
		err := rc.Read(func(fd uintptr) bool {
			wait.parked.Store(false)
			readErr = ring.Reads(int(fd), bufs[:want], res[:want])
			if readErr != nil || !allAgain(res[:want]) {
				return true
			}
			// Waits on the poller next.
			wait.parked.Store(true)
			return false
		})
		if err == nil {
			err = readErr
		}
		if err != nil {
			if strayDeadline(ctx, dl, err) {
				continue
			}
			return true, r.readErr(ctx, h, err)
		}
		got := 0
		for i, n := range res[:want] {
			switch {
			case n > 0:
				got++
				readAny = true
				h.read.Add(1)
				rb := readBuf{pk: pks[i], n: n}
				r.route(ctx, h, &rb, rng)
				// A large frame queued keeps its buffer (readBuf.take).
				if rb.pk != pks[i] {
					pks[i] = rb.pk
					bufs[i] = rb.pk.b[:cap(rb.pk.b)]
				}
			case n == -int(syscall.EAGAIN), n == 0:
			case !readAny && (n == -int(syscall.EINVAL) || n == -int(syscall.EOPNOTSUPP)):
				// A kernel whose io_uring lacks these reads (before
				// Linux 5.6): nothing was read, so read(2) takes over.
				r.ringReaders.Add(-1)
				r.readsPlain(syscall.Errno(-n))
				return false, nil
			default:
				return true, r.readErr(ctx, h, syscall.Errno(-n))
			}
		}
		want = min(max(2*got, 2), ringReadBufs)
	}
}

// watched registers the reader of rc with the router's watcher, by its
// descriptor's number: if the device closes first, the watcher polls a
// closed or reused descriptor until the reader stops, which at worst wakes
// the reader for nothing. The reader reports through wait whether it waits
// on the poller; unwatch ends the watch.
func (r *Router) watched(rc syscall.RawConn, dl deadliner) (wait *readerWait, unwatch func()) {
	var fd int32 = -1
	rc.Control(func(f uintptr) { fd = int32(f) })
	if fd < 0 {
		return &readerWait{}, func() {}
	}
	wait = r.watch.add(fd, dl)
	return wait, func() { r.watch.remove(wait) }
}

// allAgain reports whether every read of a batch found the device empty.
// Not the first read alone: a frame that arrives while the batch runs is
// taken by a later read after the first found nothing, and waiting for the
// next wake-up would drop it (a CI run lost one of 2,000 frames so).
func allAgain(res []int) bool {
	for _, n := range res {
		if n != -int(syscall.EAGAIN) {
			return false
		}
	}
	return true
}

// readsPlain logs, once a Run, why readers read frame by frame.
func (r *Router) readsPlain(reason error) {
	r.plainReads.Do(func() { r.log.Info("shaper reads each frame with read(2)", "reason", reason) })
}
