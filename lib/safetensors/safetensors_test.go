package safetensors

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	f32, _ := EncodeFloat32(F32, []float32{1, -2, 3.5, 0, 1e-3, 7})
	bf, _ := EncodeFloat32(BF16, []float32{1, -2, 3.5, 0.15625})
	h, _ := EncodeFloat32(F16, []float32{1, -2, 65504, 6e-8})
	in := []Tensor{
		{Name: "b.weight", DType: F32, Shape: []int64{2, 3}, Data: f32},
		{Name: "a.weight", DType: BF16, Shape: []int64{4}, Data: bf},
		{Name: "c", DType: F16, Shape: []int64{2, 2}, Data: h},
		{Name: "scalar", DType: I64, Shape: []int64{}, Data: make([]byte, 8)},
	}
	var buf bytes.Buffer
	if err := Write(&buf, in, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	hl := binary.LittleEndian.Uint64(buf.Bytes())
	if (8+hl)%8 != 0 {
		t.Errorf("header not padded to 8 bytes: %d", hl)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" {
		t.Errorf("metadata = %v", f.Metadata)
	}
	if got := strings.Join(f.Names(), ","); got != "a.weight,b.weight,c,scalar" {
		t.Errorf("names = %s", got)
	}
	bt, _ := f.Tensor("b.weight")
	v, err := bt.Float32()
	if err != nil {
		t.Fatal(err)
	}
	if v[2] != 3.5 || v[4] != float32(1e-3) || len(v) != 6 {
		t.Errorf("F32 values = %v", v)
	}
	at, _ := f.Tensor("a.weight")
	if v, _ := at.Float32(); v[0] != 1 || v[1] != -2 || v[2] != 3.5 || v[3] != 0.15625 {
		t.Errorf("BF16 values = %v", v)
	}
	ct, _ := f.Tensor("c")
	if v, _ := ct.Float32(); v[0] != 1 || v[1] != -2 || v[2] != 65504 || math.Abs(float64(v[3]-5.960464477539063e-08)) > 1e-12 {
		t.Errorf("F16 values = %v", v)
	}
	st, _ := f.Tensor("scalar")
	if st.NumElements() != 1 || len(st.Shape) != 0 {
		t.Errorf("scalar shape %v", st.Shape)
	}
	if _, err := st.Float32(); err == nil {
		t.Error("I64 to float32 should fail")
	}
	// Layout.Size is exact.
	infos := []TensorInfo{}
	for _, x := range in {
		infos = append(infos, TensorInfo{x.Name, x.DType, x.Shape})
	}
	l, _ := NewLayout(infos, map[string]string{"format": "pt"})
	if l.Size() != int64(buf.Len()) {
		t.Errorf("layout size %d, file %d", l.Size(), buf.Len())
	}
}

func TestOpenMmap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.safetensors")
	d, _ := EncodeFloat32(F32, []float32{1, 2, 3})
	var buf bytes.Buffer
	if err := Write(&buf, []Tensor{{Name: "x", DType: F32, Shape: []int64{3}, Data: d}}, nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, buf.Bytes(), 0o644)
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	x, ok := f.Tensor("x")
	if !ok {
		t.Fatal("missing x")
	}
	v, _ := x.Float32()
	if v[2] != 3 {
		t.Errorf("v = %v", v)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("missing file should fail")
	}
}

func TestReadsPythonWrittenFile(t *testing.T) {
	// Bytes as produced by safetensors.torch.save_file({"w": torch.tensor([[1.,2.],[3.,4.]])}).
	hdr := `{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}`
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
	b = append(b, hdr...)
	for _, v := range []float32{1, 2, 3, 4} {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := f.Tensor("w")
	if v, _ := w.Float32(); v[3] != 4 {
		t.Errorf("v = %v", v)
	}
}

func TestRejectsCorrupt(t *testing.T) {
	good := func(hdr string, data int) []byte {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
		return append(append(b, hdr...), make([]byte, data)...)
	}
	cases := map[string][]byte{
		"short":     {1, 2},
		"huge len":  append([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, '{', '}'),
		"bad json":  good(`{"w":`, 0),
		"bad dtype": good(`{"w":{"dtype":"X9","shape":[1],"data_offsets":[0,4]}}`, 4),
		"size":      good(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4),
		"hole":      good(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8),
		"trailing":  good(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 8),
		"past end":  good(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4),
		// Shapes whose byte size wraps around int64 to the 0 bytes given.
		"overflow":   good(`{"w":{"dtype":"F32","shape":[4611686018427387904,64],"data_offsets":[0,0]}}`, 0),
		"overflow 2": good(`{"w":{"dtype":"BF16","shape":[4611686018427387904,4],"data_offsets":[0,0]}}`, 0),
		"overlap":    good(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"v":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}`, 8),
	}
	for name, b := range cases {
		if _, err := Parse(b); err == nil {
			t.Errorf("%s: expected error", name)
		}
	}
}

func TestHalfConversions(t *testing.T) {
	// Every finite F16 value round-trips through float32.
	for h := 0; h < 0x10000; h++ {
		f := F16ToFloat32(uint16(h))
		if f != f { // NaN
			if g := F16ToFloat32(Float32ToF16(f)); g == g {
				t.Fatalf("NaN %04x did not stay NaN", h)
			}
			continue
		}
		if back := Float32ToF16(f); back != uint16(h) {
			t.Fatalf("F16 %04x -> %g -> %04x", h, f, back)
		}
	}
	for h := 0; h < 0x10000; h++ {
		f := BF16ToFloat32(uint16(h))
		if f != f {
			continue
		}
		if back := Float32ToBF16(f); back != uint16(h) {
			t.Fatalf("BF16 %04x -> %g -> %04x", h, f, back)
		}
	}
	// Rounding: halfway cases go to even.
	if got := Float32ToBF16(math.Float32frombits(0x3f808000)); got != 0x3f80 {
		t.Errorf("bf16 tie rounding = %04x", got)
	}
	if got := Float32ToBF16(math.Float32frombits(0x3f818000)); got != 0x3f82 {
		t.Errorf("bf16 tie rounding odd = %04x", got)
	}
	if got := Float32ToF16(1e6); got != 0x7c00 {
		t.Errorf("overflow = %04x", got)
	}
}

func TestLayoutStreaming(t *testing.T) {
	l, err := NewLayout([]TensorInfo{{"z", F32, []int64{2}}, {"a", BF16, []int64{3}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := l.WriteTo(&buf, func(i int, ti TensorInfo, w io.Writer) error {
		_, err := w.Write(make([]byte, ti.Bytes()))
		return err
	})
	if err != nil || n != l.Size() || int64(buf.Len()) != l.Size() {
		t.Fatalf("n=%d size=%d len=%d err=%v", n, l.Size(), buf.Len(), err)
	}
	if _, err := l.WriteTo(io.Discard, func(int, TensorInfo, io.Writer) error { return nil }); err == nil {
		t.Error("short fill should fail")
	}
	if _, err := NewLayout([]TensorInfo{{"a", F32, nil}, {"a", F32, nil}}, nil); err == nil {
		t.Error("duplicate names should fail")
	}
}

// TestReadHeader: the header alone gives each tensor's bytes at its offset,
// and a file cut short is refused.
func TestReadHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	var buf bytes.Buffer
	ts := []Tensor{{Name: "b", DType: F32, Shape: []int64{2}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{Name: "a", DType: BF16, Shape: []int64{1, 3}, Data: []byte{9, 10, 11, 12, 13, 14}}}
	if err := Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, buf.Bytes(), 0o644)
	f, _ := os.Open(path)
	defer f.Close()
	h, err := ReadHeader(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Tensors) != 2 || h.Tensors[0].Name != "a" || h.Metadata["format"] != "pt" {
		t.Fatalf("header %+v", h)
	}
	for i, ti := range h.Tensors {
		got := buf.Bytes()[h.Offsets[i] : h.Offsets[i]+ti.Bytes()]
		want := ts[1-i].Data
		if !bytes.Equal(got, want) {
			t.Errorf("%s: bytes %v at offset %d, want %v", ti.Name, got, h.Offsets[i], want)
		}
	}
	os.WriteFile(path, buf.Bytes()[:buf.Len()-1], 0o644)
	g, _ := os.Open(path)
	defer g.Close()
	if _, err := ReadHeader(g); err == nil {
		t.Error("a truncated file passed")
	}
}

func TestNonFinite(t *testing.T) {
	for _, dt := range []DType{F32, BF16, F16} {
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			data, err := EncodeFloat32(dt, []float32{1, -2.5, 0, bad, 3})
			if err != nil {
				t.Fatal(err)
			}
			x := Tensor{Name: "x", DType: dt, Shape: []int64{5}, Data: data}
			if i := x.NonFinite(); i != 3 {
				t.Errorf("%s with %v: NonFinite = %d, want 3", dt, bad, i)
			}
			x.Data = x.Data[:3*dt.Size()]
			if i := x.NonFinite(); i != -1 {
				t.Errorf("%s finite: NonFinite = %d", dt, i)
			}
		}
	}
}

// Long tensors go through the four-words-at-a-time scan: the largest
// finite values of either sign never count, and a NaN or infinity at any
// position (inside a chunk, at its edges, in the tail) is found exactly.
func TestNonFiniteLong(t *testing.T) {
	for _, dt := range []DType{F32, BF16, F16} {
		big := map[DType]float32{F32: math.MaxFloat32, BF16: 3.38e38, F16: 65504}[dt]
		vals := make([]float32, 77)
		for i := range vals {
			vals[i] = big * float32(1-2*(i%2))
		}
		clean, err := EncodeFloat32(dt, vals)
		if err != nil {
			t.Fatal(err)
		}
		x := Tensor{Name: "x", DType: dt, Shape: []int64{77}, Data: clean}
		if i := x.NonFinite(); i != -1 {
			t.Fatalf("%s: largest finite values: NonFinite = %d", dt, i)
		}
		for pos := range vals {
			v := append([]float32(nil), vals...)
			v[pos] = float32(math.Inf(1 - 2*(pos%2)))
			if pos%3 == 0 {
				v[pos] = float32(math.NaN())
			}
			v[min(pos+5, 76)] = float32(math.NaN()) // a later one must not win
			data, _ := EncodeFloat32(dt, v)
			x.Data = data
			if i := x.NonFinite(); i != int64(pos) {
				t.Fatalf("%s: bad value at %d: NonFinite = %d", dt, pos, i)
			}
		}
	}
}
