package builtins

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/tinkershell/tinker/lib/batch"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
)

// batchBuiltins are the builtins batch.go defines (registryParts lists them).
var batchBuiltins = []entry{
	{docEntry{
		Name: "sample_batch",
		Signature: "sample_batch(models, prompts, output, num_samples=1, max_tokens=64, temperature=1.0, top_k=-1, top_p=1.0, " +
			"stop=None, seed=None, renderer=None, concurrency=8)",
		Summary: "Sample every prompt from every model into a JSONL file that a rerun resumes (also `tinker sample --prompts`).",
		Details: "models: a model name, tinker:// sampler path or checkpoint, or a list of them. prompts: a list whose\n" +
			"items are text, token id lists, message lists or dicts with \"id\" and one of \"prompt\", \"tokens\",\n" +
			"\"messages\" (an item without id is named by its position, from 1), or the path of a prompts JSONL file.\n" +
			"Each (model, prompt, sample) row is appended to output as it completes; running the same call again\n" +
			"samples only the missing rows, with the same per-row seeds (docs/batch.md). The result shows a summary\n" +
			"per model and has .output, .written, .resumed, .remaining, .seed, .models and .rows (the job's rows read\n" +
			"back from output, by model, prompt and sample: .model, .prompt_id, .sample, .text, .tokens, .stop_reason, .mean_logprob).",
		Example: "r = sample_batch([\"tinker-local/tiny-llama\", \"tinker://RUN_ID/sampler_weights/final\"], [\"Hello\", \"The sky is\"], \"results.jsonl\", num_samples=2, seed=1)",
	}, sampleBatchFn},
}

func sampleBatchFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var modelsV, promptsV starlark.Value
	var output string
	var stopV, seedV, rendererV starlark.Value = starlark.None, starlark.None, starlark.None
	job := batch.Job{Params: batch.DefaultParams(), NumSamples: 1, Concurrency: batch.DefaultConcurrency}
	var temperature, topP starlark.Value = starlark.Float(1.0), starlark.Float(1.0)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "models", &modelsV, "prompts", &promptsV, "output", &output,
		"num_samples?", &job.NumSamples, "max_tokens?", &job.Params.MaxTokens, "temperature?", &temperature, "top_k?", &job.Params.TopK,
		"top_p?", &topP, "stop?", &stopV, "seed?", &seedV, "renderer?", &rendererV, "concurrency?", &job.Concurrency); err != nil {
		return nil, err
	}
	fail := func(format string, a ...any) error { return fmt.Errorf("%s: %s", b.Name(), fmt.Sprintf(format, a...)) }
	var err error
	if job.Models, err = modelsArg(modelsV); err != nil {
		return nil, fail("models: %v", err)
	}
	if job.Prompts, err = promptsArg(promptsV); err != nil {
		return nil, fail("prompts: %v", err)
	}
	var ok bool
	if job.Params.Temperature, ok = starlark.AsFloat(temperature); !ok {
		return nil, fail("temperature must be a number")
	}
	if job.Params.TopP, ok = starlark.AsFloat(topP); !ok {
		return nil, fail("top_p must be a number")
	}
	if job.Params.Seed, err = optInt64Arg(seedV, "seed"); err != nil {
		return nil, fail("%v", err)
	}
	if job.Params.Renderer, err = optString(rendererV, "renderer"); err != nil {
		return nil, fail("%v", err)
	}
	if stopV != starlark.None {
		if job.Params.StopStrings, job.Params.StopTokens, err = stopArg(stopV); err != nil {
			return nil, fail("stop: %v", err)
		}
	}
	if job.NumSamples < 1 || job.Concurrency < 1 {
		return nil, fail("num_samples and concurrency must be at least 1")
	}
	job.Output = output
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	res, err := ops.SampleBatch(ContextOf(thread), c, env.console(), job)
	var stopped *batch.StoppedError
	if errors.As(err, &stopped) && errors.Is(err, context.Canceled) && env.Notices != nil {
		// The shell reports an interrupt in one word; how to resume goes
		// to the notices stream, as sft's does.
		fmt.Fprintf(env.Notices, "sample_batch: %d of %d rows still to sample: call sample_batch again with the same arguments to resume (finished rows are kept in %s)\n",
			stopped.Remaining, stopped.Total, stopped.Output)
	}
	if res == nil {
		return nil, err
	}
	out := &BatchResult{BatchResult: *res, models: job.Models}
	for _, p := range job.Prompts {
		out.prompts = append(out.prompts, p.ID)
	}
	return out, err
}

// modelsArg takes a model (name, tinker:// path or checkpoint) or a list.
func modelsArg(v starlark.Value) ([]string, error) {
	if _, ok := v.(starlark.String); ok {
		return []string{string(v.(starlark.String))}, nil
	}
	if c, ok := v.(*Checkpoint); ok {
		return []string{c.C.TinkerPath}, nil
	}
	it, ok := v.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("want a model, a checkpoint or a list of them, got %s", v.Type())
	}
	var out []string
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for iter.Next(&x) {
		m, err := pathOf(x)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// promptsArg takes the path of a prompts file or a list of prompts, each
// as a line of that file would give it (docs/batch.md).
func promptsArg(v starlark.Value) ([]batch.Prompt, error) {
	if s, ok := v.(starlark.String); ok {
		return ops.ReadPromptsFile(string(s))
	}
	it, ok := v.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("want a list of prompts or the path of a prompts file, got %s", v.Type())
	}
	var buf bytes.Buffer
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for n := 1; iter.Next(&x); n++ {
		j, err := ToJSON(x)
		if err != nil {
			return nil, fmt.Errorf("prompt %d: %v", n, err)
		}
		if err := render.WriteJSON(&buf, j, render.JSONOptions{Compact: true}); err != nil {
			return nil, fmt.Errorf("prompt %d: %v", n, err)
		}
		if !bytes.HasSuffix(buf.Bytes(), []byte("\n")) {
			buf.WriteByte('\n')
		}
	}
	return batch.ReadPrompts(&buf)
}
