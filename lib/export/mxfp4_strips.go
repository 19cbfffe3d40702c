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

// run calls f on strips 0…n-1 on every core, each with its worker's
// scratch: v for a strip's values, d for its update.
func (x *mxExperts) run(n int, f func(strip int, v, d []float32)) {
	size := 32 * x.j.rows
	for w := range unitWorkers(n) { // each worker's scratch, made before they start
		x.bufs.get(w, size, size)
	}
	parallelUnits(n, func(w, i int) {
		v, d := x.bufs.get(w, size, size)
		f(i, v, d)
	})
}

// updated decodes strip c of the loaded expert into v (v[32·o+k] is
// output o, input 32c+k) and sets d[k·rows+o] to the update of those
// values, or reports false when there is none.
func (x *mxExperts) updated(c int, v, d []float32) bool {
	nb := x.j.cols / 32
	for o := range x.j.rows {
		i := o*nb + c
		quant.MXFP4Decode(x.blocks[16*i:16*i+16], x.scales[i:i+1], v[32*o:32*o+32])
	}
	if x.u == nil {
		return false
	}
	x.u.deltaRows(x.e*x.j.cols+32*c, 32, d)
	return true
}

// denseStrip writes strip c as the 32 output rows it is (inputs 32c…) in
// dtype dt into dst, rows of the outputs: each value plus its update.
func (x *mxExperts) denseStrip(c int, v, d []float32, dt safetensors.DType, dst []byte) {
	rows, osz := x.j.rows, x.j.rows*dt.Size()
	add := x.updated(c, v, d)
	for k := range 32 {
		row := d[k*rows : (k+1)*rows]
		for o := range row {
			if add {
				row[o] += v[32*o+k]
			} else {
				row[o] = v[32*o+k]
			}
		}
		encodeRow(dt, row, dst[k*osz:(k+1)*osz])
	}
}

// requantStrip requantises strip c, updated, into the expert's blocks
// dst and scales sc. A block the update leaves unchanged (every value
// plus its update equal to the value) keeps its bytes: requantising can
// pick a smaller scale for the same values, and an unadapted expert must
// stay as released.
func (x *mxExperts) requantStrip(c int, v, d []float32, dst, sc []byte) {
	rows, nb := x.j.rows, x.j.cols/32
	add := x.updated(c, v, d)
	for o := range rows {
		i, blk, same := o*nb+c, v[32*o:32*o+32], true
		for k := range blk {
			if add {
				y := blk[k] + d[k*rows+o]
				same = same && y == blk[k]
				blk[k] = y
			}
		}
		if same {
			copy(dst[16*i:16*i+16], x.blocks[16*i:16*i+16])
			sc[i] = x.scales[i]
			continue
		}
		sc[i] = quant.MXFP4Encode(blk, dst[16*i:16*i+16])
	}
}
