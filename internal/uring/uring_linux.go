//go:build linux

package uring

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The layouts and constants of linux/io_uring.h that Ring uses.
type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	rwFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFDIn  int32
	addr3       uint64
	_           uint64
}

type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

const (
	opRead         = 22     // IORING_OP_READ
	rwfNowait      = 0x8    // RWF_NOWAIT: a request that would wait fails with EAGAIN instead
	featSingleMmap = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	offSQRing      = 0
	offCQRing      = 0x8000000
	offSQEs        = 0x10000000
	enterGetEvents = 1 << 0
	// atCurrentPos is the offset -1: the file's own position, which a
	// stream (a TUN device, a pipe, a socket) has none of.
	atCurrentPos = ^uint64(0)
)

// Ring is one io_uring instance for batches of reads: a submission queue
// of Size entries and a completion queue twice as long. Its methods must
// not be called concurrently.
type Ring struct {
	fd                  int
	sqMem, cqMem, sqMap []byte
	sqHead, sqTail      *uint32 // the kernel moves head, we move tail
	sqMask              uint32
	sqArray             []uint32
	sqes                []sqe
	cqHead, cqTail      *uint32 // we move head, the kernel moves tail
	cqMask              uint32
	cqes                []cqe
	size                int
	broken              error // set when the ring may hold requests we no longer track
}

// New sets up a ring that can take entries reads in one call (rounded up
// to a power of two by the kernel). It returns an error wrapping
// ErrUnsupported where io_uring cannot be used.
func New(entries int) (*Ring, error) {
	if entries <= 0 || entries > 4096 {
		return nil, fmt.Errorf("uring: %d entries: want 1 to 4096", entries)
	}
	var p params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		if errno == unix.ENOSYS || errno == unix.EPERM || errno == unix.EACCES {
			return nil, fmt.Errorf("%w: io_uring_setup: %v", ErrUnsupported, errno)
		}
		return nil, fmt.Errorf("uring: io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd), size: int(p.sqEntries)}
	if err := r.mapRings(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mapRings(p *params) error {
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*int(unsafe.Sizeof(cqe{}))
	if p.features&featSingleMmap != 0 {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.sqMem, err = mmap(r.fd, offSQRing, sqSize); err != nil {
		return err
	}
	r.cqMem = r.sqMem
	if p.features&featSingleMmap == 0 {
		if r.cqMem, err = mmap(r.fd, offCQRing, cqSize); err != nil {
			return err
		}
	}
	if r.sqMap, err = mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{}))); err != nil {
		return err
	}
	r.sqHead = word(r.sqMem, p.sqOff.head)
	r.sqTail = word(r.sqMem, p.sqOff.tail)
	r.sqMask = *word(r.sqMem, p.sqOff.ringMask)
	r.sqArray = unsafe.Slice(word(r.sqMem, p.sqOff.array), p.sqEntries)
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&r.sqMap[0])), p.sqEntries)
	r.cqHead = word(r.cqMem, p.cqOff.head)
	r.cqTail = word(r.cqMem, p.cqOff.tail)
	r.cqMask = *word(r.cqMem, p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&r.cqMem[p.cqOff.cqes])), p.cqEntries)
	return nil
}

func mmap(fd int, off int64, size int) ([]byte, error) {
	b, err := unix.Mmap(fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("uring: map ring at %#x: %w", off, err)
	}
	return b, nil
}

func word(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }

// Size is how many reads one Reads call takes at most.
func (r *Ring) Size() int { return r.size }

// Reads reads fd into each of bufs with a read of its own, in order, in one
// system call: on a TUN device, one frame into each buffer, as read(2)
// does. res[i] gets what the read into bufs[i] returned: the bytes read,
// or a negative errno. A read that finds nothing to read fails with
// -EAGAIN at once (RWF_NOWAIT); the ones after it are still made, and may
// find frames that arrived meanwhile, so the frames read, in the order of
// bufs, are in the order the device holds them. The reads are not linked:
// linked requests start each other from the kernel's task work, which may
// reschedule between them (README, Benchmarks). Reads returns an error
// only when the ring itself failed, after which it must not be used again;
// bufs must not be used until it returns.
func (r *Ring) Reads(fd int, bufs [][]byte, res []int) error {
	if r.broken != nil {
		return r.broken
	}
	if len(bufs) > r.size || len(res) < len(bufs) {
		return fmt.Errorf("uring: %d reads with room for %d results on a ring of %d", len(bufs), len(res), r.size)
	}
	// The kernel writes into bufs until the reads complete.
	defer runtime.KeepAlive(bufs)
	tail := *r.sqTail
	for i, b := range bufs {
		idx := tail & r.sqMask
		e := sqe{opcode: opRead, fd: int32(fd), off: atCurrentPos, len: uint32(len(b)), rwFlags: rwfNowait, userData: uint64(i)}
		if len(b) > 0 {
			e.addr = uint64(uintptr(unsafe.Pointer(&b[0])))
		}
		r.sqes[idx] = e
		r.sqArray[idx] = idx
		tail++
	}
	// Publishes the entries before the kernel can see the new tail.
	atomic.StoreUint32(r.sqTail, tail)
	// Submitted without telling the runtime of a system call: the reads
	// complete within it (none waits, RWF_NOWAIT), and a batch of 16 large
	// frames can take long enough for the runtime to hand this goroutine's
	// processor to another thread and make it win one back afterwards.
	pending := tail - atomic.LoadUint32(r.sqHead)
	_, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(pending), 0, 0, 0, 0)
	if err := r.enterFailed(errno); err != nil {
		return err
	}
	// Should a completion come late all the same, it is waited for as a
	// blocking system call is.
	for done := r.reap(res); done < len(bufs); {
		pending := tail - atomic.LoadUint32(r.sqHead)
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(pending), uintptr(len(bufs)-done), enterGetEvents, 0, 0)
		if err := r.enterFailed(errno); err != nil {
			return err
		}
		done += r.reap(res)
	}
	return nil
}

// enterFailed returns the error an io_uring_enter's errno means for the
// ring, marking it broken if any.
func (r *Ring) enterFailed(errno unix.Errno) error {
	switch errno {
	case 0, unix.EINTR:
		// Interrupted while waiting (the runtime's preemption signals):
		// what was submitted stays submitted; the caller submits the rest
		// and waits again.
		return nil
	case unix.EAGAIN, unix.EBUSY:
		// Out of kernel resources for now: completions reaped make room.
		return nil
	}
	// The entries may still be in the queue; nothing may use the ring
	// again.
	r.broken = fmt.Errorf("uring: io_uring_enter: %w", errno)
	return r.broken
}

// reap records every completion the kernel has posted and returns how many.
func (r *Ring) reap(res []int) int {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail; head++ {
		c := &r.cqes[head&r.cqMask]
		if i := c.userData; i < uint64(len(res)) {
			res[i] = int(c.res)
		}
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
}

// Close releases the ring.
func (r *Ring) Close() error {
	var errs []error
	if r.sqMap != nil {
		errs = append(errs, unix.Munmap(r.sqMap))
	}
	if r.cqMem != nil && unsafe.SliceData(r.cqMem) != unsafe.SliceData(r.sqMem) {
		errs = append(errs, unix.Munmap(r.cqMem))
	}
	if r.sqMem != nil {
		errs = append(errs, unix.Munmap(r.sqMem))
	}
	r.sqMap, r.cqMem, r.sqMem = nil, nil, nil
	if r.fd >= 0 {
		errs = append(errs, unix.Close(r.fd))
		r.fd = -1
	}
	if r.broken == nil {
		r.broken = errors.New("uring: ring closed")
	}
	return errors.Join(errs...)
}
