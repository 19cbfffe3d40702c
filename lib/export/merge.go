package export

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/userfile"
)

const (
	embedName  = "model.embed_tokens.weight"
	lmHeadName = "lm_head.weight"
	// blockElems is how many elements one row block converts at a time:
	// a few MB of output, so memory stays flat whatever the tensor.
	blockElems = 1 << 20
)

// merger writes the merged model's shards, one base shard at a time.
type merger struct {
	base    *Base
	updates map[string]*update // by base tensor name
	dtype   safetensors.DType  // "" keeps each tensor's dtype
	untie   bool               // lm_head.weight is made from the embedding
	// weightMap and total fill in as shards are planned: the index.
	weightMap map[string]string
	total     int64
	bufs      rowBufs
	blocks    [2][]byte         // the row blocks being made and written
	src       []byte            // the base rows of the block being made
	out       *asyncWriter      // the shard being written, if it lends its buffers
	mx        map[string]*mxJob // GPT-OSS's MXFP4 weights by their _blocks name (mxfp4.go)
	mxScales  map[string]bool   // their _scales, which the output drops when dense
	mxFresh   map[string][]byte // requantised weights' new scales, by _scales name
}

// source is where an output tensor comes from: a base tensor's bytes at
// off in the shard file, and the update to add, if any.
type source struct {
	t   safetensors.TensorInfo
	off int64
	u   *update
	mx  *mxJob // dequantise MXFP4 blocks at off (t is then the dense output)
}

// outDType is the dtype a base tensor of dtype d is written in.
func (m *merger) outDType(d safetensors.DType) safetensors.DType {
	if m.dtype == "" || !isFloat(d) {
		return d
	}
	return m.dtype
}

// plan lists one shard's output tensors and their sources.
func (m *merger) plan(h *safetensors.Header, shard string) ([]safetensors.TensorInfo, map[string]source) {
	var infos []safetensors.TensorInfo
	srcs := map[string]source{}
	add := func(name string, t safetensors.TensorInfo, off int64) {
		info := safetensors.TensorInfo{Name: name, DType: m.outDType(t.DType), Shape: t.Shape}
		infos = append(infos, info)
		srcs[name] = source{t: t, off: off, u: m.updates[name]}
		m.weightMap[name] = shard
		m.total += info.Bytes()
	}
	for i, t := range h.Tensors {
		if j := m.mx[t.Name]; j != nil && j.requant {
			add(t.Name, t, h.Offsets[i])
			srcs[t.Name] = source{t, h.Offsets[i], m.updates[j.out], j}
			continue
		}
		if j := m.mx[t.Name]; j != nil {
			dense := safetensors.TensorInfo{Name: j.out, DType: safetensors.BF16, Shape: []int64{int64(j.experts), int64(j.cols), int64(j.rows)}}
			add(j.out, dense, h.Offsets[i])
			srcs[j.out] = source{dense, h.Offsets[i], m.updates[j.out], j}
			continue
		}
		if m.mxScales[t.Name] {
			continue
		}
		add(t.Name, t, h.Offsets[i])
		if m.untie && t.Name == embedName {
			add(lmHeadName, t, h.Offsets[i])
		}
	}
	return infos, srcs
}

// shard writes the merged copy of base shard name to w. The shard is read
// with ReadAt a block at a time (not mapped), so memory stays a few blocks
// plus the adapter.
func (m *merger) shard(ctx context.Context, name string, w io.Writer) error {
	var srcs map[string]source
	plan := func(h *safetensors.Header) ([]safetensors.TensorInfo, error) {
		infos, s := m.plan(h, name)
		srcs = s
		return infos, nil
	}
	m.out, _ = w.(*asyncWriter)
	defer func() { m.out = nil }()
	return writeShard(filepath.Join(m.base.Dir, name), w, plan, nil, func(f *os.File, t safetensors.TensorInfo, w io.Writer) error {
		return m.fill(ctx, f, srcs[t.Name], t, w)
	})
}

// writeShard writes the output shard made from the base shard at path:
// plan lists its tensors from the base header, fill writes each one, and
// drain (if set) waits for the work fill queued, while the shard is open.
func writeShard(path string, w io.Writer, plan func(*safetensors.Header) ([]safetensors.TensorInfo, error),
	drain func() error, fill func(*os.File, safetensors.TensorInfo, io.Writer) error) error {
	f, err := userfile.Open(path)
	if err != nil {
		return fmt.Errorf("base shard: %w", err)
	}
	defer f.Close()
	h, err := safetensors.ReadHeader(f)
	if err != nil {
		return fmt.Errorf("base shard: %w", err)
	}
	infos, err := plan(h)
	if err != nil {
		return err
	}
	layout, err := safetensors.NewLayout(infos, h.Metadata)
	if err != nil {
		return fmt.Errorf("shard %s: %w", filepath.Base(path), err)
	}
	_, err = layout.WriteTo(w, func(_ int, t safetensors.TensorInfo, w io.Writer) error { return fill(f, t, w) })
	if drain != nil {
		if derr := drain(); err == nil && derr != nil {
			err = fmt.Errorf("shard %s: %w", filepath.Base(path), derr)
		}
	}
	return err
}

// fill writes one output tensor: the base bytes as they are when nothing
// changes, else row blocks widened, updated and rounded.
func (m *merger) fill(ctx context.Context, f *os.File, s source, t safetensors.TensorInfo, w io.Writer) error {
	if s.mx != nil && s.mx.requant {
		return m.requantMXFP4(ctx, f, s, w)
	}
	if s.mx != nil {
		return m.fillMXFP4(ctx, f, s, t, w)
	}
	if b, ok := m.mxFresh[t.Name]; ok { // made with their blocks, which sort first
		if b == nil {
			return fmt.Errorf("shard layout: %s comes before its blocks", t.Name)
		}
		delete(m.mxFresh, t.Name)
		_, err := w.Write(b)
		return err
	}
	if s.u == nil && s.t.DType == t.DType { // copy_file_range where the output allows (asyncwrite.go)
		_, err := io.Copy(w, io.NewSectionReader(f, s.off, s.t.Bytes()))
		return err
	}
	rows, cols := 1, 1
	if len(t.Shape) > 0 {
		rows = int(t.Shape[0])
		cols = int(s.t.Bytes()/int64(s.t.DType.Size())) / max(rows, 1)
	}
	if s.u != nil { // a fused expert tensor's rows are its experts' rows
		rows, cols = rows*cols/s.u.in, s.u.in
	}
	job := rowJob{in: s.t.DType, out: t.DType, cols: cols, u: s.u}
	step := max(1, blockElems/max(cols, 1))
	isz, osz := s.t.DType.Size()*cols, t.DType.Size()*cols
	if cap(m.src) < step*isz {
		m.src = make([]byte, step*isz)
	}
	make1 := func(lo int, dst []byte) ([]byte, error) {
		n := min(step, rows-lo)
		src := m.src[:n*isz]
		if err := readParallel(f, src, s.off+int64(lo*isz)); err != nil {
			return nil, fmt.Errorf("read base tensor %s: %w", s.t.Name, err)
		}
		job.parallelRows(src, dst[:n*osz], lo, n, &m.bufs)
		return dst[:n*osz], nil
	}
	return m.pipeline(ctx, rows, step, step*osz, make1, w)
}

// pipeline makes the blocks starting at rows 0, step, 2·step… < rows in a
// goroutine while the previous block is written to w, so reading and
// computing overlap writing. The blocks are made in the output's own
// buffers when it lends them (m.out: written without a copy, and the
// next tensor is begun while this one's last block is written), else in
// two buffers of size bytes.
func (m *merger) pipeline(ctx context.Context, rows, step, size int, make1 func(lo int, dst []byte) ([]byte, error), w io.Writer) error {
	blocks, stop := make(chan []byte, 1), make(chan struct{})
	take, give := m.blockBufs(size)
	var makeErr error
	go func() {
		defer close(blocks)
		for lo := 0; lo < rows; lo += step {
			dst := take(stop)
			if dst == nil {
				return
			}
			b, err := make1(lo, dst)
			if err != nil {
				makeErr = err
				return
			}
			blocks <- b
		}
	}()
	var err error
	for b := range blocks {
		if err == nil {
			if err = ctx.Err(); err == nil {
				_, err = w.Write(b)
			}
			if err != nil {
				close(stop) // the maker stops at its next block; drain until then
			}
		}
		if err == nil {
			give(b)
		}
	}
	if err == nil {
		err = makeErr // read after blocks closed: the maker is done
	}
	return err
}

// blockBufs is where pipeline's blocks of size bytes come from and go
// back to once written: the output's lent buffers (Write takes them
// back), else the merger's two.
func (m *merger) blockBufs(size int) (take func(stop <-chan struct{}) []byte, give func([]byte)) {
	if m.out != nil {
		return func(stop <-chan struct{}) []byte { return m.out.take(size, stop) }, func([]byte) {}
	}
	free := make(chan []byte, len(m.blocks))
	for i := range m.blocks {
		if cap(m.blocks[i]) < size {
			m.blocks[i] = make([]byte, size)
		}
		free <- m.blocks[i]
	}
	take = func(stop <-chan struct{}) []byte {
		select {
		case b := <-free:
			return b
		case <-stop:
			return nil
		}
	}
	return take, func(b []byte) { free <- b[:cap(b)] }
}

// indexJSON is model.safetensors.index.json for the shards written.
func (m *merger) indexJSON() ([]byte, error) {
	keys := make([]string, 0, len(m.weightMap))
	for k := range m.weightMap {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type index struct {
		Metadata  map[string]int64  `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	b, err := json.MarshalIndent(index{map[string]int64{"total_size": m.total}, m.weightMap}, "", "  ")
	return append(b, '\n'), err
}
