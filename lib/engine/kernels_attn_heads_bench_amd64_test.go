//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

// BenchmarkLoneRowAttnColdHeadsAB is BenchmarkLoneRowAttnColdAB with the
// cache's layout as the variable: every layer's keys and values
// position-major (pos-*: [position][KV head][head dim], the cache's
// layout) or the same values head-major (head-*: [KV head][position][head
// dim], each head's positions contiguous within a capacity of twice the
// positions, so each head's keys and values are two linear streams),
// attended by the generated kernels (*-asm, attendKVHeadAsm: the key
// stride the only difference), the Go ones (*-go), or only read, one load
// a line in the kernels' order (*-read). LONEROW_OLD and LONEROW_NEW pick
// the two (default pos-asm and head-asm); before each of 28 layers'
// attention a pass over 48 MiB in 2 MiB pages, as a decode's weights are,
// evicts the cache's data (LONEROW_FLUSH4K=1: in 4 KiB pages, evicting
// the translations too; LONEROW_HOT=1: no pass, and layer 0 each time). Ratios old/new, above 1: new faster; both layouts'
// outputs are checked to be the same bits first. Run with -benchtime 1x.
// The figures: (docs/engine-decoding.md, "The cache head-major (not built)").
func BenchmarkLoneRowAttnColdHeadsAB(b *testing.B) {
	defer func(v bool) { loneRowAsm = v }(loneRowAsm)
	var read bool
	hot := os.Getenv("LONEROW_HOT") == "1" // no eviction, and layer 0 every time: its cache in L2
	rounds := envInt("LONEROW_ROUNDS", 15)
	c := Config{Shape: models.Shape{Heads: 16, KVHeads: 8, HeadDim: 128}}
	hd, group := c.HeadDim, c.Heads/c.KVHeads
	qd, kvd := c.Heads*hd, c.KVHeads*hd
	flush := make([]float32, 48<<20/4)
	if os.Getenv("LONEROW_FLUSH4K") != "1" {
		adviseHuge(flush) // as the weights are: their stream evicts the data, not the cache's 4 KiB translations
	}
	for i := range flush {
		flush[i] = float32(i)
	}
	var sink float32
	for _, pos := range []int{16, 64, 320, 1000} {
		b.Run(fmt.Sprintf("pos%d", pos), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			n := pos + 1
			capa := 2 * n
			m := &Model{cfg: c}
			ws := &workspace{q: randRows(1, qd, 1), att: randRows(1, qd, 2), scores: make([][]float32, 1)}
			var ks, vs, hks, hvs [][]float32
			for range 28 {
				k, v := flat(randRows(n, kvd, 3)), flat(randRows(n, kvd, 4))
				ks, vs = append(ks, k), append(vs, v)
				hk, hv := make([]float32, c.KVHeads*capa*hd), make([]float32, c.KVHeads*capa*hd)
				for h := range c.KVHeads {
					for p := range n {
						copy(hk[(h*capa+p)*hd:][:hd], k[p*kvd+h*hd:][:hd])
						copy(hv[(h*capa+p)*hd:][:hd], v[p*kvd+h*hd:][:hd])
					}
				}
				hks, hvs = append(hks, hk), append(hvs, hv)
			}
			seq := &kvCache{k: ks, v: vs}
			rows := []row{{seq: seq, pos: pos}}
			// Head-major: each KV head a model of one KV head and its group
			// of query heads over that head's slices.
			mh := &Model{cfg: Config{Shape: models.Shape{Heads: group, KVHeads: 1, HeadDim: hd}}}
			out2 := make([]float32, qd)
			var hws []*workspace
			var hrows [][]row
			for h := range c.KVHeads {
				hs := &kvCache{}
				for l := range 28 {
					hs.k = append(hs.k, hks[l][h*capa*hd:(h+1)*capa*hd])
					hs.v = append(hs.v, hvs[l][h*capa*hd:(h+1)*capa*hd])
				}
				hrows = append(hrows, []row{{seq: hs, pos: pos}})
				hws = append(hws, &workspace{q: [][]float32{ws.q[0][h*group*hd : (h+1)*group*hd]},
					att: [][]float32{out2[h*group*hd : (h+1)*group*hd]}, scores: make([][]float32, 1)})
			}
			variant := func(name string) (heads, asm bool) {
				read = false
				switch name {
				case "pos-read":
					read = true
					return false, true
				case "head-read":
					read = true
					return true, true
				case "pos-asm":
					return false, true
				case "pos-go":
					return false, false
				case "head-asm":
					return true, true
				case "head-go":
					return true, false
				}
				b.Fatalf("LONEROW_OLD/NEW %q: want pos-asm, pos-go, pos-read, head-asm, head-go or head-read", name)
				return
			}
			oh, oa := variant(envStr("LONEROW_OLD", "pos-asm"))
			oread := read
			nh, na := variant(envStr("LONEROW_NEW", "head-asm"))
			nread := read
			run := func(isNew bool) (wall, cpu float64) {
				heads, asm, read := oh, oa, oread
				if isNew {
					heads, asm, read = nh, na, nread
				}
				loneRowAsm = asm
				for l := range 28 {
					if hot {
						l = 0 // one layer's cache, in L2
					}
					for i := 0; i < len(flush) && !hot; i += 16 {
						sink += flush[i]
					}
					t0, c0 := time.Now(), threadCPU()
					if read { // one load a line, each head's keys then values, in the kernels' order
						var s0, s1, s2, s3 float32 // four chains, so the adds do not pace the loads
						for h := range c.KVHeads {
							if heads {
								for _, x := range [][]float32{hks[l], hvs[l]} {
									for i := h * capa * hd; i < (h*capa+n)*hd; i += 64 {
										s0, s1, s2, s3 = s0+x[i], s1+x[i+16], s2+x[i+32], s3+x[i+48]
									}
								}
								continue
							}
							for _, x := range [][]float32{ks[l], vs[l]} {
								for p := range n {
									for i := p*kvd + h*hd; i < p*kvd+(h+1)*hd; i += 64 {
										s0, s1, s2, s3 = s0+x[i], s1+x[i+16], s2+x[i+32], s3+x[i+48]
									}
								}
							}
						}
						sink += s0 + s1 + s2 + s3
					} else if heads {
						for h := range c.KVHeads {
							mh.attendRow(hws[h], hrows[h], 0, l, 0, 0, 1)
						}
					} else {
						m.attendRow(ws, rows, 0, l, 0, 0, c.KVHeads)
					}
					wall, cpu = wall+time.Since(t0).Seconds(), cpu+threadCPU()-c0
				}
				return wall, cpu
			}
			for _, asm := range []bool{false, true} { // both layouts, both kernels: the same bits
				loneRowAsm = asm
				m.attendRow(ws, rows, 0, 27, 0, 0, c.KVHeads)
				for h := range c.KVHeads {
					mh.attendRow(hws[h], hrows[h], 0, 27, 0, 0, 1)
				}
				if !slices.Equal(out2, ws.att[0]) {
					b.Fatalf("head-major attention differs from the position-major one (asm %v)", asm)
				}
			}
			for b.Loop() {
				rw, rc, newW, _ := alternateRounds(rounds, run)
				b.ReportMetric(median(rc), "cpu-ratio-med")
				b.ReportMetric(quartileLow(rc), "cpu-ratio-q1")
				b.ReportMetric(slices.Min(rc), "cpu-ratio-min")
				b.ReportMetric(median(rw), "wall-ratio-med")
				b.ReportMetric(quartileLow(rw), "wall-ratio-q1")
				b.ReportMetric(slices.Min(rw), "wall-ratio-min")
				b.ReportMetric(newW/float64(rounds*28)*1e9, "ns-wall/new-layer")
				b.Logf("pos %d, load %s", pos, loadAvg())
			}
		})
	}
	_ = sink
}

// envStr is the environment's key, or def when unset.
func envStr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
