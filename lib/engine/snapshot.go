package engine

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// A snapshot is a trainer's whole state: the adapter, the optimizer state
// and the gradients accumulated since the last optim_step, so that a
// server stopping between forward_backward and optim_step continues
// exactly where it was after a restart. A saved training state holds no
// gradients (load_state drops them).

// GradientsFile holds a snapshot's accumulated gradients by PEFT name.
const GradientsFile = "gradients.safetensors"

// WriteSnapshotDir writes the trainer's snapshot into dir, with the
// caller's extra files, atomically (see peft.WriteFiles).
func (t *Trainer) WriteSnapshotDir(dir, baseModel string, extra ...peft.File) error {
	files, err := t.stateFiles(baseModel, true)
	if err == nil {
		files = append(append(files, peft.File{Name: GradientsFile, Write: t.writeGradients}), extra...)
		err = peft.WriteFiles(dir, files)
	}
	if err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	return nil
}

func (t *Trainer) writeGradients(w io.Writer) error {
	t.mu.Lock()
	g := t.collect(func(p *param) []float32 { return p.grad })
	t.mu.Unlock()
	return writeTensors(w, g, nil)
}

// LoadSnapshotDir restores a snapshot written by WriteSnapshotDir into a
// trainer of the same shape.
func (t *Trainer) LoadSnapshotDir(dir string) error {
	if err := t.LoadStateDir(dir, true); err != nil {
		return err
	}
	f, err := safetensors.ReadFile(filepath.Join(dir, GradientsFile))
	if err != nil {
		return fmt.Errorf("load snapshot: %w", err)
	}
	defer f.Close()
	g := Tensors{}
	for i := range f.Tensors {
		x, err := toTensor(&f.Tensors[i])
		if err != nil {
			return fmt.Errorf("load snapshot: %s: %w", GradientsFile, err)
		}
		g[f.Tensors[i].Name] = x
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.check("gradients", g); err != nil {
		return fmt.Errorf("load snapshot: %w", err)
	}
	for _, p := range t.params {
		copy(p.grad, g[p.name].Data)
	}
	return nil
}
