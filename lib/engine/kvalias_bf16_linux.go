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
// prompt cache that has that copy maps its whole bf16 copy from one memory
// file instead, laid out as the row's arrays are (each layer's heads' keys
// then values, room for ldk keys): key r of a head sits in block r/16 from
// the start of its keys, and its values at r·16 (in key pairs) from the
// start of each of the head's HeadDim/16 dimension blocks, so with one
// room for every row the file holds the prompt's keys and values where
// every row reads them and nothing past them (holes). The mapping is
// private: a row's writes (its own positions, and the pages holding the
// prompt's last keys with them) copy those pages for that row alone. One
// mapping a row, and no copying at its start. Packing is a function of
// the float32 values alone, which are the prompt's, so the row's copy
// holds the bits its own packing would: no output bit changes.

// kvAliasBF16File is a memory file holding a bf16 copy's layout for ldk
// keys, for the layers in it, with the prompt's first n positions.
type kvAliasBF16File struct {
	*kvAliasFd
	ldk    int     // keys each array has room for
	arr    uintptr // bytes of a head's keys, and of its values
	hd     int     // the heads' dimensions
	layers []bool  // layers in the file (in order)
	heads  int     // KV heads a layer
	size   uintptr // the file's bytes
}

// newKVAliasBF16File writes the first n positions of c's bf16 copy to a
// new memory file in the layout of a row with room for n+kvAliasRoom
// keys, or returns nil: for the layers whose copy holds those positions.
// None where reserving address space is committing memory (kvAliasStrict):
// every row's mapping spans the room.
func newKVAliasBF16File(c *kvCache, n int) *kvAliasBF16File {
	st := c.bf16
	if kvAliasFail || kvAliasStrict || st == nil || len(st.kv) == 0 || len(st.kv[0]) == 0 || c.kw%len(st.kv[0]) != 0 {
		return nil
	}
	heads := len(st.kv[0])
	hd := c.kw / heads
	if hd%16 != 0 {
		return nil
	}
	pg := uintptr(kvAliasPage)
	// A multiple of 128 keys: each dimension block of the values (32·ldk
	// bytes) starts on a page.
	ldk := (n + kvAliasRoom + 127) &^ 127
	f := &kvAliasBF16File{ldk: ldk, arr: (uintptr(2*ldk*hd) + pg - 1) &^ (pg - 1), hd: hd, heads: heads, layers: make([]bool, len(st.kv))}
	shared := 0
	for l, kvs := range st.kv {
		f.layers[l] = len(kvs) == heads && st.n[l] >= n
		for h := range kvs {
			f.layers[l] = f.layers[l] && kvs[h].ldk >= n && len(kvs[h].k) >= kvs[h].ldk*hd && len(kvs[h].vt) >= kvs[h].ldk*hd
		}
		if f.layers[l] {
			shared++
		}
	}
	if shared == 0 {
		return nil
	}
	f.size = uintptr(shared*heads) * 2 * f.arr
	if f.kvAliasFd = newKVAliasFd("tinker-kv-prompt-bf16", int64(f.size)); f.kvAliasFd == nil {
		return nil
	}
	fd := f.fd
	full := n / 16 * 16 // positions in complete key blocks
	part := make([]uint16, 16*hd)
	off := int64(0)
	for l, kvs := range st.kv {
		if !f.layers[l] {
			continue
		}
		for h := range kvs {
			src := &kvs[h]
			ok := pwriteAll(fd, sliceBytes(src.k[:full*hd]), off)
			// The last, partial block: the prompt's keys only (c's may
			// hold later positions when it is another job's cache).
			if full < n {
				clear(part)
				dk := unsafe.Slice((*uint32)(unsafe.Pointer(&part[0])), len(part)/2)
				sk := unsafe.Slice((*uint32)(unsafe.Pointer(&src.k[full*hd])), len(part)/2)
				for r := full; r < n; r++ {
					for p := range hd / 2 {
						dk[p*16+r%16] = sk[p*16+r%16]
					}
				}
				ok = ok && pwriteAll(fd, sliceBytes(part), off+int64(2*full*hd))
			}
			// Values in key pairs, the prompt's whole pairs: a row packs
			// a pair holding key n whole with it (pack).
			for d := 0; d < hd; d += 16 {
				ok = ok && pwriteAll(fd, sliceBytes(src.vt[d*src.ldk:d*src.ldk+n&^1*16]), off+int64(f.arr)+int64(2*d*ldk))
			}
			if !ok {
				f.close()
				return nil
			}
			off += 2 * int64(f.arr)
		}
	}
	// Closed with its source (dropAlias); as kvAliasFile's.
	runtime.AddCleanup(f, (*kvAliasFd).close, f.kvAliasFd)
	return f
}

// row gives d, an aliasing row of c's first n positions (kvAliasFile.row)
// with room for capacity positions, a bf16 copy mapping the file: the
// file's layers' keys and values, other layers left to pack as before. It
// reports false, leaving d as it was, when that cannot be done.
func (f *kvAliasBF16File) row(c, d *kvCache, n, capacity int) bool {
	if d.alias == nil || d.bf16 != nil || d.alias.bf16 != nil || bf16Cols(capacity) > f.ldk {
		return false
	}
	const maps = 2 // the mapping, and one to spare
	if !kvAliasTake(maps) {
		return false
	}
	base := f.mapRow()
	if base == nil {
		kvAliasMaps.Add(-maps)
		return false
	}
	hd, ldk := f.hd, f.ldk
	st := &bf16KVCache{kv: make([][]bf16KV, len(f.layers)), n: make([]int, len(f.layers))}
	off := uintptr(0)
	for l, in := range f.layers {
		st.kv[l] = make([]bf16KV, f.heads)
		if !in {
			continue
		}
		st.n[l] = n
		for h := range f.heads {
			kv := &st.kv[l][h]
			kv.ldk = ldk
			kv.k = unsafe.Slice((*uint16)(unsafe.Add(base, off)), ldk*hd)
			kv.vt = unsafe.Slice((*uint16)(unsafe.Add(base, off+f.arr)), ldk*hd)
			off += 2 * f.arr
			// Maps the prompt's pages now, readable and still shared,
			// rather than fault by fault in the first step.
			_ = unix.Madvise(sliceBytes(kv.k[:n*hd]), unix.MADV_POPULATE_READ)
			for dd := 0; dd < hd; dd += 16 {
				_ = unix.Madvise(sliceBytes(kv.vt[dd*ldk:dd*ldk+n*16]), unix.MADV_POPULATE_READ)
			}
		}
	}
	d.bf16 = st
	d.alias.bf16 = &kvAliasMem{p: base, size: f.size}
	d.alias.maps += maps
	return true
}

// mapRow maps the whole file, private, or returns nil; under f.mu, as
// kvAliasFile.mapRow.
func (f *kvAliasBF16File) mapRow() unsafe.Pointer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd < 0 || kvAliasFail {
		return nil
	}
	// Private: a write copies the page for this row only.
	base, err := unix.MmapPtr(f.fd, 0, nil, f.size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	return base
}
