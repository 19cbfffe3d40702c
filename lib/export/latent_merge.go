package export

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// latentMerger writes a DeepSeek V3.1 / Kimi K2 merged model. Plain
// tensors go through merger.fill. Quantised weights are dequantised a row
// block at a time, updated in float32 and either written in the chosen
// dtype (--dtype bfloat16/float32: every quantised weight, adapted or not,
// and the scales and quantization_config dropped) or, by default,
// requantised in the base's own format with fresh scales (adapted weights
// only; the others are copied byte for byte).
//
// The adapter stays in its file's dtype; a module's float32 update is made
// when its weight is written, so memory is the adapter plus one update
// (and the few shared factors in the cache) plus the row blocks.
type latentMerger struct {
	*merger
	lb        *latentBase
	dequant   bool
	newScales map[string][]byte // scales of requantised weights, made with them
	mods      map[string]Module // by the base weight each updates
	scale     float32
	cache     map[*byte][]float32 // float32 factors, by their bytes
	vals      []float32           // a block's dequantised rows
	tiles     tileBufs            // each core's scale block (latent_tiles.go)
	pool      *unitPool           // the shard's FP8 block jobs, when its writer is an asyncWriter
}

// latentSource is where one output tensor comes from.
type latentSource struct {
	source          // a plain tensor
	q      *qtensor // a quantised weight written from its dequantised rows
	stash  bool     // the new scales of a requantised weight
}

func newLatentMerger(lb *latentBase, a *Adapter, dt safetensors.DType) (*latentMerger, int64, error) {
	m := &latentMerger{merger: &merger{base: lb.Base, dtype: dt, weightMap: map[string]string{}},
		lb: lb, dequant: dt != "", newScales: map[string][]byte{}, mods: map[string]Module{}, scale: a.Scale}
	for _, mod := range a.Modules {
		name, ok := lb.weightName(mod.Path)
		if !ok {
			return nil, 0, fmt.Errorf("base %s has no tensor %s.weight for adapter module %s", lb.Dir, mod.Path, mod.Path)
		}
		shape, err := lb.shape(name)
		if err != nil {
			return nil, 0, err
		}
		if len(shape) != 2 || shape[0] != mod.B.Shape[0] || shape[1] != mod.A.Shape[1] {
			return nil, 0, fmt.Errorf("base tensor %s is %v, adapter module %s updates a [%d %d] matrix", name, shape, mod.Path, mod.B.Shape[0], mod.A.Shape[1])
		}
		m.mods[name] = mod
	}
	var need int64
	for _, s := range lb.Shards {
		infos, _, err := m.plan(s)
		if err != nil {
			return nil, 0, err
		}
		for _, t := range infos {
			need += t.Bytes()
		}
	}
	m.weightMap, m.total = map[string]string{}, 0
	return m, need, nil
}

// update is the float32 update of base weight name, nil if not adapted.
// Experts that share a factor share its float32 copy: the cache keeps the
// factors converted last (a layer's shared ones stay while its experts
// are written, as they are written together).
func (m *latentMerger) update(name string) (*update, error) {
	mod, ok := m.mods[name]
	if !ok {
		return nil, nil
	}
	if len(m.cache) > 16 {
		m.cache = nil
	}
	if m.cache == nil {
		m.cache = map[*byte][]float32{}
	}
	conv := func(t *safetensors.Tensor, s float32) ([]float32, error) {
		key := unsafe.SliceData(t.Data)
		if v, ok := m.cache[key]; ok && len(v) == int(t.NumElements()) {
			return v, nil
		}
		v, err := t.Float32()
		if err != nil {
			return nil, fmt.Errorf("adapter %s: %w", mod.Path, err)
		}
		for i := range v {
			v[i] *= s
		}
		m.cache[key] = v
		return v, nil
	}
	a, err := conv(mod.A, 1)
	if err != nil {
		return nil, err
	}
	b, err := conv(mod.B, m.scale)
	if err != nil {
		return nil, err
	}
	return &update{r: int(mod.A.Shape[0]), in: int(mod.A.Shape[1]), out: int(mod.B.Shape[0]), a: a, b: b}, nil
}

// plan lists one shard's output tensors and their sources.
func (m *latentMerger) plan(shard string) ([]safetensors.TensorInfo, map[string]latentSource, error) {
	var infos []safetensors.TensorInfo
	srcs := map[string]latentSource{}
	add := func(info safetensors.TensorInfo, s latentSource) {
		infos = append(infos, info)
		srcs[info.Name] = s
		m.weightMap[info.Name] = shard
		m.total += info.Bytes()
	}
	for name, l := range m.lb.all {
		if l.shard != shard {
			continue
		}
		if err := m.planOne(name, l, add); err != nil {
			return nil, nil, err
		}
	}
	return infos, srcs, nil
}

// planOne plans base tensor name: plain, a quantised weight, one of a
// quantised weight's companions (scales, shape), or beside the text model.
func (m *latentMerger) planOne(name string, l located, add func(safetensors.TensorInfo, latentSource)) error {
	if m.lb.beside(name) {
		add(l.t, latentSource{source: source{t: l.t, off: l.off}})
		return nil
	}
	weight, companion := quantWeightOf(name, m.lb)
	q, err := m.lb.quantised(weight)
	if err != nil {
		return err
	}
	if q == nil {
		t := safetensors.TensorInfo{Name: name, DType: m.outDType(l.t.DType), Shape: l.t.Shape}
		add(t, latentSource{source: source{t: l.t, off: l.off}})
		return nil
	}
	_, adapted := m.mods[weight]
	switch {
	case m.dequant && companion:
		return nil // scales and shape go with the quantisation
	case m.dequant:
		add(safetensors.TensorInfo{Name: weight, DType: m.dtype, Shape: []int64{int64(q.rows), int64(q.cols)}}, latentSource{q: q})
	case !adapted || (companion && name != q.scale.t.Name):
		add(l.t, latentSource{source: source{t: l.t, off: l.off}}) // copied as is
	case companion:
		add(l.t, latentSource{stash: true})
	default:
		if q.scale.shard != q.w.shard {
			return fmt.Errorf("base %s keeps %s and its scales in different shards: export with --dtype bfloat16", m.lb.Dir, weight)
		}
		add(l.t, latentSource{q: q})
	}
	return nil
}

// quantWeightOf maps a tensor name to the weight it belongs to and
// whether it is a companion (scales or shape) rather than the weight.
func quantWeightOf(name string, lb *latentBase) (string, bool) {
	for _, suf := range []string{"_scale_inv", "_scale", "_shape", "_packed"} {
		if w, ok := strings.CutSuffix(name, suf); ok && strings.HasSuffix(w, ".weight") {
			if _, fp8 := lb.all[w]; suf == "_scale_inv" && !fp8 {
				continue
			}
			if _, packed := lb.all[w+"_packed"]; suf != "_scale_inv" && !packed {
				continue
			}
			return w, suf != "_packed"
		}
	}
	return name, false
}

// shard writes the merged copy of base shard name to w.
func (m *latentMerger) shard(ctx context.Context, name string, w io.Writer) error {
	var srcs map[string]latentSource
	plan := func(*safetensors.Header) (infos []safetensors.TensorInfo, err error) {
		infos, srcs, err = m.plan(name)
		return infos, err
	}
	m.out, _ = w.(*asyncWriter)
	var drain func() error
	if m.out != nil {
		m.pool = newUnitPool()
		drain = m.pool.close // before the shard is closed: the jobs read it
	}
	defer func() { m.out, m.pool = nil, nil }()
	return writeShard(filepath.Join(m.lb.Dir, name), w, plan, drain, func(f *os.File, t safetensors.TensorInfo, w io.Writer) error {
		s := srcs[t.Name]
		switch {
		case s.stash:
			b := m.newScales[t.Name]
			delete(m.newScales, t.Name)
			if m.out != nil {
				m.out.borrow(b) // written once the weight's blocks (queued before) are made
			}
			_, err := w.Write(b)
			return err
		case s.q != nil:
			return m.fillQuant(ctx, f, s.q, t, w)
		}
		u, err := m.update(t.Name)
		if err != nil {
			return err
		}
		s.u = u
		return m.fill(ctx, f, s.source, t, w)
	})
}

// fillQuant writes a quantised weight: row blocks dequantised, updated,
// then encoded in t's dtype or requantised (the new scales kept for the
// scale tensor, which sorts after the weight in the shard).
func (m *latentMerger) fillQuant(ctx context.Context, f *os.File, q *qtensor, t safetensors.TensorInfo, w io.Writer) error {
	u, err := m.update(q.name)
	if err != nil {
		return err
	}
	scales, err := m.scalesOf(f, q)
	if err != nil {
		return err
	}
	var fresh []byte
	if !m.dequant {
		fresh = make([]byte, len(scales))
		m.newScales[q.scale.t.Name] = fresh
	}
	step := max(1, blockElems/q.cols)
	if !q.int4 {
		step = max(1, step/m.lb.quant.Block[0]) * m.lb.quant.Block[0]
	}
	inRow := int(q.w.t.Bytes()) / q.rows
	outRow := int(t.Bytes()) / q.rows
	if cap(m.src) < step*inRow {
		m.src = make([]byte, step*inRow)
	}
	if cap(m.vals) < step*q.cols {
		m.vals = make([]float32, step*q.cols)
	}
	unit := 1
	if !q.int4 && !m.dequant {
		unit = m.lb.quant.Block[0] // a requantised FP8 block's rows stay together
	}
	tiles, int4 := m.tiled(q, u, scales, fresh, t.DType), m.int4Tiled(q, u, scales, fresh, t.DType)
	if tiles != nil && m.pool != nil {
		return m.queueTiles(ctx, f, q, tiles, step, outRow, w)
	}
	make1 := func(lo int, dst []byte) ([]byte, error) {
		n := min(step, q.rows-lo)
		src := m.src[:n*inRow]
		if err := readParallel(f, src, q.w.off+int64(lo*inRow)); err != nil {
			return nil, fmt.Errorf("read base tensor %s: %w", q.w.t.Name, err)
		}
		if tiles != nil {
			tiles.run(src, dst, lo, n, outRow, &m.tiles)
			return dst[:n*outRow], nil
		}
		if int4 != nil { // int4_tiles.go
			int4.run(src, dst, lo, n, outRow, &m.tiles)
			return dst[:n*outRow], nil
		}
		parallelSpans(ceilDiv(n, unit), func(a, b int) {
			a, b = a*unit, min(n, b*unit)
			v := m.vals[a*q.cols : b*q.cols]
			m.decodeQuant(q, src[a*inRow:], scales, lo+a, b-a, v)
			addDelta(u, lo+a, v, q.cols)
			m.encodeQuant(q, t.DType, v, lo+a, b-a, dst[a*outRow:b*outRow], fresh)
		})
		return dst[:n*outRow], nil
	}
	return m.pipeline(ctx, q.rows, step, step*outRow, make1, w)
}

// scalesOf reads q's scales, from f (the weight's shard, open) when
// they are in it: not opened again for each of a shard's thousands of
// expert weights.
func (m *latentMerger) scalesOf(f *os.File, q *qtensor) ([]byte, error) {
	if q.scale.shard != q.w.shard {
		return m.lb.readSmall(q.scale)
	}
	b := make([]byte, q.scale.t.Bytes())
	if _, err := f.ReadAt(b, q.scale.off); err != nil {
		return nil, fmt.Errorf("read base tensor %s: %w", q.scale.t.Name, err)
	}
	return b, nil
}

// queueTiles queues q's row blocks of step rows as jobs of the shard's
// pool, which the shard's writer writes once made: the cores make these
// while the next tensors are planned and queued.
func (m *latentMerger) queueTiles(ctx context.Context, f *os.File, q *qtensor, j *fp8Tiles, step, outRow int, w io.Writer) error {
	for lo := 0; lo < q.rows; lo += step {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.pool.err(); err != nil {
			return fmt.Errorf("read base tensor: %w", err)
		}
		n := min(step, q.rows-lo)
		dst := m.out.take(n*outRow, nil)
		m.out.whenReady(dst, j.queue(m.pool, f, q.w.off, dst, lo, n, outRow))
		if _, err := w.Write(dst); err != nil {
			return err
		}
	}
	return nil
}

// addDelta adds u's rows from row lo on to the rows of v (cols wide):
// four rows at a time where the vector kernel takes them, else one.
func addDelta(u *update, lo int, v []float32, cols int) {
	if u == nil {
		return
	}
	rows, r := len(v)/cols, 0
	if u.rowsPerA == 0 && cols == u.in && cols%32 == 0 {
		for r+4 <= rows && addRows4Vector(v[r*cols:(r+4)*cols], cols, u.b[(lo+r)*u.r:(lo+r+4)*u.r], u.a, u.r, cols, cols) {
			r += 4
		}
	}
	d := make([]float32, cols)
	for ; r < rows; r++ {
		u.deltaRow(lo+r, d)
		row := v[r*cols : (r+1)*cols]
		for j := range row {
			row[j] += d[j]
		}
	}
}

// decodeQuant dequantises rows [lo, lo+n) of q from src into v.
func (m *latentMerger) decodeQuant(q *qtensor, src, scales []byte, lo, n int, v []float32) {
	if q.int4 {
		quant.Int4Rows(src, scales, q.cols, m.lb.quant.Group, lo, n, v)
		return
	}
	quant.FP8Rows(src, scales, q.cols, m.lb.quant.Block, lo, n, v)
}

// encodeQuant writes rows [lo, lo+n) of v into dst: in dtype dt when
// dequantising, else requantised with their scales put into fresh.
func (m *latentMerger) encodeQuant(q *qtensor, dt safetensors.DType, v []float32, lo, n int, dst, fresh []byte) {
	switch {
	case m.dequant:
		sz := dt.Size() * q.cols
		for r := range n {
			encodeRow(dt, v[r*q.cols:(r+1)*q.cols], dst[r*sz:(r+1)*sz])
		}
	case q.int4:
		g := m.lb.quant.Group
		for r := range n {
			quant.Int4Quantize(v[r*q.cols:(r+1)*q.cols], g, dst[r*q.cols/2:], fresh[(lo+r)*2*q.cols/g:])
		}
	default:
		quant.FP8Quantize(v, q.cols, m.lb.quant.Block, lo, n, dst, fresh)
	}
}
