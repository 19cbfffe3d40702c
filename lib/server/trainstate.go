package server

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("create checkpoint parent: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("create checkpoint temp dir: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
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
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{peft.ConfigFile, func(w io.Writer) error { _, err := w.Write(p.ConfigJSON); return err }},
		{peft.WeightsFile, weights},
	}
	if withOptimizer {
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{engine.OptimizerFile, tr.WriteOptimizer})
	}
	for _, f := range append(files, struct {
		name  string
		write func(io.Writer) error
	}{peft.CompleteFile, func(io.Writer) error { return nil }}) {
		if err := writeFileSynced(filepath.Join(tmp, f.name), f.write); err != nil {
			return err
		}
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("move checkpoint into place: %w", err)
	}
	ok = true
	return nil
}

func writeFileSynced(path string, body func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.Base(path), err)
	}
	err = body(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}
