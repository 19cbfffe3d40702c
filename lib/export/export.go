package export

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// Formats of Export.
const (
	Merged = "merged"
	PEFT   = "peft"
)

// Options say what to export and where.
type Options struct {
	Adapter string // the adapter directory (a downloaded checkpoint or a PEFT adapter)
	Format  string // Merged or PEFT
	// Base is the base model directory; "" looks the base model up in
	// the Hugging Face cache (merged only).
	Base string
	// BaseModel is the checkpoint's base model when known (from its
	// training run); "" uses the adapter's base_model_name_or_path.
	BaseModel string
	// Checkpoint names the source in the model card (a tinker:// path);
	// "" names the adapter directory.
	Checkpoint string
	Out        string
	DType      string // "same" (or ""), "bfloat16" or "float32"
	// Experts is the PEFT layout of expert adapters: ExpertsPerExpert,
	// ExpertsFused, or "" for the one transformers holds the model in
	// (serving.go says which server loads which).
	Experts string
	Force   bool // replace an existing Out
	// Progress, when set, is told the output bytes written so far and
	// the total expected.
	Progress func(done, total int64)
}

// Result describes a finished export.
type Result struct {
	Out, Format, BaseModel string
	BaseDir                string // merged: the base directory used
	Files                  int
	Bytes                  int64 // tensor and file bytes written
	Modules                int   // adapted matrices
	Untied                 bool  // merged: lm_head was untied from the embedding
	Warnings               []string
}

// Export writes o.Out from the adapter in o.Adapter. Every check runs
// before the first byte is written; the output appears atomically.
func Export(ctx context.Context, o Options) (*Result, error) {
	dt, err := parseDType(o.DType)
	if err != nil {
		return nil, err
	}
	if o.Out == "" {
		return nil, fmt.Errorf("no output directory: pass -o OUT")
	}
	if err := CheckOut(o.Out, o.Force); err != nil {
		return nil, err
	}
	if err := CheckInputs(o.Out, o.Adapter, o.Base); err != nil {
		return nil, err
	}
	if err := checkExperts(o); err != nil {
		return nil, err
	}
	if isLatent(o) {
		return exportLatent(ctx, o, dt)
	}
	a, err := ReadAdapter(o.Adapter)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	o.fillFrom(a)
	return o.byFormat(func() (*Result, error) { return exportMerged(ctx, o, a, dt) },
		func() (*Result, error) { return exportPEFT(ctx, o, a, dt) })
}

// fillFrom names the base model and the source from the adapter when
// the caller did not.
func (o *Options) fillFrom(a *Adapter) {
	if o.BaseModel == "" {
		o.BaseModel = a.Config.BaseModelNameOrPath
	}
	if o.Checkpoint == "" {
		o.Checkpoint = o.Adapter
	}
}

// byFormat runs the export of o's format ("" is merged).
func (o *Options) byFormat(merged, peft func() (*Result, error)) (*Result, error) {
	switch o.Format {
	case Merged, "":
		o.Format = Merged
		return merged()
	case PEFT:
		return peft()
	}
	return nil, fmt.Errorf("unknown format %q: use merged or peft", o.Format)
}

// parseDType maps the --dtype names to safetensors dtypes ("" keeps).
func parseDType(s string) (safetensors.DType, error) {
	switch strings.ToLower(s) {
	case "", "same":
		return "", nil
	case "bfloat16", "bf16":
		return safetensors.BF16, nil
	case "float32", "fp32", "f32":
		return safetensors.F32, nil
	}
	return "", fmt.Errorf("unknown dtype %q: use bfloat16, float32 or same", s)
}

// torchDType is the config.json spelling of a dtype.
func torchDType(d safetensors.DType) string {
	return map[safetensors.DType]string{safetensors.BF16: "bfloat16", safetensors.F32: "float32", safetensors.F16: "float16"}[d]
}

// withOut runs write in a fresh output directory and commits it.
func withOut(o Options, need int64, write func(*outDir) error) error {
	var progress func(int64)
	if o.Progress != nil {
		progress = func(n int64) { o.Progress(n, need) }
	}
	out, err := newOutDir(o.Out, o.Force, progress)
	if err != nil {
		return err
	}
	defer out.abort()
	if err := out.checkRoom(need); err != nil {
		return err
	}
	if err := write(out); err != nil {
		return err
	}
	return out.commit()
}

// tempRoot is a scratch directory for generated bases, removed by the
// returned function.
func tempRoot() (string, func(), error) {
	d, err := os.MkdirTemp("", "tinker-export-")
	if err != nil {
		return "", nil, fmt.Errorf("scratch directory: %w", err)
	}
	return d, func() { os.RemoveAll(d) }, nil
}
