//go:build linux

package engine

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kvAliasArrays is the bytes of a layer's key and value arrays for n
// positions of widths kw and vw, each rounded up to whole pages.
func kvAliasArrays(n, kw, vw int) (ka, va int) {
	round := func(b int) int { return (b + kvAliasPage - 1) &^ (kvAliasPage - 1) }
	return round(4 * n * kw), round(4 * n * vw)
}

// kvAliasTake counts n more mappings against the bound and reports
// whether they fit (when not, the count is left as it was).
func kvAliasTake(n int64) bool {
	if kvAliasMaps.Add(n) > kvAliasLimit() {
		kvAliasMaps.Add(-n)
		return false
	}
	return true
}

// kvAliasPage is the system's page: file offsets and fixed addresses of
// mappings must be multiples of it.
var kvAliasPage = os.Getpagesize()

// kvAliasFile is a memory file holding, for each layer, a prompt's keys
// and then its values: their whole pages, which rows map, from the
// layer's offset and voff past it.
type kvAliasFile struct {
	*kvAliasFd
	kb, vb    int   // bytes of each layer's keys and values the rows map (whole pages)
	per, voff int64 // bytes a layer takes in the file; its values' offset in it
}

// kvAliasFd is the file's descriptor, apart so that a cleanup can close
// it once the file is unreachable.
type kvAliasFd struct {
	mu sync.Mutex
	fd int // -1 once closed
}

// kvAliasMapBound is a quarter of the kernel's bound on a process's
// mappings.
func kvAliasMapBound() int {
	limit := 65530
	if b, err := os.ReadFile("/proc/sys/vm/max_map_count"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			limit = n
		}
	}
	return limit / 4
}

// kvAliasStrictCommit reports whether vm.overcommit_memory is 2 (strict
// accounting).
func kvAliasStrictCommit() bool {
	b, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	return err == nil && strings.TrimSpace(string(b)) == "2"
}

// newKVAliasFile writes the whole pages of c's first n positions to a new
// memory file, or returns nil.
func newKVAliasFile(c *kvCache, n int) *kvAliasFile {
	if kvAliasFail {
		return nil
	}
	pg := kvAliasPage
	kb, vb := n*4*c.kw/pg*pg, n*4*c.vw/pg*pg
	if kb+vb == 0 {
		return nil
	}
	per := int64(kb + vb)
	fd := newKVAliasFd("tinker-kv-prompt", per*int64(len(c.k)))
	if fd == nil {
		return nil
	}
	f := &kvAliasFile{kvAliasFd: fd, kb: kb, vb: vb, per: per, voff: int64(kb)}
	for l := range c.k {
		if !pwriteAll(f.fd, sliceBytes(c.k[l])[:f.kb], int64(l)*per) ||
			!pwriteAll(f.fd, sliceBytes(c.v[l])[:f.vb], int64(l)*per+f.voff) {
			f.close()
			return nil
		}
	}
	// Closed with its source (dropAlias); this only keeps a source that
	// was lost without that from holding the file open for good.
	runtime.AddCleanup(f, (*kvAliasFd).close, f.kvAliasFd)
	return f
}

func pwriteAll(fd int, b []byte, off int64) bool {
	for len(b) > 0 {
		k, err := unix.Pwrite(fd, b, off)
		if err != nil || k <= 0 {
			return false
		}
		b, off = b[k:], off+int64(k)
	}
	return true
}

// newKVAliasFd is a new memory file of size bytes (holes until
// written), or nil.
func newKVAliasFd(name string, size int64) *kvAliasFd {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil
	}
	f := &kvAliasFd{fd: fd}
	if unix.Ftruncate(fd, size) != nil {
		f.close()
		return nil
	}
	return f
}

// sliceBytes is the memory of xs as bytes.
func sliceBytes[T float32 | uint16](xs []T) []byte {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(xs))), len(xs)*int(unsafe.Sizeof(xs[0])))
}

func (f *kvAliasFd) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd >= 0 {
		unix.Close(f.fd)
		f.fd = -1
	}
}

// mapRow reserves a row's arrays (layers of ka bytes of keys then va of
// values) and maps the file's pages at the start of each, or returns
// nil. Under f.mu, so the descriptor stays open meanwhile; the rows of a
// start populate and copy concurrently after.
func (f *kvAliasFile) mapRow(size, ka, va uintptr, layers int) unsafe.Pointer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd < 0 || kvAliasFail {
		return nil
	}
	base, err := unix.MmapPtr(-1, 0, nil, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	off := uintptr(0)
	for l := range layers {
		for _, m := range []struct {
			at      uintptr
			bytes   int
			fileOff int64
		}{{off, f.kb, int64(l) * f.per}, {off + ka, f.vb, int64(l)*f.per + f.voff}} {
			if m.bytes == 0 {
				continue
			}
			// Private: a write would copy the page for this row only.
			if _, err := unix.MmapPtr(f.fd, m.fileOff, unsafe.Add(base, m.at), uintptr(m.bytes), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
				_ = unix.MunmapPtr(base, size)
				return nil
			}
		}
		off += ka + va
	}
	return base
}

// kvAliasMem is a row's reservation: every layer's key and value arrays,
// each starting on a page.
type kvAliasMem struct {
	p    unsafe.Pointer
	size uintptr
}

func (m kvAliasMem) unmap() { _ = unix.MunmapPtr(m.p, m.size) }

// row makes a cache with room for capacity positions whose first n are
// c's: the file's pages mapped at the start of each layer array, the
// rest of them copied, the rest up to room in memory. It returns nil when
// that cannot be done.
func (f *kvAliasFile) row(c *kvCache, n, room, capacity int) *kvCache {
	pg := uintptr(kvAliasPage)
	round := func(b int) uintptr { return (uintptr(b) + pg - 1) &^ (pg - 1) }
	ka, va := round(4*capacity*c.kw), round(4*capacity*c.vw)
	layers := len(c.k)
	// The reservation, split by each array's file pages: a mapping for
	// those and one for the rest of the array, and one to spare.
	maps := int64(4*layers + 1)
	if !kvAliasTake(maps) {
		return nil
	}
	size := uintptr(layers) * (ka + va)
	base := f.mapRow(size, ka, va, layers)
	if base == nil {
		kvAliasMaps.Add(-maps)
		return nil
	}
	r := &kvAliasRow{mem: kvAliasMem{p: base, size: size}, maps: maps}
	d := &kvCache{k: make([][]float32, layers), v: make([][]float32, layers), n: n, kw: c.kw, vw: c.vw, alias: r}
	fill := func(off uintptr, shared, width int, src []float32) []float32 {
		p := unsafe.Add(base, off)
		if shared > 0 {
			// Maps the pages now, readable and still shared, rather than
			// fault by fault in the first step (kernels before 5.14 say
			// EINVAL: then the faults).
			_ = unix.Madvise(unsafe.Slice((*byte)(p), shared), unix.MADV_POPULATE_READ)
		}
		xs := unsafe.Slice((*float32)(p), capacity*width)
		// The positions a copy would hold (room): written now rather than
		// fault by fault as the sample generates, as the copy's (mostly
		// reused) memory is.
		if tail := sliceBytes(xs[shared/4 : room*width]); len(tail) > 0 {
			_ = unix.Madvise(tail, unix.MADV_POPULATE_WRITE)
		}
		copy(xs[shared/4:n*width], src[shared/4:n*width])
		return xs
	}
	off := uintptr(0)
	for l := range layers {
		d.k[l] = fill(off, f.kb, c.kw, c.k[l])
		d.v[l] = fill(off+ka, f.vb, c.vw, c.v[l])
		off += ka + va
	}
	// Released where the sequence is dropped (kvPool.put); this only
	// catches a cache lost without that.
	runtime.AddCleanup(d, func(r *kvAliasRow) { r.release() }, r)
	return d
}

// newKVAliasPromptCache is a prompt cache with room for n positions whose
// arrays are one shared mapping of a new memory file laid out as rows map
// it (kvAliasFile: each layer's keys, then its values, each from a page),
// that file its source for caches of its n positions (aliasSrc), or nil.
// The prefill writes the prompt's keys and values into the file itself,
// so its samples' rows map what it wrote: nothing is copied to the file
// at their start, and the prompt cache holds no copy of its own beside
// the file while followers may still come. Its arrays are not the Go
// heap's, so they can be the file's, and are unmapped where the cache is
// dropped (kvPool.put, never pooled). Nothing may write the first n
// positions once rows map them: the rows' private mappings see the
// file's pages until they copy them, so the cache is for a prompt whose
// samples all decode in caches of their own (a num_samples job's).
func newKVAliasPromptCache(layers, kw, vw, n int) *kvCache {
	if kvAliasFail || layers == 0 || n <= 0 {
		return nil
	}
	ka, va := kvAliasArrays(n, kw, vw)
	per := ka + va
	const maps = 2 // the mapping, and one to spare
	if !kvAliasTake(maps) {
		return nil
	}
	size := uintptr(layers * per)
	fd := newKVAliasFd("tinker-kv-prompt", int64(size))
	if fd == nil {
		kvAliasMaps.Add(-maps)
		return nil
	}
	base, err := unix.MmapPtr(fd.fd, 0, nil, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		fd.close()
		kvAliasMaps.Add(-maps)
		return nil
	}
	// The prefill writes every page: allocated now, not fault by fault.
	// A kernel before 5.14 says EINVAL (then the faults); any other error
	// is memory the file cannot have (a page the prefill wrote would
	// then be SIGBUS): the heap's cache instead.
	if err := unix.Madvise(unsafe.Slice((*byte)(base), size), unix.MADV_POPULATE_WRITE); err != nil && err != unix.EINVAL {
		_ = unix.MunmapPtr(base, size)
		fd.close()
		kvAliasMaps.Add(-maps)
		return nil
	}
	f := &kvAliasFile{kvAliasFd: fd, kb: 4 * n * kw / kvAliasPage * kvAliasPage, vb: 4 * n * vw / kvAliasPage * kvAliasPage, per: int64(per), voff: int64(ka)}
	runtime.AddCleanup(f, (*kvAliasFd).close, f.kvAliasFd) // as newKVAliasFile's
	r := &kvAliasRow{mem: kvAliasMem{p: base, size: size}, maps: maps}
	c := &kvCache{k: make([][]float32, layers), v: make([][]float32, layers), kw: kw, vw: vw, alias: r,
		aliasSrc: &kvAliasSrc{n: n, file: f}}
	c.aliasSrc.once.Do(func() {}) // its file is this one
	at := func(off, floats int) []float32 {
		if floats == 0 {
			return nil
		}
		return unsafe.Slice((*float32)(unsafe.Add(base, off)), floats)
	}
	for l := range layers {
		c.k[l], c.v[l] = at(l*per, n*kw), at(l*per+ka, n*vw)
	}
	// Released where the cache is dropped; as a row's.
	runtime.AddCleanup(c, func(r *kvAliasRow) { r.release() }, r)
	return c
}

// newKVAliasOwnCache is a cache with room for room positions, and
// address space for capacity, in anonymous memory mapped outside the Go
// heap, or nil: memory whose first positions' whole pages can become a
// memory file's (remapPrompt), which the heap's cannot. Its sample grows
// into the address space without copying; it is unmapped where the
// cache is dropped (kvPool.put, never pooled). None where reserving is
// committing (kvAliasStrict): a cache of room positions growing past it
// would copy into the heap and keep this memory until it is dropped.
func newKVAliasOwnCache(layers, kw, vw, room, capacity int) *kvCache {
	kvAliasLimit() // reads kvAliasStrict
	if kvAliasFail || kvAliasStrict || layers == 0 || room <= 0 {
		return nil
	}
	capacity = max(capacity, room)
	ka, va := kvAliasArrays(capacity, kw, vw)
	per := ka + va
	const maps = 2 // the mapping, and one to spare
	if !kvAliasTake(maps) {
		return nil
	}
	size := uintptr(layers * per)
	base, err := unix.MmapPtr(-1, 0, nil, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		kvAliasMaps.Add(-maps)
		return nil
	}
	r := &kvAliasRow{mem: kvAliasMem{p: base, size: size}, maps: maps, own: true}
	c := &kvCache{k: make([][]float32, layers), v: make([][]float32, layers), kw: kw, vw: vw, alias: r}
	at := func(off, floats, filled int) ([]float32, bool) {
		if floats == 0 {
			return nil, true
		}
		xs := unsafe.Slice((*float32)(unsafe.Add(base, off)), floats)
		// The room a heap cache would have: written now rather than
		// fault by fault (as a row's); EINVAL before Linux 5.14.
		err := unix.Madvise(sliceBytes(xs[:filled]), unix.MADV_POPULATE_WRITE)
		return xs, err == nil || err == unix.EINVAL
	}
	for l := range layers {
		var okK, okV bool
		c.k[l], okK = at(l*per, capacity*kw, room*kw)
		c.v[l], okV = at(l*per+ka, capacity*vw, room*vw)
		if !okK || !okV {
			r.release()
			return nil
		}
	}
	// Released where the cache is dropped; as a row's.
	runtime.AddCleanup(c, func(r *kvAliasRow) { r.release() }, r)
	return c
}

// remapPrompt maps the whole pages of f, made from c's first n
// positions, over those of c's arrays (c from newKVAliasOwnCache, not
// grown out of it), private as a row's: the same values, now the file's
// pages, and c's own copy of them freed. It reports whether it did. A
// mapping that fails midway leaves the arrays' other pages c's own,
// with the same values.
func (c *kvCache) remapPrompt(f *kvAliasFile, n int) bool {
	r := c.alias
	if r == nil || !r.own || len(c.k) == 0 || c.n < n || len(c.k[0]) == 0 || unsafe.Pointer(unsafe.SliceData(c.k[0])) != r.mem.p {
		return false
	}
	// Each array split in two: 4 a layer.
	maps := int64(4 * len(c.k))
	if !kvAliasTake(maps) {
		return false
	}
	r.own, r.maps = false, r.maps+maps
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd < 0 || kvAliasFail {
		return false
	}
	for l := range c.k {
		for _, m := range []struct {
			xs      []float32
			bytes   int
			fileOff int64
		}{{c.k[l], f.kb, int64(l) * f.per}, {c.v[l], f.vb, int64(l)*f.per + f.voff}} {
			if m.bytes == 0 {
				continue
			}
			p := unsafe.Pointer(unsafe.SliceData(m.xs))
			if _, err := unix.MmapPtr(f.fd, m.fileOff, p, uintptr(m.bytes), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
				return false
			}
			// Mapped now, readable and shared, rather than fault by fault
			// in the next step (as a row's).
			_ = unix.Madvise(unsafe.Slice((*byte)(p), m.bytes), unix.MADV_POPULATE_READ)
		}
	}
	return true
}
