package engine

import (
	"fmt"
	"testing"
)

// TestKVAliasBF16Compute: on the bf16 compute path, whose attention packs
// its own bfloat16 copy from the float32 cache, samples whose caches
// alias their prompt's memory file give what their copies give, bit for
// bit: with their bf16 copies mapped from a memory file too (kvAliasBF16;
// prompts of 150 positions, a partial key block, and 151, an odd count
// splitting a value pair), with that off, and with the bf16 mapping
// refused by the map bound (the rows pack their copy themselves).
func TestKVAliasBF16Compute(t *testing.T) {
	m, _ := bf16ComputeQwen3(t, "alias-bf16", 256, 384, 6)
	aliasAll(t)
	t.Cleanup(func() { kvAliasBF16 = true })
	if !m.bf16Attention(0) {
		t.Fatal("the test's model does not take the bf16 path's attention")
	}
	for _, n := range []int{150, 151} {
		calls := aliasCalls(m, n)
		run := func() []*SampleResponse {
			out := make([]*SampleResponse, len(calls))
			for i, c := range calls {
				out[i] = sample(t, c.m, c.req)
			}
			return out
		}
		kvAliasPrefix = false
		copied := run()
		kvAliasPrefix = true
		for _, bf16 := range []bool{false, true} {
			kvAliasBF16 = bf16
			label := fmt.Sprintf("bf16 compute, prompt %d, bf16 keys mapped %v", n, bf16)
			rows0, bf0 := kvAliasRows.Load(), kvAliasRowsBF16.Load()
			got := run()
			sameAsSolo(t, label+", aliased against copies", copied, got)
			// One request at a time: the samples of the two with num_samples > 1.
			if k := kvAliasRows.Load() - rows0; k != 7 {
				t.Errorf("%s: %d caches aliased, want 7", label, k)
			}
			want := map[bool]int64{false: 0, true: 7}[bf16]
			if k := kvAliasRowsBF16.Load() - bf0; k != want {
				t.Errorf("%s: %d bf16 copies mapped, want %d", label, k, want)
			}
			waitReleased(t, m, label)
		}
		// Room for the prompt cache's mapping (two: kvAliasLeader) and
		// the float32 mappings of a row (4 a layer and one), not for the
		// bf16 copy's too (two).
		limit := kvAliasMapLimit
		kvAliasMapLimit = int64(4*m.cfg.Layers + 1 + 2)
		rows0, bf0 := kvAliasRows.Load(), kvAliasRowsBF16.Load()
		got := run()
		kvAliasMapLimit = limit
		sameAsSolo(t, "bf16 mapping over the bound", copied, got)
		if k := kvAliasRows.Load() - rows0; k < 1 {
			t.Errorf("bf16 mapping over the bound: %d caches aliased, want some", k)
		}
		if k := kvAliasRowsBF16.Load() - bf0; k != 0 {
			t.Errorf("bf16 mapping over the bound: %d bf16 copies mapped", k)
		}
		waitReleased(t, m, "bf16 mapping over the bound")
	}
}

// TestKVAliasBF16Layout: a row's mapped bf16 copy holds, for every layer
// and head, the keys and values its own packing of the prompt gives
// (checked against a copy packed from the row's float32 cache), after
// three rows each packed positions of their own past the prompt (into
// the pages holding its last keys and values too: each row's own), and
// their prompt keys stay the source's.
func TestKVAliasBF16Layout(t *testing.T) {
	m, c := bf16ComputeQwen3(t, "alias-bf16-layout", 256, 384, 6)
	aliasAll(t)
	hd, kvh := c.HeadDim, c.KVHeads
	for _, n := range []int{128, 150, 151, 300} {
		src := aliasSource(m, n+40)
		src.n = n
		packAll := func(x *kvCache, end int) {
			st := x.bf16Cache(c)
			for l := range c.Layers {
				for h := range kvh {
					st.kv[l][h].pack(x.k[l], x.v[l], st.n[l], end, kvh*hd, h*hd, hd)
				}
				st.n[l] = end
			}
		}
		packAll(src, n)
		a := src.aliasFor(n)
		rows := make([]*kvCache, 3)
		for i := range rows {
			rows[i] = src.cloneAliased(a, n, n+8, n+64, nil)
			if rows[i].alias == nil || rows[i].alias.bf16 == nil {
				t.Fatalf("prompt %d: row %d's bf16 copy does not map the prompt's keys", n, i)
			}
		}
		// Later positions, different in each row, packed into each.
		for i, d := range rows {
			d.reserve(n + 9)
			for l := range c.Layers {
				aliasFill(d.k[l][n*d.kw:(n+9)*d.kw], uint64(100+i*10+l), 1)
				aliasFill(d.v[l][n*d.vw:(n+9)*d.vw], uint64(200+i*10+l), 1)
			}
			d.n = n + 9
			packAll(d, n+9)
		}
		for i, d := range rows {
			ref := &kvCache{k: d.k, v: d.v, kw: d.kw, vw: d.vw, n: n + 9}
			packAll(ref, n+9)
			for l := range c.Layers {
				for h := range kvh {
					got, want := &d.bf16.kv[l][h], &ref.bf16.kv[l][h]
					for r := range n + 9 {
						for p := range hd {
							if g, w := got.k[r/16*16*hd+p/2*32+r%16*2+p%2], want.k[r/16*16*hd+p/2*32+r%16*2+p%2]; g != w {
								t.Fatalf("prompt %d row %d layer %d head %d: key %d dim %d %#x, packed alone %#x", n, i, l, h, r, p, g, w)
							}
							if g, w := got.vt[p/16*16*got.ldk+r/2*32+p%16*2+r%2], want.vt[p/16*16*want.ldk+r/2*32+p%16*2+r%2]; g != w {
								t.Fatalf("prompt %d row %d layer %d head %d: value %d dim %d %#x, packed alone %#x", n, i, l, h, r, p, g, w)
							}
						}
					}
				}
			}
		}
		// The source's copy, which the file was written from, against
		// the rows' prompt keys in whole blocks: unchanged by their
		// packing.
		for l := range c.Layers {
			for h := range kvh {
				for i, d := range rows {
					for x := range n / 16 * 16 * hd {
						if d.bf16.kv[l][h].k[x] != src.bf16.kv[l][h].k[x] {
							t.Fatalf("prompt %d row %d layer %d head %d: mapped key word %d changed", n, i, l, h, x)
						}
					}
				}
			}
		}
		for _, d := range rows {
			var pool *kvPool
			pool.put(d)
		}
		src.dropAlias()
		if k := kvAliasMaps.Load(); k != 0 {
			t.Fatalf("prompt %d: %d mappings left", n, k)
		}
	}
}

// TestKVAliasBF16Strict: where reserved address space is committed memory
// (kvAliasStrict), a row's bf16 copy, whose mapping spans kvAliasRoom
// keys, is not mapped: the row packs its own, as before.
func TestKVAliasBF16Strict(t *testing.T) {
	m, c := bf16ComputeQwen3(t, "alias-bf16-strict", 256, 384, 6)
	aliasAll(t)
	strict := kvAliasStrict
	t.Cleanup(func() { kvAliasStrict = strict })
	hd, kvh := c.HeadDim, c.KVHeads
	for _, s := range []bool{false, true} {
		kvAliasStrict = s
		src := aliasSource(m, 200)
		st := src.bf16Cache(c)
		for l := range c.Layers {
			for h := range kvh {
				st.kv[l][h].pack(src.k[l], src.v[l], 0, 200, kvh*hd, h*hd, hd)
			}
			st.n[l] = 200
		}
		d := src.cloneAliased(src.aliasFor(200), 200, 210, 260, nil)
		if d.alias == nil {
			t.Fatalf("strict %v: the row does not alias", s)
		}
		if mapped := d.alias.bf16 != nil && d.bf16 != nil; mapped == s {
			t.Errorf("strict %v: bf16 copy mapped %v", s, mapped)
		}
		var pool *kvPool
		pool.put(d)
		src.dropAlias()
	}
	if k := kvAliasMaps.Load(); k != 0 {
		t.Fatalf("%d mappings left", k)
	}
}

// TestKVAliasBF16LateFollower is TestKVAliasLateFollower on the bf16
// compute path: followers arriving after the leader's bf16 copy was let
// go map the bf16 file made from it.
func TestKVAliasBF16LateFollower(t *testing.T) {
	m, _ := bf16ComputeQwen3(t, "alias-bf16-late", 256, 384, 7)
	aliasAll(t)
	for _, samples := range []int{3, 1} {
		lateFollowerSameBits(t, m, "bf16 compute", true, samples)
	}
}
