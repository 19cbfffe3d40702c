package engine

import "math"

// fma32Soft returns x·y + z rounded once to float32 (round to nearest,
// ties to even): the fused multiply-add of the vector kernels' VFMADD.
// Go has no float32 FMA, and float32(math.FMA(x, y, z)) rounds twice
// (to float64, then to float32), which differs in rare cases (x·y far
// below z and the float64 sum landing on a float32 halfway point;
// TestFMA32 has some). Here x·y is exact in float64 (24 + 24 bits), the
// sum's rounding error is recovered exactly (TwoSum), and a sum that was
// rounded is made odd in its last bit (round to odd), which float32 then
// rounds correctly: float64 has more than 24 + 2 bits.
func fma32Soft(x, y, z float32) float32 {
	p := float64(x) * float64(y)
	zz := float64(z)
	s := p + zz
	bv := s - p
	e := (p - (s - bv)) + (zz - bv)
	if e == 0 || math.IsInf(s, 0) || math.IsNaN(e) {
		return float32(s)
	}
	bits := math.Float64bits(s)
	if bits&1 == 0 {
		// Step to the odd neighbour on e's side of s.
		if (e > 0) == (s > 0) {
			bits++
		} else {
			bits--
		}
	}
	return float32(math.Float64frombits(bits))
}
