package safetensors

import (
	"encoding/binary"
	"fmt"
	"os"
)

// Header is a safetensors file's header read without its data: what a
// streaming reader needs to fetch tensors with ReadAt instead of mapping
// the whole file.
type Header struct {
	Metadata map[string]string
	Tensors  []TensorInfo // in data order
	Offsets  []int64      // absolute file offset of each tensor's data
}

// ReadHeader reads and checks f's header: the same rules as Parse (no
// holes or overlaps, no trailing bytes, sizes that match the shapes).
func ReadHeader(f *os.File) (*Header, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var lb [8]byte
	if _, err := f.ReadAt(lb[:], 0); err != nil {
		return nil, fmt.Errorf("safetensors: %s: file shorter than its 8-byte header length", f.Name())
	}
	n := binary.LittleEndian.Uint64(lb[:])
	if n > maxHeaderSize || n > uint64(st.Size()-8) {
		return nil, fmt.Errorf("safetensors: %s: header length %d exceeds file size %d", f.Name(), n, st.Size())
	}
	hb := make([]byte, n)
	if _, err := f.ReadAt(hb, 8); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", f.Name(), err)
	}
	entries, meta, err := parseHeader(hb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	start, dataSize := 8+int64(n), st.Size()-8-int64(n)
	h := &Header{Metadata: meta}
	var end int64
	for _, e := range entries {
		if e.begin != end || e.end > dataSize {
			return nil, fmt.Errorf("safetensors: %s: tensor %s at [%d, %d) leaves a hole, overlaps or passes the end (%d)", f.Name(), e.name, e.begin, e.end, dataSize)
		}
		end = e.end
		h.Tensors = append(h.Tensors, TensorInfo{Name: e.name, DType: e.dtype, Shape: e.shape})
		h.Offsets = append(h.Offsets, start+e.begin)
	}
	if end != dataSize {
		return nil, fmt.Errorf("safetensors: %s: %d trailing bytes after the last tensor", f.Name(), dataSize-end)
	}
	return h, nil
}
