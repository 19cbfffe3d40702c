package engine

// rng is a small, fully specified PRNG (splitmix64 seeding xoshiro256**), so
// seeded sampling gives the same stream on every Go version and machine,
// unlike math/rand whose streams are not guaranteed.
type rng struct{ s [4]uint64 }

func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func newRNG(seed uint64) *rng {
	r := &rng{}
	for i := range r.s {
		r.s[i] = splitmix64(&seed)
	}
	return r
}

func rotl(x uint64, k uint) uint64 { return x<<k | x>>(64-k) }

func (r *rng) next() uint64 {
	s := &r.s
	result := rotl(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = rotl(s[3], 45)
	return result
}

// float64 returns a uniform value in [0, 1) with 53 random bits.
func (r *rng) float64() float64 { return float64(r.next()>>11) / (1 << 53) }

// uniform32 returns a uniform value in [0, 1) with 24 random bits; exact in
// float32, so derived weights are identical everywhere.
func (r *rng) uniform32() float32 { return float32(r.next()>>40) / (1 << 24) }
