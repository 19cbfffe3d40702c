// Package wiretensor decodes the tensors of the Tinker wire protocol: a
// dtype, little-endian values, and either a dense array or a 2-D
// compressed-sparse-row (CSR) one. The local server decodes the tensors a
// client sends (loss_fn_inputs) and the client decodes the ones a server
// returns (loss_fn_outputs) through this one package, so both sides accept
// the same dtypes and refuse the same malformed arrays with the same words.
package wiretensor

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// Size is the width in bytes of one value of dt, 0 for a dtype the
// protocol does not define.
func Size(dt tinkerproto.DType) int {
	switch dt {
	case tinkerproto.DType_DTYPE_FLOAT32, tinkerproto.DType_DTYPE_INT32:
		return 4
	case tinkerproto.DType_DTYPE_INT64:
		return 8
	case tinkerproto.DType_DTYPE_BFLOAT16:
		return 2
	}
	return 0
}

// Values are decoded values: floats (float32 and bfloat16 on the wire) in
// Float32, integers (int64 and int32) in Int64. Exactly one is non-nil,
// even when empty, so the kind survives an empty tensor.
type Values struct {
	Float32 []float32
	Int64   []int64
}

// Len is the number of values.
func (v Values) Len() int { return len(v.Float32) + len(v.Int64) }

// Float64s is the values as float64, the form the engine computes with.
func (v Values) Float64s() []float64 {
	out := make([]float64, 0, v.Len())
	for _, x := range v.Float32 {
		out = append(out, float64(x))
	}
	for _, x := range v.Int64 {
		out = append(out, float64(x))
	}
	return out
}

// Dense decodes b as little-endian values of dt.
func Dense(b []byte, dt tinkerproto.DType) (Values, error) {
	size := Size(dt)
	if size == 0 {
		return Values{}, fmt.Errorf("unsupported dtype %v", dt)
	}
	if len(b)%size != 0 {
		return Values{}, fmt.Errorf("%d bytes are not whole %d-byte values", len(b), size)
	}
	n := len(b) / size
	switch dt {
	case tinkerproto.DType_DTYPE_FLOAT32:
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return Values{Float32: v}, nil
	case tinkerproto.DType_DTYPE_BFLOAT16: // the high half of a float32
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
		return Values{Float32: v}, nil
	case tinkerproto.DType_DTYPE_INT64:
		v, err := Int64s(b)
		return Values{Int64: v}, err
	}
	v := make([]int64, n) // int32
	for i := range v {
		v[i] = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return Values{Int64: v}, nil
}

// Int64s decodes little-endian int64 values (offsets, CSR indices).
func Int64s(b []byte) ([]int64, error) {
	if len(b)%8 != 0 {
		return nil, fmt.Errorf("int64 array: %d bytes is not a multiple of 8", len(b))
	}
	v := make([]int64, len(b)/8)
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v, nil
}

// CSR expands a 2-D compressed-sparse-row matrix (its non-zero values,
// row pointers and column indices) to dense row-major values. When limit
// is positive, a shape holding more than limit values is refused before
// anything is allocated: a server bounds every size a client sends.
func CSR(vals []float64, crow, col, shape []int64, limit int) ([]float64, error) {
	if len(shape) != 2 || shape[0] < 0 || shape[1] < 0 {
		return nil, fmt.Errorf("a sparse tensor needs a 2-D shape, got %v", shape)
	}
	rows, cols := shape[0], shape[1]
	if l := int64(limit); limit > 0 && (rows > l || cols > l || rows*cols > l) {
		return nil, fmt.Errorf("sparse shape %v holds more than %d values", shape, limit)
	}
	if int64(len(crow)) != rows+1 || len(col) != len(vals) || crow[0] != 0 || crow[rows] != int64(len(vals)) {
		return nil, fmt.Errorf("sparse tensor of shape %v has %d row pointers, %d column indices and %d values", shape, len(crow), len(col), len(vals))
	}
	dense := make([]float64, rows*cols)
	for r := int64(0); r < rows; r++ {
		if crow[r] > crow[r+1] {
			return nil, fmt.Errorf("sparse row pointers decrease at row %d", r)
		}
		for k := crow[r]; k < crow[r+1]; k++ {
			if col[k] < 0 || col[k] >= cols {
				return nil, fmt.Errorf("sparse column index %d out of range [0, %d)", col[k], cols)
			}
			dense[r*cols+col[k]] = vals[k]
		}
	}
	return dense, nil
}
