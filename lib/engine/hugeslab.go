package engine

import "unsafe"

// hugePage is the x86-64 and common arm64 transparent huge page size.
const hugePage = 2 << 20

// hugeSlabChunk is how much a hugeSlab takes from the heap at a time.
const hugeSlabChunk = 32 << 20

// hugeSlab hands out a model's large weight matrices one after another
// from 2 MiB-aligned chunks advised for transparent huge pages as a whole
// (adviseHuge), rather than each from the heap on its own. adviseHuge can
// only mark the whole 2 MiB pages inside one allocation, and the heap
// starts an allocation anywhere on an 8 KiB boundary, so each matrix kept
// its first and last partial 2 MiB in 4 KiB pages: on the Qwen3-0.6B
// shape 65-70% of the bfloat16 matrices' bytes (whose k and v, 2 MiB
// each, had no huge page at all) and 83% of the float32 ones'; carved
// from a slab, all of them. A slab lives while any of its matrices does,
// so use one per model, as loading builds it. The zero value is ready;
// not safe for concurrent use.
type hugeSlab struct{ rest []byte }

// hugeSlabAlloc is a zeroed slice of n Ts, from s when it is large enough
// for huge pages to matter (and s is not nil), else from the heap.
func hugeSlabAlloc[T uint16 | float32](s *hugeSlab, n int) []T {
	size := n * int(unsafe.Sizeof(T(0)))
	if s == nil || size < hugePage {
		return make([]T, n)
	}
	size = (size + 63) &^ 63 // the next matrix starts on a cache line
	b := s.rest
	if size > len(b) {
		c := (max(size, hugeSlabChunk) + hugePage - 1) &^ (hugePage - 1)
		buf := make([]uint64, (c+hugePage)/8)
		off := (hugePage - int(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))%hugePage) % hugePage
		b = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)*8)[off : off+c]
		adviseHuge(b) // before the first write: the chunk is fresh
		if size > hugeSlabChunk/2 {
			// A matrix this large takes a chunk of its own; the rest of
			// the current chunk stays for the next ones.
			return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
		}
	}
	s.rest = b[size:]
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
