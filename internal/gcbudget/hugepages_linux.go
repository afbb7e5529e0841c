package gcbudget

import (
	"os"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePageSize is the size of a transparent huge page on the machines
// this project runs on (x86-64 and arm64 with 4 KiB base pages).
const hugePageSize = 2 << 20

// hugePagesAdvised reports whether the kernel gives transparent huge pages
// to mappings that ask for them (the setting is "always" or "madvise").
func hugePagesAdvised(read func(string) ([]byte, error)) bool {
	b, err := read("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return false
	}
	s := string(b)
	return strings.Contains(s, "[always]") || strings.Contains(s, "[madvise]")
}

// advisedRange is the part of [p, p+n) made of whole huge pages.
func advisedRange(p, n uintptr) (beg, end uintptr) {
	beg = (p + hugePageSize - 1) &^ (hugePageSize - 1)
	end = (p + n) &^ (hugePageSize - 1)
	if end < beg {
		end = beg
	}
	return beg, end
}

// growHeapHuge grows the heap by n bytes of address space the kernel backs
// with huge pages when they are first touched, and returns how many bytes
// it advised.
//
// Why: the headroom is memory the heap grows into and touches page by
// page, and on the paravirtualised machines this project runs on each 4
// KiB page costs a fault of 8-16 µs (BenchmarkFreshPages), which at 1000
// clients came to 0.3 faults and several µs of CPU per request over etcd's
// tool. A 2 MiB page is one fault for 512 of them. Go's heap never asks
// for huge pages itself, so a machine whose setting is "madvise" (the
// kernel's default) never gives it any.
//
// How: a large allocation maps new arena memory without touching it (the
// runtime knows fresh memory is zero); that range is advised MADV_HUGEPAGE
// and the allocation dropped and collected, so its pages go back to the
// runtime's free pages, where the next spans are allocated from, still
// untouched. The runtime maps its arenas with MAP_FIXED in 4 MiB steps, so
// memory it maps later does not inherit the advice: only this range is
// advised, which is why it is made as large as the headroom.
func growHeapHuge(n uint64) uint64 {
	if n < hugePageSize || !hugePagesAdvised(os.ReadFile) {
		return 0
	}
	b := make([]byte, n)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	beg, end := advisedRange(p, uintptr(n))
	advised := uint64(0)
	if beg < end && unix.Madvise(b[beg-p:end-p], unix.MADV_HUGEPAGE) == nil {
		advised = uint64(end - beg)
	}
	runtime.KeepAlive(b)
	// One collection frees the range now, instead of the heap counting it
	// as live until the next one and growing over it into unadvised pages.
	runtime.GC()
	return advised
}
