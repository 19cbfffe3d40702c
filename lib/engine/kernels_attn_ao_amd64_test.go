//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"testing"
)

// TestRowDotsAOMatchesRowDots checks attnRowDotsAO (every KV head's scores,
// the keys in address order) against attnRowDots a head at a time, bit
// for bit, for groups of one and two, heads of 64 and 128, one to eight
// heads starting past the row's first, and key counts from 8 to 264; the
// scores past each head's n must stay untouched.
func TestRowDotsAOMatchesRowDots(t *testing.T) {
	if !avx512 || !useSIMD || !simdOK {
		t.Skip("no AVX-512")
	}
	const kvh = 8
	for _, hd := range []int{64, 128} {
		kvd := kvh * hd
		for r := 1; r <= len(attnRowDotsAO); r++ {
			for _, hs := range [][2]int{{0, kvh}, {2, 5}, {7, 8}} {
				for _, n := range []int{8, 16, 24, 64, 264} {
					nh := hs[1] - hs[0]
					ld := n + 4
					keys := flat(randRows(n, kvd, uint64(n+hd)))
					q := flat(randRows(kvh*r, hd, uint64(r+7)))
					want := make([]float32, nh*r*ld)
					for h := range nh {
						kv := hs[0] + h
						attnRowDots[r-1](&want[h*r*ld], uintptr(4*ld), &q[kv*r*hd], uintptr(4*hd), &keys[kv*hd], &keys[kv*hd], uintptr(4*kvd), hd, n)
					}
					got := make([]float32, len(want))
					for i := range got {
						got[i] = float32(math.NaN())
					}
					for _, aos := range []bool{false, true} {
						for i := range got {
							got[i] = float32(math.NaN())
						}
						if aos {
							attnRowDotsAOS[r-1](&got[0], uintptr(4*ld), &q[hs[0]*r*hd], uintptr(4*hd), &keys[hs[0]*hd], uintptr(4*kvd), hd, nh, n, 1+n%5)
						} else {
							attnRowDotsAO[r-1](&got[0], uintptr(4*ld), &q[hs[0]*r*hd], uintptr(4*hd), &keys[hs[0]*hd], uintptr(4*kvd), hd, nh, n, 8+n%16)
						}
						name := fmt.Sprintf("hd=%d r=%d heads %v n=%d stream=%v", hd, r, hs, n, aos)
						for row := range nh * r {
							for c := range ld {
								w, g := want[row*ld+c], got[row*ld+c]
								if c >= n {
									if !math.IsNaN(float64(g)) {
										t.Fatalf("%s: wrote past n at row %d column %d", name, row, c)
									}
									continue
								}
								if math.Float32bits(w) != math.Float32bits(g) {
									t.Fatalf("%s: row %d key %d: %v, want %v", name, row, c, g, w)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestBlockedScoresAOSameBits runs attendHeadsBlocked with loneScoresAO on
// and off (positions around multiples of eight and of the block, groups
// of one and two, a unit of every KV head and of some): the outputs must
// have the same bits, and the same as attendKVHeadAsm's head by head.
func TestBlockedScoresAOSameBits(t *testing.T) {
	if !avx512 || !useSIMD || !simdOK {
		t.Skip("no AVX-512")
	}
	defer func(v, s bool) { loneScoresAO, loneScoresAOS = v, s }(loneScoresAO, loneScoresAOS)
	const hd, kvh = 128, 8
	const kvd = kvh * hd
	scale := float32(1 / math.Sqrt(hd))
	for group := 1; group <= 2; group++ {
		q := flat(randRows(kvh*group, hd, uint64(group)))
		for _, npos := range []int{1, 5, 8, 9, 16, 23, 31, 100, 263} {
			keys, vals := flat(randRows(npos, kvd, uint64(npos)+10)), flat(randRows(npos, kvd, uint64(npos)+20))
			for _, hs := range [][2]int{{0, kvh}, {3, 6}} {
				run := func(ao bool) []float32 {
					loneScoresAO = ao
					var buf []float32
					out := flat(randRows(kvh*group, hd, 99))
					if !attendHeadsBlocked(&buf, q, out, keys, vals, kvd, hd, group, npos, hs[0], hs[1], scale, nil) {
						t.Fatal("attendHeadsBlocked did not run")
					}
					return out
				}
				want, got := run(false), run(true)
				name := fmt.Sprintf("group=%d npos=%d heads %v", group, npos, hs)
				fuseSameBits(t, name, want, got)
				loneScoresAOS = true
				fuseSameBits(t, name+" stream", want, run(true))
				loneScoresAOS = false
				var buf []float32
				ref := flat(randRows(kvh*group, hd, 99))
				for h := hs[0]; h < hs[1]; h++ {
					attendKVHeadAsm(&buf, q, ref, keys, vals, kvd, hd, group, npos, h, scale, nil)
				}
				fuseSameBits(t, name+" head by head", ref, got)
			}
		}
	}
}
