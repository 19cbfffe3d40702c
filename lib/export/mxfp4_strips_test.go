package export

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// An MXFP4 base merged on one core and on three gives the same bytes,
// requantised and dense, with strips whole or cut into pieces of 64
// outputs; and the dense float32 merge, made a piece at a time on the
// cores, is the whole-expert computation's value for value: each expert
// decoded, row (e, h) of the update added to its transposed column,
// nothing rounded.
func TestMXFP4SameOnAnyCores(t *testing.T) {
	ad, mx := gptOssAdapter(t), gptOssBaseOf(t, true)
	outs := map[string]map[string]safetensors.Tensor{}
	defer func(n int) { mxOutputs = n }(mxOutputs)
	for _, run := range []struct{ procs, outputs int }{{1, 256}, {3, 256}, {1, 64}, {3, 64}} {
		prev := runtime.GOMAXPROCS(run.procs)
		mxOutputs = run.outputs
		for _, dt := range []string{"", "bfloat16", "float32"} {
			out := filepath.Join(t.TempDir(), "out")
			_, err := Export(context.Background(), Options{Adapter: ad, Base: mx, Out: out, DType: dt})
			if err != nil {
				runtime.GOMAXPROCS(prev)
				t.Fatal(err)
			}
			got := readAll(t, out)
			if want, ok := outs[dt]; ok {
				sameTensors(t, fmt.Sprintf("dtype %q, %d cores, pieces of %d outputs", dt, run.procs, run.outputs), got, want)
			}
			outs[dt] = got
		}
		runtime.GOMAXPROCS(prev)
		checkDenseMXFP4(t, mx, ad, outs["float32"])
	}
}

func sameTensors(t *testing.T, what string, got, want map[string]safetensors.Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tensors, want %d", what, len(got), len(want))
	}
	for name, w := range want {
		if !bytes.Equal(got[name].Data, w.Data) {
			t.Fatalf("%s: %s differs", what, name)
		}
	}
}

// checkDenseMXFP4 compares every dense expert tensor in out with the
// whole-expert reference, bit for bit.
func checkDenseMXFP4(t *testing.T, mx, ad string, out map[string]safetensors.Tensor) {
	base, err := OpenBase(mx)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ReadAdapter(ad)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	m, _, err := newMerger(base, a, safetensors.F32)
	if err != nil {
		t.Fatal(err)
	}
	all, checked := readAll(t, mx), 0
	for _, j := range m.mx {
		u := m.updates[j.out]
		ot := out[j.out]
		got, err := ot.Float32()
		if err != nil || u == nil {
			t.Fatalf("%s: %v (update %v)", j.out, err, u != nil)
		}
		per := j.rows * j.cols
		dense, d := make([]float32, j.experts*per), make([]float32, j.rows)
		quant.MXFP4Decode(all[j.blocks.Name].Data, all[j.scales.Name].Data, dense)
		for e := range j.experts {
			for h := range j.cols {
				u.deltaRow(e*j.cols+h, d)
				for o := range j.rows {
					want, g := dense[e*per+o*j.cols+h]+d[o], got[(e*j.cols+h)*j.rows+o]
					if math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%s expert %d input %d output %d: %g, want %g", j.out, e, h, o, g, want)
					}
				}
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no MXFP4 weight checked: the test proves nothing")
	}
}
