package engine

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHuge asks the kernel to back the whole 2 MiB pages inside s with
// transparent huge pages (madvise MADV_HUGEPAGE), for the large buffers a
// training step streams through: the base weights and the activation
// arena. Call it right after allocating s, before the first write: pages
// already faulted in as 4 KiB stay so until khugepaged gets to them.
// Where THP is "madvise" only (the VMs this project measures on) the Go
// heap gets no huge pages otherwise; where it is "always" this changes
// nothing, and where it is "never" the kernel ignores the advice. Errors
// are ignored: the advice is only about speed.
func adviseHuge[T any](s []T) {
	if len(s) == 0 {
		return
	}
	size := uintptr(len(s)) * unsafe.Sizeof(s[0])
	if size < hugePage {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(s))
	lo := uintptr(p)
	start, end := (lo+hugePage-1)&^(hugePage-1), (lo+size)&^(hugePage-1)
	if end <= start {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, start-lo)), end-start), unix.MADV_HUGEPAGE)
}
