package zstd

import (
	"encoding/binary"
	"math/bits"
)

// XXH64 primes.
const (
	xxP1 uint64 = 11400714785074694791
	xxP2 uint64 = 14029467366897019727
	xxP3 uint64 = 1609587929392839161
	xxP4 uint64 = 9650029242287828579
	xxP5 uint64 = 2870177450012600261
)

func xxRound(acc, v uint64) uint64 {
	return bits.RotateLeft64(acc+v*xxP2, 31) * xxP1
}

func xxMerge(acc, v uint64) uint64 {
	return (acc^xxRound(0, v))*xxP1 + xxP4
}

// xxh64 is XXH64 with seed 0, whose low 32 bits are a frame's checksum.
func xxh64(b []byte) uint64 {
	n := uint64(len(b))
	var h uint64
	if len(b) >= 32 {
		p1, p2 := xxP1, xxP2 // variables: the sums wrap, as XXH64 means
		v := [4]uint64{p1 + p2, p2, 0, -p1}
		for ; len(b) >= 32; b = b[32:] {
			for i := range v {
				v[i] = xxRound(v[i], binary.LittleEndian.Uint64(b[8*i:]))
			}
		}
		h = bits.RotateLeft64(v[0], 1) + bits.RotateLeft64(v[1], 7) + bits.RotateLeft64(v[2], 12) + bits.RotateLeft64(v[3], 18)
		for _, x := range v {
			h = xxMerge(h, x)
		}
	} else {
		h = xxP5
	}
	h += n
	for ; len(b) >= 8; b = b[8:] {
		h = bits.RotateLeft64(h^xxRound(0, binary.LittleEndian.Uint64(b)), 27)*xxP1 + xxP4
	}
	if len(b) >= 4 {
		h = bits.RotateLeft64(h^uint64(binary.LittleEndian.Uint32(b))*xxP1, 23)*xxP2 + xxP3
		b = b[4:]
	}
	for _, c := range b {
		h = bits.RotateLeft64(h^uint64(c)*xxP5, 11) * xxP1
	}
	h ^= h >> 33
	h *= xxP2
	h ^= h >> 29
	h *= xxP3
	h ^= h >> 32
	return h
}
