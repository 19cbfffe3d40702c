package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tokenizer"
	"github.com/tinkershell/tinker/shell"
)

// Subcommands in the style of the tinkex CLI for saving and sampling, and
// a token counter; each is one call of the builtin's Go function.

var sampleCmd = &command{
	Name:    "sample",
	Summary: "Sample from a base model or a checkpoint.",
	Help: "Sample from --base-model or --model-path (a tinker:// sampler checkpoint) on --prompt or --prompt-file.\n" +
		"With --prompts FILE (a prompts JSONL file) and --output FILE: sample every prompt from every\n" +
		"--model-path and --base-model (each repeatable) into FILE, resuming an interrupted run.",
	Flags: []flagSpec{
		{Long: "--base-model", Kind: flagMulti, Metavar: "MODEL", Help: "Base model to sample (repeatable with --prompts)."},
		{Long: "--model-path", Kind: flagMulti, Metavar: "PATH", Help: "tinker:// path of a sampler checkpoint (repeatable\nwith --prompts)."},
		{Long: "--prompt", Kind: flagString, Metavar: "TEXT", Help: "Prompt text."},
		{Long: "--prompt-file", Kind: flagPath, Metavar: "FILE", Help: "Read the prompt from FILE (- for stdin)."},
		{Long: "--max-tokens", Kind: flagInt, Metavar: "INTEGER", Help: "Tokens to generate (default 64)."},
		{Long: "--temperature", Kind: flagString, Metavar: "FLOAT", Help: "Sampling temperature; 0 is greedy (default 1.0)."},
		{Long: "--top-k", Kind: flagInt, Metavar: "INTEGER", Help: "Keep the k likeliest tokens; -1 keeps all (default)."},
		{Long: "--top-p", Kind: flagString, Metavar: "FLOAT", Help: "Nucleus sampling mass (default 1.0)."},
		{Long: "--num-samples", Kind: flagInt, Metavar: "INTEGER", Help: "Sequences to sample (default 1)."},
		{Long: "--seed", Kind: flagInt, Metavar: "INTEGER", Help: "Seed for reproducible sampling."},
		{Long: "--stop", Kind: flagMulti, Metavar: "TEXT", Help: "Stop at this string (repeatable)."},
		{Long: "--prompts", Kind: flagPath, Metavar: "FILE", Help: "Batch mode: a prompts JSONL file (docs/batch.md)."},
		{Long: "--output", Kind: flagPath, Metavar: "FILE", Help: "Batch mode: the JSONL file rows are appended to."},
		{Long: "--renderer", Kind: flagString, Metavar: "NAME", Help: "Batch mode: chat renderer for message prompts."},
		{Long: "--concurrency", Kind: flagInt, Metavar: "INTEGER", Help: "Batch mode: rows in flight (default 8)."},
	},
	Run: runSample,
}

var tokenizeCmd = &command{
	Name:    "tokenize",
	Summary: "Turn text into a base model's token ids.",
	Help:    "Print the token ids of TEXT (or --file) under --model's tokenizer; with -f json a JSON object.",
	Args:    []argSpec{{Name: "TEXT", Optional: true}},
	Flags: []flagSpec{
		{Long: "--model", Kind: flagString, Metavar: "MODEL", Help: "Base model whose tokenizer to use."},
		{Long: "--file", Kind: flagPath, Metavar: "FILE", Help: "Read the text from FILE (- for stdin)."},
		{Long: "--special-tokens", Kind: flagBool, Help: "Add the tokenizer's special tokens (e.g. BOS)."},
	},
	Run: runTokenize,
}

// checkpointSaveCmd is "tinker checkpoint save" (listed in checkpointCmd).
var checkpointSaveCmd = &command{
	Name:    "save",
	Summary: "Create a LoRA model and save its sampler weights.",
	Help:    "Create a fresh LoRA adapter on --base-model and save it as a sampler checkpoint.",
	Flags: []flagSpec{
		{Long: "--base-model", Kind: flagString, Metavar: "MODEL", Help: "Base model (required)."},
		{Long: "--name", Kind: flagString, Metavar: "TEXT", Help: "Checkpoint name (default final)."},
		{Long: "--rank", Kind: flagInt, Metavar: "INTEGER", Help: "LoRA rank (default 32)."},
		{Long: "--seed", Kind: flagInt, Metavar: "INTEGER", Help: "Seed of the adapter's initial weights."},
		{Long: "--train-mlp", Kind: flagBool, Help: "Adapt the MLP layers (default)."},
		{Long: "--no-train-mlp", Kind: flagBool, Help: "Do not adapt the MLP layers."},
		{Long: "--train-attn", Kind: flagBool, Help: "Adapt the attention layers (default)."},
		{Long: "--no-train-attn", Kind: flagBool, Help: "Do not adapt the attention layers."},
		{Long: "--train-unembed", Kind: flagBool, Help: "Adapt the output layer (default)."},
		{Long: "--no-train-unembed", Kind: flagBool, Help: "Do not adapt the output layer."},
		{Long: "--ttl", Kind: flagInt, Metavar: "SECONDS", Help: "Expire the checkpoint after SECONDS."},
		{Long: "--output", Kind: flagPath, Metavar: "FILE", Help: "Also write the checkpoint's JSON to FILE."},
	},
	Run: runCheckpointSave,
}

// newEnv gives a subcommand the builtins' environment over its backend.
func (r *apiRun) newEnv() *builtins.Env {
	return &builtins.Env{Now: r.now, Notices: r.io.Err, NoticesTTY: r.io.ErrTTY, Width: r.io.Width, Version: Version, Backend: r.backend}
}

// openSession checks the credential, then opens the builtins'
// environment and its session; the caller closes env.
func (r *apiRun) openSession() (*builtins.Env, *tinkerapi.Session, error) {
	if _, err := r.preflight(); err != nil {
		return nil, nil, err
	}
	env := r.newEnv()
	s, err := env.Session(r.ctx)
	if err != nil {
		env.Close()
		return nil, nil, err
	}
	return env, s, nil
}

// console is where operations draw progress: stderr, bars only on a terminal.
func (r *apiRun) console() ops.Console {
	return ops.Console{W: r.io.Err, TTY: r.io.ErrTTY, Width: r.io.Width}
}

// readText reads --prompt-file / --file; "-" is stdin.
func readText(c *invocation, path string) (string, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = readAll(c.io.In)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return "", &tinkerapi.UserError{Msg: fmt.Sprintf("Cannot read %s: %v", path, err)}
	}
	return string(data), nil
}

func runSample(c *invocation) int {
	if c.has("prompts") {
		return runSampleBatch(c)
	}
	if c.has("output") || c.has("renderer") || c.has("concurrency") {
		return c.usageError("--output, --renderer and --concurrency need --prompts.")
	}
	base, path := c.str("base-model"), c.str("model-path")
	if len(c.multi("base-model"))+len(c.multi("model-path")) != 1 {
		return c.usageError("Give exactly one of --base-model and --model-path.")
	}
	if c.has("prompt") == c.has("prompt-file") {
		return c.usageError("Give exactly one of --prompt and --prompt-file.")
	}
	req := tinkerapi.NewSampleRequest(nil)
	var err error
	if req.Temperature, err = c.float("temperature", 1.0); err == nil {
		req.TopP, err = c.float("top-p", 1.0)
	}
	if err != nil {
		return c.usageError(err.Error())
	}
	req.MaxTokens = c.intOr("max-tokens", 64)
	req.TopK = c.intOr("top-k", -1)
	req.NumSamples = c.intOr("num-samples", 1)
	if req.NumSamples < 1 {
		return c.usageError(fmt.Sprintf("Invalid value for '--num-samples': %d is not in the range x>=1.", req.NumSamples))
	}
	if c.has("seed") {
		s := int64(c.intOr("seed", 0))
		req.Seed = &s
	}
	req.StopStrings = c.multi("stop")
	return runAPI(c, func(r *apiRun) error {
		prompt := c.str("prompt")
		if c.has("prompt-file") {
			if prompt, err = readText(c, c.str("prompt-file")); err != nil {
				return err
			}
		}
		model := base
		if path != "" {
			if err := tinkerapi.CheckScheme(path, "weights"); err != nil {
				return err
			}
			model = path
		}
		if _, err := r.preflight(); err != nil {
			return err
		}
		env := r.newEnv()
		defer env.Close()
		res, err := env.Sample(r.ctx, ops.SampleOptions{Model: model, Prompt: &prompt, Request: req, StopGiven: len(req.StopStrings) > 0})
		if err != nil {
			return err
		}
		if c.jsonMode() {
			return c.writeJSON(res.JSON())
		}
		return c.writeTable(res.Table(c.now()))
	})
}

func runCheckpointSave(c *invocation) int {
	base := c.str("base-model")
	if base == "" {
		return c.usageError("Missing option '--base-model'.")
	}
	lora := tinkerapi.DefaultLoraConfig()
	lora.Rank = c.intOr("rank", 32)
	for _, f := range []struct {
		name    string
		on, off bool
		v       *bool
	}{
		{"mlp", c.has("train-mlp"), c.has("no-train-mlp"), &lora.TrainMLP},
		{"attn", c.has("train-attn"), c.has("no-train-attn"), &lora.TrainAttn},
		{"unembed", c.has("train-unembed"), c.has("no-train-unembed"), &lora.TrainUnembed},
	} {
		if f.on && f.off {
			return c.usageError(fmt.Sprintf("--train-%s and --no-train-%s contradict each other.", f.name, f.name))
		}
		*f.v = !f.off
	}
	if c.has("seed") {
		s := int64(c.intOr("seed", 0))
		lora.Seed = &s
	}
	var ttl *int64
	if c.has("ttl") {
		t := int64(c.intOr("ttl", 0))
		ttl = &t
	}
	return runAPI(c, func(r *apiRun) error {
		env, s, err := r.openSession()
		if err != nil {
			return err
		}
		defer env.Close()
		cp, err := ops.SaveCheckpoint(r.ctx, s, ops.SaveOptions{BaseModel: base, Name: c.str("name"), Lora: lora, TTL: ttl})
		if err != nil {
			return err
		}
		if out := c.str("output"); out != "" {
			if err := writeJSONFile(out, cp.JSON()); err != nil {
				return err
			}
		}
		if c.jsonMode() {
			return c.writeJSON(cp.JSON())
		}
		return c.writeTable(cp.Record(c.now()).Table())
	})
}

// writeJSONFile writes v to path through a temporary sibling, so a failed
// write leaves no half-written file.
func writeJSONFile(path string, v any) error {
	err := atomicfile.Write(path, 0, func(w io.Writer) error {
		return render.WriteJSON(w, v, render.JSONOptions{Indent: true})
	})
	if err != nil {
		return &tinkerapi.UserError{Msg: fmt.Sprintf("Cannot write %s: %v", path, err)}
	}
	return nil
}

func runTokenize(c *invocation) int {
	model := c.str("model")
	if model == "" {
		return c.usageError("Missing option '--model'.")
	}
	if (len(c.args) == 1) == c.has("file") {
		return c.usageError("Give the text as an argument or with --file, not both.")
	}
	text := ""
	if len(c.args) == 1 {
		text = c.args[0]
	} else {
		var err error
		if text, err = readText(c, c.str("file")); err != nil {
			fmt.Fprintf(c.io.Err, "Error: %v\n", err)
			return shell.ExitError
		}
	}
	tok, err := tokenizer.ForModel(context.Background(), model)
	if err != nil {
		fmt.Fprintf(c.io.Err, "Error: %v\n", err)
		return shell.ExitError
	}
	ids := tok.Encode(text, c.has("special-tokens"))
	if c.jsonMode() {
		l := make([]any, len(ids))
		for i, id := range ids {
			l[i] = id
		}
		_ = c.writeJSON(render.Object{{Key: "model", Value: model}, {Key: "count", Value: len(ids)}, {Key: "tokens", Value: l}})
		return shell.ExitOK
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(id)
	}
	fmt.Fprintln(c.io.Out, strings.Join(parts, " "))
	return shell.ExitOK
}
