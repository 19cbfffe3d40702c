package engine

// matMulFold writes (or with accumulate adds) W·x into ys and then adds
// B·t, a LoRA's second product (ts are A·x, B has w's rows): the bits of
// matMul(w, xs, ys, accumulate) followed by matMul(b, ts, ys, true). On
// the AVX-512 path each worker adds B's rows into a piece of ys right
// after its tiles wrote that piece, while it is in L2 (matMulFoldAsm);
// run after the whole product, the second pass read and wrote every
// output from memory again: on the lm_head, 128 × 151,936 logits a
// chunk (issue 34, headfold).
func matMulFold(w mat, xs, ys [][]float32, b mat, ts [][]float32, accumulate bool) {
	if matMulFoldAsm(w, xs, ys, b, ts, accumulate) {
		return
	}
	matMul(w, xs, ys, accumulate)
	matMul(b, ts, ys, true)
}
