package wiretensor

import (
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

func TestDenseDecodesEveryDType(t *testing.T) {
	f32 := binary.LittleEndian.AppendUint32(nil, math.Float32bits(-1.5))
	i32 := binary.LittleEndian.AppendUint32(nil, uint32(0xFFFFFFFE)) // -2
	i64 := binary.LittleEndian.AppendUint64(nil, uint64(1)<<40)
	bf16 := binary.LittleEndian.AppendUint16(nil, uint16(math.Float32bits(3.0)>>16))
	for _, tc := range []struct {
		b    []byte
		dt   tinkerproto.DType
		want []float64
		ints bool
	}{
		{f32, tinkerproto.DType_DTYPE_FLOAT32, []float64{-1.5}, false},
		{bf16, tinkerproto.DType_DTYPE_BFLOAT16, []float64{3}, false},
		{i32, tinkerproto.DType_DTYPE_INT32, []float64{-2}, true},
		{i64, tinkerproto.DType_DTYPE_INT64, []float64{1 << 40}, true},
	} {
		v, err := Dense(tc.b, tc.dt)
		if err != nil {
			t.Fatalf("%v: %v", tc.dt, err)
		}
		if got := v.Float64s(); !reflect.DeepEqual(got, tc.want) || (v.Int64 != nil) != tc.ints {
			t.Errorf("%v: %v (ints %v), want %v", tc.dt, got, v.Int64 != nil, tc.want)
		}
	}
	if v, err := Dense(nil, tinkerproto.DType_DTYPE_INT64); err != nil || v.Int64 == nil {
		t.Errorf("an empty int64 tensor lost its kind: %+v, %v", v, err)
	}
	if _, err := Dense(make([]byte, 6), tinkerproto.DType_DTYPE_FLOAT32); err == nil {
		t.Error("6 bytes decoded as float32s")
	}
	if _, err := Dense(nil, tinkerproto.DType(99)); err == nil {
		t.Error("an unknown dtype decoded")
	}
}

func TestCSRExpandsAndRefusesMalformed(t *testing.T) {
	// [[0 5 0] [7 0 9]]
	got, err := CSR([]float64{5, 7, 9}, []int64{0, 1, 3}, []int64{1, 0, 2}, []int64{2, 3}, 0)
	if want := []float64{0, 5, 0, 7, 0, 9}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("CSR = %v, %v; want %v", got, err, want)
	}
	for _, tc := range []struct {
		name            string
		vals            []float64
		crow, col, shpe []int64
		limit           int
		want            string
	}{
		{"1-D", nil, []int64{0}, nil, []int64{3}, 0, "2-D shape"},
		{"too big", nil, []int64{0, 0}, nil, []int64{1, 1 << 40}, 100, "more than 100 values"},
		{"pointers", []float64{1}, []int64{0, 2}, []int64{0}, []int64{1, 2}, 0, "row pointers"},
		{"decreasing", []float64{1, 2}, []int64{0, 2, 1, 2}, []int64{0, 1}, []int64{3, 2}, 0, "decrease at row 1"},
		{"column", []float64{1}, []int64{0, 1}, []int64{5}, []int64{1, 2}, 0, "column index 5"},
	} {
		if _, err := CSR(tc.vals, tc.crow, tc.col, tc.shpe, tc.limit); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}
