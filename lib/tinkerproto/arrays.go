package tinkerproto

import (
	"encoding/binary"
	"fmt"
	"math"
)

// PackInt32 encodes ints as little-endian int32 values.
func PackInt32(v []int) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(x)))
	}
	return b
}

// UnpackInt32 decodes little-endian int32 values.
func UnpackInt32(b []byte) ([]int, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("int32 array: %d bytes is not a multiple of 4", len(b))
	}
	v := make([]int, len(b)/4)
	for i := range v {
		v[i] = int(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return v, nil
}

// PackFloat32 encodes little-endian float32 values.
func PackFloat32(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// UnpackFloat32 decodes little-endian float32 values.
func UnpackFloat32(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("float32 array: %d bytes is not a multiple of 4", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// TopKPadLogprob pads TopkPromptLogprobs rows shorter than K: a cell of
// token 0 with this logprob means "no candidate".
const TopKPadLogprob = -99999.0
