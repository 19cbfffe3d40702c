package export

import (
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// GPT-OSS keeps each layer's experts in two fused parameters stored input
// first: mlp.experts.gate_up_proj [experts, hidden, 2·inter], gate and up
// interleaved along the last axis (gate the even columns), and
// mlp.experts.down_proj [experts, inter, hidden]. A row of such a tensor is
// one input dimension, so its update is the transpose of the experts'
// B'·A: row (e, h) of gate_up gets Σ_k A_gate[k][h]·B'_gate[i][k] at
// column 2i and the up projection's at 2i+1. As an update it has rank 2r
// (gate's r terms, then up's) with one "A" per expert built from the B's
// (gptOssFusedUpdate). The released checkpoints store the two as MXFP4
// blocks, which the merge dequantises (mxfp4.go).

// gptOssFusedUpdate is fusedUpdate for a GPT-OSS base.
func gptOssFusedUpdate(name string, t safetensors.TensorInfo, experts int, get func(int, string) (Module, bool), scale float32) (*update, error) {
	gateUp := strings.HasSuffix(name, "gate_up_proj")
	if len(t.Shape) != 3 || int(t.Shape[0]) != experts || !isFloat(t.DType) || (gateUp && t.Shape[2]%2 != 0) {
		return nil, fmt.Errorf("base tensor %s is %s %v, want a 3-D float tensor of %d experts", name, t.DType, t.Shape, experts)
	}
	rows, cols := int(t.Shape[1]), int(t.Shape[2]) // input dims, outputs
	projs := []string{"down_proj"}
	if gateUp {
		projs = []string{"gate_proj", "up_proj"}
	}
	var r int
	for e := range experts {
		for _, p := range projs {
			if m, ok := get(e, p); ok {
				r = int(m.A.Shape[0])
			}
		}
	}
	R := r * len(projs)
	u := &update{r: R, in: cols, out: experts * rows, rowsPerA: rows, a: make([]float32, experts*R*cols), b: make([]float32, experts*rows*R)}
	for e := range experts {
		for j, p := range projs {
			m, ok := get(e, p)
			if !ok {
				continue
			}
			one, err := newUpdate(m, scale)
			if err != nil {
				return nil, err
			}
			if one.r != r || one.in != rows || one.out*len(projs) != cols {
				return nil, fmt.Errorf("adapter module %s (rank %d, [%d %d]) does not fit %s %v", m.Path, one.r, one.out, one.in, name, t.Shape)
			}
			for k := range r { // this projection's terms are k' = j·r + k
				for h := range rows {
					u.b[(e*rows+h)*R+j*r+k] = one.a[k*rows+h]
				}
				for i := range one.out {
					u.a[(e*R+j*r+k)*cols+i*len(projs)+j] = one.b[i*r+k]
				}
			}
		}
	}
	return u, nil
}

// hasExperts reports whether the adapter adapts any expert.
func hasExperts(a *Adapter) bool {
	for _, m := range a.Modules {
		if expertModule.MatchString(m.Path) {
			return true
		}
	}
	return false
}
