package bench

import (
	"flag"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var (
	pagesSize = flag.Int("pages.mib", 64, "BenchmarkFreshPages: MiB of memory touched per measurement")
	pagesIdle = flag.Duration("pages.idle", 5*time.Second, "BenchmarkFreshPages: how long freed memory lies unused before the last measurement")
)

// BenchmarkFreshPages is a machine reference for the page faults `make
// bench` counts: the CPU one thread spends per 4 KiB page it touches for
// the first time in a new anonymous mapping (a minor fault, and the
// kernel zeroing the page), in three cases:
//
//   - first: the first mapping of the run, from whatever pages the kernel
//     hands out;
//   - recycled: right after the first was unmapped, so from the pages it
//     just freed;
//   - idle: after freed memory lay unused for -pages.idle;
//   - huge: a mapping advised MADV_HUGEPAGE, as the runner's GC headroom
//     is (internal/gcbudget), per 4 KiB of it: where the kernel gives
//     transparent huge pages to mappings that ask (the "madvise" or
//     "always" setting), one fault then serves 512 pages.
//
// On bare metal a fault takes a fraction of a microsecond. On the
// paravirtualised machines this project runs on (a Firecracker guest
// booted with pvm_no_zero_page and free page reporting) all three took
// 11-16 µs: the hypervisor takes part in every new page-table entry, and
// a page the guest freed and reported is backed again on its next touch.
// A Go heap grown into new pages, or handed back to the OS and grown again
// (debug.FreeOSMemory, the runtime's scavenger), pays that per page, so a
// client that faults more pages per request than another costs more CPU
// per request on such a machine than the count alone suggests. Huge pages
// are turned off for the first three, so that what is measured is 4 KiB
// pages whatever the machine's setting.
func BenchmarkFreshPages(b *testing.B) {
	for b.Loop() {
		n := *pagesSize << 20
		first, err := touchFresh(n, unix.MADV_NOHUGEPAGE)
		if err != nil {
			b.Fatal(err)
		}
		recycled, err := touchFresh(n, unix.MADV_NOHUGEPAGE)
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(*pagesIdle)
		idle, err := touchFresh(n, unix.MADV_NOHUGEPAGE)
		if err != nil {
			b.Fatal(err)
		}
		huge, err := touchFresh(n, unix.MADV_HUGEPAGE)
		if err != nil {
			b.Fatal(err)
		}
		pages := float64(n / unix.Getpagesize())
		perPage := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / pages }
		b.ReportMetric(perPage(first), "first-µs/page")
		b.ReportMetric(perPage(recycled), "recycled-µs/page")
		b.ReportMetric(perPage(idle), "idle-µs/page")
		b.ReportMetric(perPage(huge), "huge-µs/page")
	}
}

// touchFresh maps n bytes, advises them with advice, writes one byte of
// each 4 KiB page, and unmaps them; it returns the CPU time the writing
// took this thread.
func touchFresh(n int, advice int) (time.Duration, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(mem)
	if err := unix.Madvise(mem, advice); err != nil {
		return 0, err
	}
	before, err := threadCPU()
	if err != nil {
		return 0, err
	}
	for i := 0; i < n; i += unix.Getpagesize() {
		mem[i] = 1
	}
	after, err := threadCPU()
	return after - before, err
}

func threadCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
