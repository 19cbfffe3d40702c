// Package safetensors reads and writes the safetensors tensor file format:
// an 8-byte little-endian header length, a JSON header mapping tensor names
// to {dtype, shape, data_offsets} (plus an optional "__metadata__" string map),
// then the raw little-endian tensor bytes. Offsets are relative to the start
// of the data section.
//
// The reader is used to load Hugging Face weights and LoRA adapters; the
// writer (with an exact Layout computed before any byte is written) produces
// PEFT adapter files whose size must be known in advance.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
)

// DType is a safetensors element type name, e.g. "F32".
type DType string

// Element types of the safetensors format.
const (
	F64    DType = "F64"
	F32    DType = "F32"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I64    DType = "I64"
	I32    DType = "I32"
	I16    DType = "I16"
	I8     DType = "I8"
	U64    DType = "U64"
	U32    DType = "U32"
	U16    DType = "U16"
	U8     DType = "U8"
	Bool   DType = "BOOL"
	F8E4M3 DType = "F8_E4M3"
	F8E5M2 DType = "F8_E5M2"
)

// Size returns the number of bytes per element, or 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F64, I64, U64:
		return 8
	case F32, I32, U32:
		return 4
	case F16, BF16, I16, U16:
		return 2
	case I8, U8, Bool, F8E4M3, F8E5M2:
		return 1
	}
	return 0
}

// maxHeaderSize bounds the JSON header so a corrupt length cannot make us
// allocate gigabytes (the reference implementation uses the same 100 MB cap).
const maxHeaderSize = 100 << 20

// Tensor is one named tensor. Data holds the raw little-endian bytes; when
// the tensor comes from File it aliases the file's buffer (do not modify).
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte
}

// NumElements is the product of the shape (1 for a scalar).
func (t *Tensor) NumElements() int64 { return numElements(t.Shape) }

// ShapeBytes is the size in bytes of a tensor of shape with elements of
// size bytes, and false if a dimension is negative or the size does not
// fit in an int64 (a hostile header's shape must not wrap around to a
// small product that matches its data).
func ShapeBytes(shape []int64, size int) (int64, bool) {
	n := int64(size)
	for _, d := range shape {
		if d < 0 || (d > 0 && n > math.MaxInt64/d) {
			return 0, false
		}
		n *= d
	}
	return n, true
}

func numElements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// Float32 converts the tensor to float32 values. Supported dtypes: F32, F16,
// BF16 and F64.
func (t *Tensor) Float32() ([]float32, error) {
	out := make([]float32, t.NumElements())
	if err := t.Float32Into(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Float32Into converts into dst, which must have exactly NumElements entries;
// it lets callers reuse buffers when loading many tensors.
func (t *Tensor) Float32Into(dst []float32) error {
	n := t.NumElements()
	if int64(len(dst)) != n {
		return fmt.Errorf("tensor %s: destination has %d elements, need %d", t.Name, len(dst), n)
	}
	if int64(len(t.Data)) != n*int64(t.DType.Size()) {
		return fmt.Errorf("tensor %s: %d data bytes do not match shape %v of %s", t.Name, len(t.Data), t.Shape, t.DType)
	}
	b := t.Data
	switch t.DType {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = F16ToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case F64:
		for i := range dst {
			dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
	default:
		return fmt.Errorf("tensor %s: cannot convert dtype %s to float32", t.Name, t.DType)
	}
	return nil
}

// BF16ToFloat32 widens a bfloat16 bit pattern.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBF16 narrows to bfloat16 with round-to-nearest-even (NaN kept NaN).
func Float32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep it quiet and non-zero
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// F16ToFloat32 widens an IEEE 754 half-precision bit pattern.
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float32ToF16 narrows to IEEE half precision with round-to-nearest-even.
func Float32ToF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	exp := int32(u>>23&0xff) - 127 + 15
	mant := u & 0x7fffff
	if u&0x7fffffff >= 0x7f800000 { // Inf or NaN
		if u&0x7fffffff > 0x7f800000 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	if exp >= 0x1f {
		return sign | 0x7c00
	}
	if exp <= 0 {
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		rem := mant & (1<<shift - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // may carry into the exponent, which is the correct rounding
	}
	return sign | uint16(r)
}

// headerEntry is the JSON form of one tensor in the header.
type headerEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// File is a parsed safetensors file. Tensors are in data-offset order.
type File struct {
	Metadata map[string]string
	Tensors  []Tensor
	byName   map[string]int
	closer   func() error
}

// Tensor returns the named tensor.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Names lists tensor names in data-offset order.
func (f *File) Names() []string {
	out := make([]string, len(f.Tensors))
	for i := range f.Tensors {
		out[i] = f.Tensors[i].Name
	}
	return out
}

// Close releases the file mapping, if any. Tensor data must not be used after.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c()
}

// Parse parses a whole safetensors file held in memory. Tensor data aliases buf.
func Parse(buf []byte) (*File, error) {
	if len(buf) < 8 {
		return nil, errors.New("safetensors: file shorter than its 8-byte header length")
	}
	n := binary.LittleEndian.Uint64(buf)
	if n > maxHeaderSize || n > uint64(len(buf)-8) {
		return nil, fmt.Errorf("safetensors: header length %d exceeds file size %d", n, len(buf))
	}
	entries, meta, err := parseHeader(buf[8 : 8+n])
	if err != nil {
		return nil, err
	}
	data := buf[8+n:]
	f := &File{Metadata: meta, byName: make(map[string]int, len(entries))}
	var end int64
	for _, e := range entries {
		if e.begin != end {
			return nil, fmt.Errorf("safetensors: tensor %s starts at %d, expected %d (holes or overlaps)", e.name, e.begin, end)
		}
		end = e.end
		if end > int64(len(data)) {
			return nil, fmt.Errorf("safetensors: tensor %s ends at %d beyond data size %d", e.name, end, len(data))
		}
		f.byName[e.name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, Tensor{Name: e.name, DType: e.dtype, Shape: e.shape, Data: data[e.begin:e.end:e.end]})
	}
	if end != int64(len(data)) {
		return nil, fmt.Errorf("safetensors: %d trailing bytes after the last tensor", int64(len(data))-end)
	}
	return f, nil
}

type parsedEntry struct {
	name       string
	dtype      DType
	shape      []int64
	begin, end int64
}

func parseHeader(h []byte) ([]parsedEntry, map[string]string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(h, &raw); err != nil {
		return nil, nil, fmt.Errorf("safetensors: bad header JSON: %w", err)
	}
	var meta map[string]string
	entries := make([]parsedEntry, 0, len(raw))
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &meta); err != nil {
				return nil, nil, fmt.Errorf("safetensors: bad __metadata__: %w", err)
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, nil, fmt.Errorf("safetensors: tensor %s: %w", name, err)
		}
		size := e.DType.Size()
		if size == 0 {
			return nil, nil, fmt.Errorf("safetensors: tensor %s: unknown dtype %q", name, e.DType)
		}
		want, ok := ShapeBytes(e.Shape, size)
		if !ok {
			return nil, nil, fmt.Errorf("safetensors: tensor %s: shape %v is negative or too large", name, e.Shape)
		}
		b, en := e.DataOffsets[0], e.DataOffsets[1]
		if b < 0 || en < b {
			return nil, nil, fmt.Errorf("safetensors: tensor %s: bad data_offsets %v", name, e.DataOffsets)
		}
		if en-b != want {
			return nil, nil, fmt.Errorf("safetensors: tensor %s: %d bytes for shape %v of %s, want %d", name, en-b, e.Shape, e.DType, want)
		}
		if e.Shape == nil {
			e.Shape = []int64{}
		}
		entries = append(entries, parsedEntry{name, e.DType, e.Shape, b, en})
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].begin != entries[j].begin {
			return entries[i].begin < entries[j].begin
		}
		return entries[i].end < entries[j].end
	})
	return entries, meta, nil
}

// ReadFile reads a whole file into memory and parses it.
func ReadFile(path string) (*File, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Parse(buf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// TensorInfo describes a tensor to be written.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int64
}

// Bytes is the tensor's data size.
func (ti TensorInfo) Bytes() int64 { return numElements(ti.Shape) * int64(ti.DType.Size()) }

// Layout is the exact byte layout of a file about to be written: the encoded
// header (with its length prefix and padding) and each tensor's data range.
// Tensors are stored in name order, so the same inputs always give the same bytes.
type Layout struct {
	Header  []byte       // length prefix + JSON header, padded to 8 bytes
	Tensors []TensorInfo // in storage order
	Offsets [][2]int64   // data_offsets of Tensors[i]
}

// NewLayout computes the layout for the given tensors and metadata.
func NewLayout(tensors []TensorInfo, metadata map[string]string) (*Layout, error) {
	ts := append([]TensorInfo(nil), tensors...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	l := &Layout{Tensors: ts, Offsets: make([][2]int64, len(ts))}
	// Build the JSON by hand: encoding/json sorts map keys, but we also want
	// the metadata first and a stable, compact form.
	var hb bytes.Buffer
	hb.WriteByte('{')
	if len(metadata) > 0 {
		m, err := json.Marshal(metadata)
		if err != nil {
			return nil, fmt.Errorf("safetensors: metadata: %w", err)
		}
		hb.WriteString(`"__metadata__":`)
		hb.Write(m)
	}
	var off int64
	for i, t := range ts {
		if t.DType.Size() == 0 {
			return nil, fmt.Errorf("safetensors: tensor %s: unknown dtype %q", t.Name, t.DType)
		}
		if t.Name == "" || t.Name == "__metadata__" {
			return nil, fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if i > 0 && ts[i-1].Name == t.Name {
			return nil, fmt.Errorf("safetensors: duplicate tensor name %q", t.Name)
		}
		if hb.Len() > 1 {
			hb.WriteByte(',')
		}
		name, _ := json.Marshal(t.Name)
		hb.Write(name)
		hb.WriteString(`:{"dtype":"`)
		hb.WriteString(string(t.DType))
		hb.WriteString(`","shape":[`)
		if _, ok := ShapeBytes(t.Shape, t.DType.Size()); !ok {
			return nil, fmt.Errorf("safetensors: tensor %s: shape %v is negative or too large", t.Name, t.Shape)
		}
		for k, d := range t.Shape {
			if k > 0 {
				hb.WriteByte(',')
			}
			hb.WriteString(strconv.FormatInt(d, 10))
		}
		end := off + t.Bytes()
		fmt.Fprintf(&hb, `],"data_offsets":[%d,%d]}`, off, end)
		l.Offsets[i] = [2]int64{off, end}
		off = end
	}
	hb.WriteByte('}')
	for (8+hb.Len())%8 != 0 {
		hb.WriteByte(' ')
	}
	l.Header = make([]byte, 8, 8+hb.Len())
	binary.LittleEndian.PutUint64(l.Header, uint64(hb.Len()))
	l.Header = append(l.Header, hb.Bytes()...)
	return l, nil
}

// DataSize is the size of the data section.
func (l *Layout) DataSize() int64 {
	if len(l.Offsets) == 0 {
		return 0
	}
	return l.Offsets[len(l.Offsets)-1][1]
}

// Size is the exact size of the file.
func (l *Layout) Size() int64 { return int64(len(l.Header)) + l.DataSize() }

// WriteTo streams the file, asking fill to write each tensor's bytes in
// storage order. fill must write exactly t.Bytes() bytes; this is checked.
func (l *Layout) WriteTo(w io.Writer, fill func(i int, t TensorInfo, w io.Writer) error) (int64, error) {
	n, err := w.Write(l.Header)
	total := int64(n)
	if err != nil {
		return total, fmt.Errorf("safetensors: write header: %w", err)
	}
	for i, t := range l.Tensors {
		cw := &countWriter{w: w}
		if err := fill(i, t, cw); err != nil {
			return total + cw.n, fmt.Errorf("safetensors: tensor %s: %w", t.Name, err)
		}
		total += cw.n
		if cw.n != t.Bytes() {
			return total, fmt.Errorf("safetensors: tensor %s: wrote %d bytes, want %d", t.Name, cw.n, t.Bytes())
		}
	}
	return total, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadFrom lets io.Copy from fill reach the destination's own ReadFrom
// (a file's copy_file_range), which the wrapper would otherwise hide.
func (c *countWriter) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(c.w, r)
	c.n += n
	return n, err
}

// Write writes tensors (with their Data) and metadata as one safetensors file.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	infos := make([]TensorInfo, len(tensors))
	byName := make(map[string]*Tensor, len(tensors))
	for i := range tensors {
		t := &tensors[i]
		infos[i] = TensorInfo{t.Name, t.DType, t.Shape}
		byName[t.Name] = t
	}
	l, err := NewLayout(infos, metadata)
	if err != nil {
		return err
	}
	_, err = l.WriteTo(w, func(_ int, ti TensorInfo, w io.Writer) error {
		_, err := w.Write(byName[ti.Name].Data)
		return err
	})
	return err
}

// EncodeFloat32 encodes values as raw bytes of the given float dtype
// (F32, F16 or BF16), e.g. to fill Tensor.Data.
func EncodeFloat32(dtype DType, vals []float32) ([]byte, error) {
	switch dtype {
	case F32:
		b := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b, nil
	case BF16:
		b := make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(b[2*i:], Float32ToBF16(v))
		}
		return b, nil
	case F16:
		b := make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(b[2*i:], Float32ToF16(v))
		}
		return b, nil
	}
	return nil, fmt.Errorf("safetensors: cannot encode float32 as %s", dtype)
}
