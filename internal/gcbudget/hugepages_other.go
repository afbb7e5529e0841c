//go:build !linux

package gcbudget

// growHeapHuge does nothing where transparent huge pages are not Linux's.
func growHeapHuge(uint64) uint64 { return 0 }
