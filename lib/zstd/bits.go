package zstd

import (
	"encoding/binary"
	"math/bits"
)

// backReader reads a zstd backward bitstream: the stream is one
// little-endian number whose highest set bit is a marker, read from just
// below the marker down to bit 0. val holds the next n unread bits in its
// low bits; reading past the start yields zeros and counts them in over.
type backReader struct {
	in   []byte
	off  int // in[:off] not yet loaded
	val  uint64
	n    uint
	over uint
}

func (r *backReader) open(in []byte) error {
	if len(in) == 0 || in[len(in)-1] == 0 {
		return corrupt("bitstream without its end marker")
	}
	r.in, r.off, r.over = in, len(in)-1, 0
	r.val = uint64(in[r.off])
	r.n = uint(bits.Len8(in[r.off])) - 1
	return nil
}

// fill loads bytes until at least 57 bits are held (or the stream is
// used up, then zero bits stand in and over counts them).
func (r *backReader) fill() {
	if r.off >= 8 && r.n <= 56 {
		k := (63 - r.n) / 8
		r.off -= int(k)
		v := binary.LittleEndian.Uint64(r.in[r.off-int(8-k):]) >> ((8 - k) * 8)
		r.val = r.val<<(8*k) | v
		r.n += 8 * k
		return
	}
	for r.n <= 56 {
		r.val <<= 8
		if r.off > 0 {
			r.off--
			r.val |= uint64(r.in[r.off])
		} else {
			r.over += 8
		}
		r.n += 8
	}
}

// peek returns the next k (<= 56) bits without consuming them.
func (r *backReader) peek(k uint) uint64 {
	if r.n < k {
		r.fill()
	}
	return (r.val >> (r.n - k)) & (1<<k - 1)
}

func (r *backReader) skip(k uint) { r.n -= k }

// read consumes k (<= 56) bits.
func (r *backReader) read(k uint) uint64 {
	if k == 0 {
		return 0
	}
	v := r.peek(k)
	r.n -= k
	return v
}

// overread reports whether more bits were consumed than the stream has.
func (r *backReader) overread() bool { return r.off == 0 && r.n < r.over }

// done reports whether the stream was consumed exactly.
func (r *backReader) done() bool { return r.off == 0 && r.n == r.over }

// bitWriter writes a forward bitstream, least significant bits first,
// which backReader reads from its end.
type bitWriter struct {
	out []byte
	val uint64
	n   uint
}

// add appends the low k (<= 32) bits of v.
func (w *bitWriter) add(v uint64, k uint) {
	w.val |= (v & (1<<k - 1)) << w.n
	w.n += k
	for w.n >= 32 {
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(w.val))
		w.val >>= 32
		w.n -= 32
	}
}

// close writes the end marker and the last partial byte.
func (w *bitWriter) close() []byte {
	w.add(1, 1)
	return w.bytes()
}

// bytes writes the bits held, the last byte padded with zeros.
func (w *bitWriter) bytes() []byte {
	for w.n > 0 {
		w.out = append(w.out, byte(w.val))
		w.val >>= 8
		w.n -= min(w.n, 8)
	}
	return w.out
}
