package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/tinkershell/tinker/lib/download"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/shell"
)

// tinker checkpoint export and tinker serve import-adapter: a checkpoint out
// as a merged model or PEFT adapter (lib/export, through the same operation
// as export()), and an external PEFT adapter in as a training run.

var checkpointExportCmd = &command{
	Name:    "export",
	Summary: "Export a checkpoint as a merged model or a PEFT adapter.",
	Help: "Export CHECKPOINT_PATH (a tinker:// checkpoint, downloaded first, or a local\n" +
		"adapter directory) to OUT. --format merged writes a Hugging Face model with\n" +
		"the adapter merged into the base weights, in the base's shards and dtype;\n" +
		"the base is --base DIR, else the base model in the Hugging Face cache.\n" +
		"--format peft writes an adapter that PEFT loads, saying in one line what vLLM\n" +
		"loads; --experts chooses how expert adapters are written.\n" +
		"OUT appears only when complete.",
	Args: checkpointPath,
	Flags: []flagSpec{
		{Long: "--format", Kind: flagString, Metavar: "[merged|peft]", Help: "What to write (default: merged)."},
		{Long: "--base", Kind: flagPath, Metavar: "DIR", Help: "Base model directory (merged; default: the Hugging Face cache)."},
		{Long: "--output", Short: "-o", Kind: flagPath, Metavar: "OUT", Help: "Output directory (required)."},
		{Long: "--dtype", Kind: flagString, Metavar: "[bfloat16|float32|same]", Help: "Dtype of the written weights (default: same)."},
		{Long: "--experts", Kind: flagString, Metavar: "[per-expert|fused]", Help: "PEFT layout of expert adapters (default: as transformers holds the model)."},
		{Long: "--force", Kind: flagBool, Help: "Replace an existing OUT (only once the new one is complete)."},
	},
	API: checkpointExport,
}

// ownsFormat: a command whose own --format is not the output format
// (checkpoint export --format merged|peft); -f json before the command
// words still chooses JSON output.
func ownsFormat(cmd *command) bool {
	return slices.ContainsFunc(cmd.flags(), func(f flagSpec) bool { return f.Long == "--format" })
}

func checkpointExport(r *apiRun) error {
	path, out := r.args[0], r.str("output")
	if out == "" {
		return &tinkerapi.UserError{Msg: "Missing option '-o' / '--output': the output directory."}
	}
	o := ops.ExportOptions{Format: r.str("format"), Base: r.str("base"), DType: r.str("dtype"), Experts: r.str("experts"), Force: r.has("force")}
	var stage *progress.Staged
	var bar *progress.Bar
	if r.io.ErrTTY {
		o.Start = func(tinkerapi.Path) download.Progress {
			stage = ops.DownloadStage(r.io.Err, r.io.Width)
			return stage
		}
		o.Progress = func(done, total int64) {
			if bar == nil {
				ops.EndStage(stage, nil)
				bar = progress.NewBytes(r.io.Err, true, r.io.Width, "Writing", total)
			}
			bar.Set(done)
		}
	}
	res, err := ops.ExportCheckpoint(r.ctx, r.preflight, path, out, o)
	if bar != nil {
		bar.End(err)
	} else {
		ops.EndStage(stage, err)
	}
	if err != nil {
		return oneLine(err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(r.io.Err, "Warning: %s\n", w)
	}
	return r.show(res)
}

// oneLine shows a local failure as "Error: <message>"; API and download
// errors keep their own form.
func oneLine(err error) error {
	switch err.(type) {
	case *tinkerapi.UserError, *tinkerapi.APIError, *tinkerapi.ConfigError:
		return err
	}
	if strings.Contains(err.Error(), "\n") {
		return err
	}
	return &tinkerapi.UserError{Msg: err.Error()}
}

var serveImportAdapterCmd = &command{
	Name:    "import-adapter",
	Summary: "Turn a PEFT LoRA adapter into a training run.",
	Help: "Import the PEFT adapter in DIR (adapter_config.json and adapter_model.safetensors)\n" +
		"as a training run of the local user on --base-model, with a weights checkpoint\n" +
		"to continue training (training_client(state=...)) and a sampler checkpoint,\n" +
		"both named --name (default: imported).",
	Args: []argSpec{{Name: "DIR"}},
	Flags: []flagSpec{
		{Long: "--base-model", Kind: flagString, Metavar: "M", Help: "Base model of the adapter (required)."},
		{Long: "--name", Kind: flagString, Metavar: "N", Help: "Checkpoint name (default: imported)."},
		{Long: "--data", Kind: flagPath, Metavar: "DIR", Help: "Data directory (default $XDG_DATA_HOME/tinker, what --local uses)."},
		{Long: "--model", Kind: flagMulti, Metavar: "NAME=DIR", Help: "Register base model NAME from a model directory (repeatable)."},
	},
	Run: runImportAdapter,
}

func runImportAdapter(c *invocation) int {
	local, err := localServer()
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	base := c.str("base-model")
	if base == "" {
		return c.usageError("Missing option '--base-model'.")
	}
	if _, err := modelDirs(local, append(c.multi("model"), c.opts.models...)); err != nil {
		return c.usageError(err.Error())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := local.ImportAdapter(ctx, dataFlag(c), c.args[0], base, c.str("name"), c.now())
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: import-adapter %s: %s\n", render.Printable(c.args[0]), render.Printable(err.Error()))
		return shell.ExitError
	}
	fmt.Fprintf(c.io.Err, "Imported %s as run %s (rank %d, trains %s)\n", render.Printable(c.args[0]), res.RunID, res.Rank, strings.Join(res.Targets, ", "))
	fmt.Fprintln(c.io.Out, res.Path)
	fmt.Fprintln(c.io.Out, res.SamplerPath)
	return shell.ExitOK
}
