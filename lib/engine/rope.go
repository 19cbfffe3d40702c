package engine

import "math"

// ropeInvFreq returns the rotary inverse frequencies theta^(-2i/d), i < d/2,
// with the config's frequency scaling applied. Computed in float64.
func ropeInvFreq(c Config) []float64 {
	half := c.HeadDim / 2
	inv := make([]float64, half)
	for i := range inv {
		inv[i] = 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim))
	}
	s := c.RopeScaling
	if s == nil {
		return inv
	}
	switch s.Type {
	case "yarn":
		yarnInvFreq(c, inv)
	case "linear":
		for i := range inv {
			inv[i] /= s.Factor
		}
	case "llama3":
		// Llama 3.1: keep high frequencies (short wavelengths), divide low
		// frequencies by factor, interpolate smoothly in between.
		orig := float64(s.OriginalMaxPositionEmbeddings)
		lowWavelen := orig / s.LowFreqFactor
		highWavelen := orig / s.HighFreqFactor
		for i, f := range inv {
			wavelen := 2 * math.Pi / f
			switch {
			case wavelen < highWavelen:
			case wavelen > lowWavelen:
				inv[i] = f / s.Factor
			default:
				smooth := (orig/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
				inv[i] = float64((1-smooth)*f/s.Factor) + float64(smooth*f)
			}
		}
	}
	return inv
}

// ropeTable fills cos and sin (each HeadDim/2 long) for position pos,
// times scale (YaRN's attention factor, else 1).
func ropeTable(inv []float64, scale float64, pos int, cos, sin []float32) {
	for i, f := range inv {
		s, c := math.Sincos(float64(pos) * f)
		cos[i], sin[i] = float32(c*scale), float32(s*scale)
	}
}

// applyRope rotates each head of x (heads*headDim values) in place, using
// the Hugging Face "rotate_half" pairing of element i with i+headDim/2.
func applyRope(x []float32, headDim int, cos, sin []float32) {
	half := headDim / 2
	for h := 0; h+headDim <= len(x); h += headDim {
		ropeRotate(x[h:h+half], x[h+half:h+headDim], cos, sin, false)
	}
}

// ropeBackward rotates each head of dx back by the angles applyRope used
// (the transpose of the rotation), in place.
func ropeBackward(dx []float32, headDim int, cos, sin []float32) {
	half := headDim / 2
	for h := 0; h+headDim <= len(dx); h += headDim {
		ropeRotate(dx[h:h+half], dx[h+half:h+headDim], cos, sin, true)
	}
}
