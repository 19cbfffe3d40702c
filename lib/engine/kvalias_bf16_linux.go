//go:build linux

package engine

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The bf16 compute path's attention reads its own bfloat16 copy of a
// sequence's cache (kvCache.bf16, kernels_bf16_attn_amd64.go), which an
// aliasing row used to pack from its float32 cache in its first step, so
// every row read its own copy of the prompt's keys and values. A row of a
// prompt cache that has that copy maps the whole pages of the prompt's
// keys of each layer and KV head from a memory file instead: key r of a
// head sits in block r/16 (16 keys, 32·HeadDim bytes) from the start of
// its array whatever the array's room (ldk), so the prompt's complete
// blocks are a prefix of it and the same bytes in every row. The values
// are transposed (dimension blocks 16·ldk apart, the prompt's keys a
// prefix of each of HeadDim/16 blocks): sharing them would take a mapping
// a dimension block, eight a head at heads of 128, against one for the
// keys, so they stay the row's own (copied from the prompt's). Packing is
// a function of the float32 values alone, which are the prompt's, so the
// row's copy holds the bits its own packing would: no output bit changes.

// kvAliasBF16File is a memory file holding, for each layer and KV head
// (layer l's head h at (l·heads+h)·kb, unwritten for layers left out), the
// whole pages of the prompt's complete key blocks.
type kvAliasBF16File struct {
	*kvAliasFd
	kb     int    // bytes of each head's keys in the file
	hd     int    // the heads' dimensions
	layers []bool // layers whose keys are in the file
	heads  int    // KV heads a layer
}

// newKVAliasBF16File writes the whole pages of the complete key blocks of
// the first n positions of c's bf16 copy to a new memory file, or returns
// nil: for the layers whose copy holds those positions.
func newKVAliasBF16File(c *kvCache, n int) *kvAliasBF16File {
	st := c.bf16
	if kvAliasFail || st == nil || len(st.kv) == 0 || len(st.kv[0]) == 0 || c.kw%len(st.kv[0]) != 0 {
		return nil
	}
	heads := len(st.kv[0])
	hd := c.kw / heads
	pg := kvAliasPage
	f := &kvAliasBF16File{kvAliasFd: &kvAliasFd{fd: -1}, kb: n / 16 * 32 * hd / pg * pg, hd: hd, heads: heads, layers: make([]bool, len(st.kv))}
	if f.kb == 0 {
		return nil
	}
	some := false
	for l, kvs := range st.kv {
		f.layers[l] = len(kvs) == heads && st.n[l] >= n
		for h := range kvs {
			f.layers[l] = f.layers[l] && 2*len(kvs[h].k) >= f.kb
		}
		some = some || f.layers[l]
	}
	if !some {
		return nil
	}
	fd, err := unix.MemfdCreate("tinker-kv-prompt-bf16", unix.MFD_CLOEXEC)
	if err != nil {
		return nil
	}
	f.fd = fd
	if unix.Ftruncate(fd, int64(len(st.kv)*heads*f.kb)) != nil {
		f.close()
		return nil
	}
	for l, kvs := range st.kv {
		if !f.layers[l] {
			continue
		}
		for h := range kvs {
			if !pwriteAll(fd, u16Bytes(kvs[h].k)[:f.kb], int64((l*heads+h)*f.kb)) {
				f.close()
				return nil
			}
		}
	}
	// Closed with its source (dropAlias); as kvAliasFile's.
	runtime.AddCleanup(f, (*kvAliasFd).close, f.kvAliasFd)
	return f
}

func u16Bytes(xs []uint16) []byte {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(xs))), 2*len(xs))
}

// row gives d, an aliasing row of c's first n positions (kvAliasFile.row),
// a bf16 copy with room for capacity positions: for each layer in the
// file, each head's keys mapping the file's pages, the rest of its keys
// and its values copied from c's; other layers left to pack as before. It
// reports false, leaving d as it was, when that cannot be done.
func (f *kvAliasBF16File) row(c, d *kvCache, n, capacity int) bool {
	if d.alias == nil || d.bf16 != nil || d.alias.bf16 != nil {
		return false
	}
	pg := uintptr(kvAliasPage)
	hd, heads := f.hd, f.heads
	ldk := bf16Cols(capacity)
	arr := (uintptr(2*ldk*hd) + pg - 1) &^ (pg - 1) // keys, and values, of a head
	shared := 0
	for _, in := range f.layers {
		if in {
			shared++
		}
	}
	// A mapping for each head's file pages and one for the rest of its
	// arrays, and one to spare.
	maps := int64(2*shared*heads + 1)
	if kvAliasMaps.Add(maps) > kvAliasLimit() {
		kvAliasMaps.Add(-maps)
		return false
	}
	size := uintptr(shared*heads) * 2 * arr
	base := f.mapRow(size, arr, heads)
	if base == nil {
		kvAliasMaps.Add(-maps)
		return false
	}
	mem := &kvAliasMem{p: base, size: size}
	st := &bf16KVCache{kv: make([][]bf16KV, len(f.layers)), n: make([]int, len(f.layers))}
	off := uintptr(0)
	full := n / 16 * 16 // positions in complete blocks
	for l, in := range f.layers {
		st.kv[l] = make([]bf16KV, heads)
		if !in {
			continue
		}
		st.n[l] = n
		for h := range heads {
			src := &c.bf16.kv[l][h]
			kv := &st.kv[l][h]
			kv.ldk = ldk
			kv.k = unsafe.Slice((*uint16)(unsafe.Add(base, off)), ldk*hd)
			kv.vt = unsafe.Slice((*uint16)(unsafe.Add(base, off+arr)), ldk*hd)
			off += 2 * arr
			// Maps the pages now, readable and still shared, rather than
			// fault by fault in the first step.
			_ = unix.Madvise(u16Bytes(kv.k[:f.kb/2]), unix.MADV_POPULATE_READ)
			copy(kv.k[f.kb/2:full*hd], src.k[f.kb/2:full*hd])
			// The last, partial block: the prompt's keys only (c's may
			// hold later positions when it is another job's cache).
			dk := unsafe.Slice((*uint32)(unsafe.Pointer(&kv.k[0])), len(kv.k)/2)
			sk := unsafe.Slice((*uint32)(unsafe.Pointer(&src.k[0])), len(src.k)/2)
			for r := full; r < n; r++ {
				b := r / 16 * 8 * hd
				for p := range hd / 2 {
					dk[b+p*16+r%16] = sk[b+p*16+r%16]
				}
			}
			// Values in key pairs, the prompt's whole pairs: the row
			// packs a pair holding key n whole with it (pack).
			vn := n &^ 1 * 16
			for dd := 0; dd < hd; dd += 16 {
				copy(kv.vt[dd*ldk:dd*ldk+vn], src.vt[dd*src.ldk:dd*src.ldk+vn])
			}
		}
	}
	d.bf16 = st
	d.alias.bf16 = mem
	d.alias.maps += maps
	return true
}

// mapRow reserves a row's arrays (per shared layer and head, arr bytes of
// keys then arr of values) and maps the file's pages at the start of each
// head's keys, or returns nil; under f.mu, as kvAliasFile.mapRow.
func (f *kvAliasBF16File) mapRow(size, arr uintptr, heads int) unsafe.Pointer {
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
	for l, in := range f.layers {
		if !in {
			continue
		}
		for h := range heads {
			// Private: a write would copy the page for this row only.
			if _, err := unix.MmapPtr(f.fd, int64((l*heads+h)*f.kb), unsafe.Add(base, off), uintptr(f.kb), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
				_ = unix.MunmapPtr(base, size)
				return nil
			}
			off += 2 * arr
		}
	}
	return base
}
