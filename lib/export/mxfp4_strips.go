package export

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// An MXFP4 expert is merged one strip at a time: a column of MX blocks
// (32 inputs, all the outputs), decoded, updated and written (as 32 dense
// rows of the transposed output, or requantised in place) while its
// values are in the core's cache. A strip's bytes depend on its own
// inputs only, every value going through the operations the whole-expert
// passes used, so the strips are handed out to every core and the output
// is the same whatever their number (TestMXFP4SameOnAnyCores).

// mxExperts reads one MXFP4 weight an expert at a time and runs its
// strips on the cores.
type mxExperts struct {
	j              *mxJob
	u              *update // nil: written dense as it is
	f, sf          *os.File
	off            int64  // the blocks' offset in f
	e              int    // the expert in blocks and scales, -1 none yet
	blocks, scales []byte // its stored bytes
	bufs           tileBufs
}

func newMXExperts(dir string, f *os.File, s source) (*mxExperts, error) {
	sf, err := os.Open(filepath.Join(dir, s.mx.scaleShard))
	if err != nil {
		return nil, fmt.Errorf("base shard: %w", err)
	}
	per := s.mx.rows * s.mx.cols
	return &mxExperts{j: s.mx, u: s.u, f: f, sf: sf, off: s.off, e: -1, blocks: make([]byte, per/2), scales: make([]byte, per/32)}, nil
}

func (x *mxExperts) close() { x.sf.Close() }

// load reads expert e's blocks and scales, unless they are read already.
func (x *mxExperts) load(e int) error {
	if e == x.e {
		return nil
	}
	x.e = -1
	if err := readParallel(x.f, x.blocks, x.off+int64(e*len(x.blocks))); err != nil {
		return fmt.Errorf("read base tensor %s: %w", x.j.blocks.Name, err)
	}
	if _, err := x.sf.ReadAt(x.scales, x.j.scaleOff+int64(e*len(x.scales))); err != nil {
		return fmt.Errorf("read base tensor %s: %w", x.j.scales.Name, err)
	}
	x.e = e
	return nil
}

// mxPiece is one unit of a strip: outputs [o0, o0+n) of strip c.
type mxPiece struct{ c, o0, n int }

// mxOutputs is how many outputs a piece of a strip has where the update
// can be made for a run of them (the four-row kernel, outputs in
// multiples of 32): 32 inputs × 256 outputs, 32 KB of float32 each for
// the values and the update, stay in the core's cache. (A variable so
// that a test can cut tiny experts into pieces too.)
var mxOutputs = 256

// run calls f on every piece of strips [c0, c0+n) on every core, each
// with its worker's scratch: v for a piece's values, d for its update.
func (x *mxExperts) run(c0, n int, f func(p mxPiece, v, d []float32)) {
	per := x.j.rows
	if haveAVX512() && x.j.rows%32 == 0 {
		per = mxOutputs
	}
	across := ceilDiv(x.j.rows, per)
	size := 32 * per
	x.bufs.grow(unitWorkers(n * across)) // each worker's scratch, made before they start
	parallelUnits(n*across, func(w, i int) {
		v, d := x.bufs.s[w].get(size, size)
		p := mxPiece{c: c0 + i/across, o0: i % across * per}
		p.n = min(per, x.j.rows-p.o0)
		f(p, v, d)
	})
}

// updated decodes piece p of the loaded expert into v (v[32·o+k] is
// output o0+o, input 32c+k) and sets d[k·n+o] to the update of those
// values, or reports false when there is none.
func (x *mxExperts) updated(p mxPiece, v, d []float32) bool {
	i := p.o0*x.j.cols/32 + p.c // the piece's first block; a column of them
	quant.MXFP4DecodeStrided(x.blocks[16*i:], x.scales[i:], x.j.cols/32, p.n, v)
	if x.u == nil {
		return false
	}
	row := x.e*x.j.cols + 32*p.c
	if p.n == x.j.rows {
		x.u.deltaRows(row, 32, d)
		return true
	}
	clear(d[:32*p.n]) // the kernel adds onto zeros: deltaRows' bits (kernel.go)
	for k := 0; k < 32; k += 4 {
		addRows4Vector(d[k*p.n:], p.n, x.u.b[(row+k)*x.u.r:], x.u.aOf(row)[p.o0:], x.u.r, x.u.in, p.n)
	}
	return true
}

// denseStrip writes piece p as parts of the 32 output rows its strip is
// (inputs 32c…) in dtype dt into dst, the strip's rows of all the
// outputs: each value plus its update.
func (x *mxExperts) denseStrip(p mxPiece, v, d []float32, dt safetensors.DType, dst []byte) {
	sz := dt.Size()
	add := x.updated(p, v, d)
	for k := range 32 {
		row := d[k*p.n : (k+1)*p.n]
		for o := range row {
			if add {
				row[o] += v[32*o+k]
			} else {
				row[o] = v[32*o+k]
			}
		}
		encodeRow(dt, row, dst[(k*x.j.rows+p.o0)*sz:(k*x.j.rows+p.o0+p.n)*sz])
	}
}

// requantStrip requantises piece p, updated, into the expert's blocks
// dst and scales sc. A block the update leaves unchanged (every value
// plus its update equal to the value) keeps its bytes: requantising can
// pick a smaller scale for the same values, and an unadapted expert must
// stay as released.
func (x *mxExperts) requantStrip(p mxPiece, v, d []float32, dst, sc []byte) {
	nb := x.j.cols / 32
	var buf [256]bool
	same := buf[:0]
	add := x.updated(p, v, d)
	for o := range p.n {
		blk, unchanged := v[32*o:32*o+32], true
		for k := range blk {
			if add {
				y := blk[k] + d[k*p.n+o]
				unchanged = unchanged && y == blk[k]
				blk[k] = y
			}
		}
		same = append(same, unchanged)
	}
	i0 := p.o0*nb + p.c
	quant.MXFP4EncodeStrided(v, p.n, dst[16*i0:], sc[i0:], nb)
	for o, keep := range same {
		if i := i0 + o*nb; keep {
			copy(dst[16*i:16*i+16], x.blocks[16*i:16*i+16])
			sc[i] = x.scales[i]
		}
	}
}
