//go:build goexperiment.simd && amd64

package engine

import (
	"cmp"
	"fmt"
	"os"
	"testing"
)

// fuseSwitches are the package variables BenchmarkDecodeFuseTokens can
// switch between tokens: each sets the variant on (new) or off (old).
var fuseSwitches = map[string]func(on bool){
	"fuse":    func(on bool) { decodeFuse = on },
	"attend":  func(on bool) { fuseAttention = on },
	"layer":   func(on bool) { fuseLayer = on },
	"token":   func(on bool) { fuseToken = on },
	"min16k":  minPieceSwitch(1 << 14),
	"min8k":   minPieceSwitch(1 << 13),
	"min256k": coarseCutSwitch(1 << 18),
	"min512k": coarseCutSwitch(1 << 19),
	"head":    func(on bool) { fuseHead = on },
	"pool":    func(on bool) { poolJobs = on },
	"lora":    func(on bool) { fuseLoRA = on },
	"bf16":    func(on bool) { fuseBF16 = on },
	"t1pf512": t1Switch(1),
	"exp4":    func(on bool) { expScaled4Loop = on },
}

// BenchmarkDecodeFuseTokens decodes the Qwen3-0.6B shape (bfloat16, or
// float32 with FUSE_DTYPE=f32, or bfloat16 on the bf16 compute path with
// FUSE_DTYPE=bf16-compute, where FUSE_SWITCH=bf16 is fuseBF16 and
// FUSE_SWITCH=compute puts the same weights on the bf16 compute path
// (new) or the float32 one (old)) switching a variant (FUSE_SWITCH, default
// "fuse": decodeFuse) on and off after every token, from Sample's
// StopFunc, so neighbouring tokens pair the two; the order within a pair
// alternates by round. Per pair the old token's time over the new one's
// (above 1: the variant faster), process CPU and wall: median, lower
// quartile and minimum over FUSE_TOKENS (default 96) tokens a decode and
// FUSE_ROUNDS decodes (default 4). FUSE_CONTROL=1 labels the tokens in
// turn but decodes all without the variant. FUSE_LORA=r decodes with a
// rank-r adapter (alpha 2r) on every linear layer and the lm_head; with
// it FUSE_SWITCH=adapter takes the adapter off (new) and puts it back
// (old): an adapter token's time over a base token's (adapter-unfused:
// the adapter's tokens without fuseLoRA). Run with
// -benchtime 1x.
func BenchmarkDecodeFuseTokens(b *testing.B) {
	rounds, tokens := envInt("FUSE_ROUNDS", 4), envInt("FUSE_TOKENS", 96)
	dtype := benchDType("FUSE_DTYPE")
	key := cmp.Or(os.Getenv("FUSE_SWITCH"), "fuse")
	name := key
	m := qwen3SmallOf(b, "fuse-tokens", dtype)
	if os.Getenv("FUSE_DTYPE") == "bf16-compute" {
		if !bf16Compute() {
			b.Skip("this CPU has no AVX512-BF16: no bf16 compute path")
		}
		bc := qwen3SmallOf(b, "fuse-tokens", dtype)
		bc.w.withBF16Compute()
		if key == "compute" {
			// The same weights on the float32 compute path (old) and the
			// bf16 one (new), swapped between steps: each path's tokens
			// read its own layout. A step on the bf16 path packs the
			// positions the other path's steps added to the cache.
			f32, bf := m.w, bc.w
			fuseSwitches[key] = func(on bool) {
				m.w = f32
				if on {
					m.w = bf
				}
			}
		} else {
			m = bc
		}
		dtype = "bf16-compute"
	}
	if r := envInt("FUSE_LORA", 0); r > 0 {
		l, err := NewLoRA(m.cfg, randomLoRA(m.cfg, r, 3, false), r, float64(2*r), false)
		if err != nil {
			b.Fatal(err)
		}
		m = m.WithLoRA(l)
		name += fmt.Sprintf(" (rank-%d adapter)", r)
	}
	set, ok := fuseSwitches[key]
	if (key == "adapter" || key == "adapter-unfused") && m.lora != nil {
		// Sample's steps read m.lora for each step's rows, and set runs
		// between steps on the stepping goroutine. adapter-unfused
		// decodes the adapter's tokens without fuseLoRA.
		l := m.lora
		set, ok = func(on bool) {
			m.lora, fuseLoRA = l, key == "adapter"
			if on {
				m.lora, fuseLoRA = nil, true
			}
		}, true
	}
	if !ok {
		b.Fatalf("FUSE_SWITCH=%s: none such; set one of the keys of fuseSwitches (or adapter, with FUSE_LORA)", key)
	}
	defer set(true)
	control := os.Getenv("FUSE_CONTROL") == "1"
	for b.Loop() {
		l0 := loadAvg()
		cpu, wall, tNew, tOld := pairTokens(b, m, rounds, tokens, func(on bool) { set(on && !control) })
		k := len(wall)
		if control {
			name += " control"
		}
		fmt.Fprintf(os.Stderr, "decode %s %s tokens old/new (%d pairs): cpu med %.4f q1 %.4f min %.3f | wall med %.4f q1 %.4f min %.3f | load %s -> %s | token ms old %.2f new %.2f (medians)\n",
			dtype, name, k, cpu[k/2], cpu[k/4], cpu[0], wall[k/2], wall[k/4], wall[0], l0, loadAvg(), 1e3*median(tOld), 1e3*median(tNew))
	}
}

// coarseCutSwitch switches forkDecode's cut between decodePieces and its
// 1/workers share down to pieces of min weights rather than
// decodeMinPiece: fewer pieces, each of which starts four new streams.
func coarseCutSwitch(min int) func(on bool) {
	return func(on bool) {
		decodeCut = decodePiecesTo
		if on {
			decodeCut = func(dst []rowPiece, ms []mat, align, workers int) []rowPiece {
				return cutPieces(dst, ms, align, workers, min)
			}
		}
	}
}

// minPieceSwitch switches forkDecode's cut between decodePieces and the
// same guided cut down to pieces of min weights.
func minPieceSwitch(min int) func(on bool) {
	return func(on bool) {
		decodeCut = decodePiecesTo
		if on {
			decodeCut = func(dst []rowPiece, ms []mat, align, workers int) []rowPiece {
				return cutPieces(dst, ms, align, 4*workers, min)
			}
		}
	}
}

// t1Switch switches the bf16 path's one-token kernels between the
// product's and variant v (avxBF16T1Variants: another prefetch distance).
func t1Switch(v int) func(on bool) {
	return func(on bool) {
		bf16T1Variant = 0
		if on {
			bf16T1Variant = v
		}
	}
}
