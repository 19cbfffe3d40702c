package export

import (
	"encoding/binary"
	"io"
	"math"

	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// An FP8 weight's row block is made one scale block (128×128) at a time:
// dequantised, updated and requantised (or rounded to the output dtype)
// while its 64 KB of float32 stay in the core's cache, where a whole row
// band made pass by pass would go through memory four times. The blocks are
// handed out one by one to every core, so a core slowed by the writer's
// system calls takes fewer. Same bits as the row-band path
// (TestFP8TilesMatchBands): every value goes through the same operations.

// fp8Tiles is one FP8 weight's block-at-a-time job.
type fp8Tiles struct {
	u      *update
	b      [2]int // scale block height and width
	cols   int    // the weight's columns (= bytes of a row of codes)
	nbc    int    // scale blocks across
	scales []byte // the base's scales
	fresh  []byte // the new scales, nil when writing dtype dt
	dt     safetensors.DType
}

// tiled returns the block-at-a-time job for q, or nil where the row-band
// path must do it (INT4, no vector kernel, columns or blocks not in
// multiples of 32, an update with more than one A).
func (m *latentMerger) tiled(q *qtensor, u *update, scales, fresh []byte, dt safetensors.DType) *fp8Tiles {
	b := m.lb.quant.Block
	if q.int4 || !haveAVX2() || q.cols%32 != 0 || b[1]%32 != 0 || (u != nil && u.rowsPerA != 0) {
		return nil
	}
	return &fp8Tiles{u: u, b: b, cols: q.cols, nbc: ceilDiv(q.cols, b[1]), scales: scales, fresh: fresh, dt: dt}
}

// run makes rows [lo, lo+n) (lo a multiple of the block height) from
// their codes src into dst, whose rows are outRow bytes.
func (j *fp8Tiles) run(src, dst []byte, lo, n, outRow int, bufs *tileBufs) {
	units := j.units(n)
	bufs.grow(unitWorkers(units)) // each worker's scratch, made before they start
	parallelUnits(units, func(w, i int) { j.unit(&bufs.s[w], src, dst, lo, n, outRow, i) })
}

// queue makes rows [lo, lo+n) of the weight whose codes start at off in
// f as a job of p, for the shard's writer to wait for (ready) while the
// caller queues the next: each unit reads one row of scale blocks into
// its worker's scratch and makes its blocks there, so the codes are in
// that core's cache (read ahead by another goroutine, the kernel waited
// on them in memory).
func (j *fp8Tiles) queue(p *unitPool, f io.ReaderAt, off int64, dst []byte, lo, n, outRow int) (ready <-chan struct{}) {
	return p.submit(ceilDiv(n, j.b[0]), func(s *scratch, k int) error {
		r0 := k * j.b[0]
		h := min(n-r0, j.b[0])
		codes := s.bytes(h * j.cols)
		if _, err := f.ReadAt(codes, off+int64(lo+r0)*int64(j.cols)); err != nil {
			return err
		}
		v, d := s.get(j.b[0]*j.b[1], j.b[1])
		for c := range j.nbc {
			j.block(codes, dst[r0*outRow:], lo+r0, h, outRow, c, v, d)
		}
		return nil
	})
}

// units is how many scale blocks n rows make.
func (j *fp8Tiles) units(n int) int { return ceilDiv(n, j.b[0]) * j.nbc }

// unit makes scale block i of the rows run makes, in s's buffers.
func (j *fp8Tiles) unit(s *scratch, src, dst []byte, lo, n, outRow, i int) {
	v, d := s.get(j.b[0]*j.b[1], j.b[1])
	j.block(src, dst, lo, n, outRow, i, v, d)
}

// block makes scale block i (row-major) of the rows run makes, in v and
// d: decoded and updated, four rows at a time in one pass where it can,
// then requantised or rounded to dtype dt.
func (j *fp8Tiles) block(src, dst []byte, lo, n, outRow, i int, v, d []float32) {
	r0, c0 := i/j.nbc*j.b[0], i%j.nbc*j.b[1]
	h, wd := min(n-r0, j.b[0]), min(j.cols-c0, j.b[1])
	k := ((lo+r0)/j.b[0])*j.nbc + i%j.nbc
	s := math.Float32frombits(binary.LittleEndian.Uint32(j.scales[4*k:]))
	codes := src[r0*j.cols+c0:]
	amax, done := j.fused(v, codes, h, wd, s, lo+r0, c0)
	if done < h {
		rest := v[done*wd : h*wd]
		quant.FP8DecodeTile(rest, wd, codes[done*j.cols:], j.cols, h-done, wd, s)
		addDeltaTile(j.u, lo+r0+done, c0, rest, wd, d)
		if j.fresh != nil {
			amax = max(amax, quant.FP8AbsMax(rest, wd, h-done, wd))
		}
	}
	if j.fresh == nil {
		sz := j.dt.Size()
		for r := range h {
			encodeRow(j.dt, v[r*wd:(r+1)*wd], dst[(r0+r)*outRow+c0*sz:])
		}
		return
	}
	s = quant.FP8EncodeTileMax(dst[r0*outRow+c0:], outRow, v, wd, h, wd, amax)
	binary.LittleEndian.PutUint32(j.fresh[4*k:], math.Float32bits(s))
}

// fused decodes and updates the tile's rows four at a time in one pass
// (fp8AddRows4Vector) where the CPU has the kernel, and returns their
// largest magnitude and how many rows it did; the rest are left to the
// separate passes, which give the same bits.
func (j *fp8Tiles) fused(v []float32, codes []byte, h, wd int, s float32, row, c0 int) (amax uint32, done int) {
	u := j.u
	for ; u != nil && done+4 <= h; done += 4 {
		m, ok := fp8AddRows4Vector(v[done*wd:], wd, codes[done*j.cols:], j.cols, s, u.b[(row+done)*u.r:], u.a[c0:], u.r, u.in, wd)
		if !ok {
			break
		}
		amax = max(amax, m)
	}
	return amax, done
}

// addDeltaTile adds u's update to v, a tile of rows from the tensor's row
// lo and wd columns from column c0 (wd a multiple of 32, row stride wd):
// four rows at a time where the CPU has the kernel, else one by one; d is
// a row of scratch.
func addDeltaTile(u *update, lo, c0 int, v []float32, wd int, d []float32) {
	if u == nil {
		return
	}
	a, rows, r := u.a[c0:], len(v)/wd, 0
	for ; r+4 <= rows && addRows4Vector(v[r*wd:], wd, u.b[(lo+r)*u.r:], a, u.r, u.in, wd); r += 4 {
	}
	for ; r < rows; r++ {
		deltaVector(d, u.b[(lo+r)*u.r:(lo+r+1)*u.r], a, u.r, u.in, wd)
		row := v[r*wd : (r+1)*wd]
		for i := range row {
			row[i] += d[i]
		}
	}
}

// tileBufs keeps each worker's scratch across run's calls.
type tileBufs struct{ s []scratch }

func (b *tileBufs) grow(workers int) {
	for len(b.s) < workers {
		b.s = append(b.s, scratch{})
	}
}
