package server

import (
	"fmt"
	"io"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// writeTrained writes a trainer's current adapter as a checkpoint in the
// layout of plan p (the same config file, tensor order and dtype as a
// checkpoint generated from a seed, so size_bytes stays p.Size()), and for
// training checkpoints the optimizer state next to it (kept on the server
// for load_state_with_optimizer; archives hold the PEFT files only). Files
// go to a temporary sibling renamed into place, the marker last.
func writeTrained(p *peft.Plan, tr *engine.Trainer, dir string, withOptimizer bool) error {
	ts := tr.Adapter()
	weights := func(w io.Writer) error {
		_, err := p.Layout.WriteTo(w, func(_ int, info safetensors.TensorInfo, w io.Writer) error {
			x, found := ts[info.Name]
			if !found || int64(len(x.Data)) != info.Bytes()/int64(info.DType.Size()) {
				return fmt.Errorf("the trainer has no tensor %s of %v", info.Name, info.Shape)
			}
			b, err := safetensors.EncodeFloat32(info.DType, x.Data)
			if err == nil {
				_, err = w.Write(b)
			}
			return err
		})
		return err
	}
	files := []peft.File{
		{Name: peft.ConfigFile, Write: func(w io.Writer) error { _, err := w.Write(p.ConfigJSON); return err }},
		{Name: peft.WeightsFile, Write: weights},
	}
	if withOptimizer {
		files = append(files, peft.File{Name: engine.OptimizerFile, Write: tr.WriteOptimizer})
	}
	return peft.WriteFiles(dir, files)
}
