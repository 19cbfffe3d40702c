package export

import (
	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// An INT4 weight's row block (Kimi K2's routed experts) is made one tile
// at a time, as FP8's is (latent_tiles.go): int4Rows × a whole number of
// groups across, dequantised, updated and requantised (or rounded to the
// output dtype) while its 32 KB of float32 stay in the core's cache,
// where the row-band path sent the band through memory three times. The
// tiles are handed out to every core. A group is one row's run of
// columns, so a tile cut anywhere on group edges gives every value the
// row-band path's operations: the same bits (TestInt4TilesMatchBands).

// int4Tiles is one INT4 weight's tile-at-a-time job.
type int4Tiles struct {
	u      *update
	group  int    // columns a scale
	cols   int    // the weight's columns
	width  int    // a tile's columns: whole groups, a multiple of 32
	scales []byte // the base's BF16 group scales
	fresh  []byte // the new scales, nil when writing dtype dt
	dt     safetensors.DType
}

// int4Rows is how many rows a tile has.
const int4Rows = 32

// int4Tiled returns the tile-at-a-time job for INT4 weight q, or nil
// where the row-band path must do it: no vector update kernel (whose bits
// the tiles rely on), an update with more than one A, or tiles that
// cannot be whole groups in multiples of 32 columns.
func (m *latentMerger) int4Tiled(q *qtensor, u *update, scales, fresh []byte, dt safetensors.DType) *int4Tiles {
	g := m.lb.quant.Group
	if !q.int4 || g == 0 {
		return nil
	}
	width := g * max(1, 256/g)
	if !haveAVX2() || width%32 != 0 || q.cols%width%32 != 0 || (u != nil && u.rowsPerA != 0) {
		return nil
	}
	if !m.dequant {
		dt = ""
	}
	return &int4Tiles{u: u, group: g, cols: q.cols, width: width, scales: scales, fresh: fresh, dt: dt}
}

// run makes rows [lo, lo+n) from their packed codes src into dst, whose
// rows are outRow bytes.
func (j *int4Tiles) run(src, dst []byte, lo, n, outRow int, bufs *tileBufs) {
	across := ceilDiv(j.cols, j.width)
	units := ceilDiv(n, int4Rows) * across
	bufs.grow(unitWorkers(units)) // each worker's scratch, made before they start
	parallelUnits(units, func(w, i int) {
		v, d := bufs.s[w].get(int4Rows*j.width, j.width)
		j.tile(src, dst, lo, n, outRow, i/across*int4Rows, i%across*j.width, v, d)
	})
}

// tile makes the tile whose first row is r0 (of the block) and first
// column c0, in v and d: decoded, updated, then requantised or rounded.
func (j *int4Tiles) tile(src, dst []byte, lo, n, outRow, r0, c0 int, v, d []float32) {
	h, wd := min(n-r0, int4Rows), min(j.cols-c0, j.width)
	sr := 2 * j.cols / j.group // scale bytes a row
	v = v[:h*wd]
	for r := range h {
		quant.Int4Row(src[(r0+r)*j.cols/2+c0/2:], j.scales[(lo+r0+r)*sr+2*c0/j.group:], j.group, v[r*wd:(r+1)*wd])
	}
	addDeltaTile(j.u, lo+r0, c0, v, wd, d)
	for r := range h {
		row := v[r*wd : (r+1)*wd]
		if j.fresh == nil {
			encodeRow(j.dt, row, dst[(r0+r)*outRow+c0*j.dt.Size():])
			continue
		}
		quant.Int4Quantize(row, j.group, dst[(r0+r)*outRow+c0/2:], j.fresh[(lo+r0+r)*sr+2*c0/j.group:])
	}
}
