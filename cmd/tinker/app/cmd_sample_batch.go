package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/tinkershell/tinker/lib/batch"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/shell"
)

// runSampleBatch is `tinker sample --prompts FILE --output FILE`: the
// builtin sample_batch() over the given models. Ctrl-C keeps the rows
// written so far, says how to resume and exits 130.
func runSampleBatch(c *invocation) int {
	if c.has("prompt") || c.has("prompt-file") {
		return c.usageError("--prompt and --prompt-file exclude --prompts.")
	}
	if !c.has("output") {
		return c.usageError("Missing option '--output' (batch mode writes its rows to a file).")
	}
	models := append(c.multi("model-path"), c.multi("base-model")...)
	if len(models) == 0 {
		return c.usageError("Give at least one --model-path or --base-model.")
	}
	job := batch.Job{Models: models, Output: c.str("output"), NumSamples: c.intOr("num-samples", 1),
		Concurrency: c.intOr("concurrency", batch.DefaultConcurrency), Params: batch.DefaultParams()}
	var err error
	if job.Params.Temperature, err = c.float("temperature", 1.0); err == nil {
		job.Params.TopP, err = c.float("top-p", 1.0)
	}
	if err != nil {
		return c.usageError(err.Error())
	}
	job.Params.MaxTokens = c.intOr("max-tokens", 64)
	job.Params.TopK = c.intOr("top-k", -1)
	job.Params.StopStrings = c.multi("stop")
	job.Params.Renderer = c.str("renderer")
	if c.has("seed") {
		s := int64(c.intOr("seed", 0))
		job.Params.Seed = &s
	}
	if job.NumSamples < 1 || job.Concurrency < 1 {
		return c.usageError("--num-samples and --concurrency must be at least 1.")
	}
	interrupted := false
	code := runAPI(c, func(r *apiRun) error {
		if job.Prompts, err = ops.ReadPromptsFile(c.str("prompts")); err != nil {
			return err
		}
		client, err := r.preflight()
		if err != nil {
			return err
		}
		res, err := ops.SampleBatch(r.ctx, client, r.console(), job)
		var stopped *batch.StoppedError
		if errors.As(err, &stopped) && errors.Is(err, context.Canceled) {
			fmt.Fprintf(r.io.Err, "Error: %v\n", stopped)
			interrupted = true
			return nil
		}
		if err != nil {
			return err
		}
		if c.jsonMode() {
			return c.writeJSON(res.JSON())
		}
		if err := c.writeTable(res.Table(c.now())); err != nil {
			return err
		}
		fmt.Fprintf(r.io.Out, "Wrote %s to %s (%d resumed)\n", ops.Count(res.R.Written, "row", "rows"), res.R.Output, res.R.Resumed)
		return nil
	})
	if interrupted {
		return shell.ExitInterrupted
	}
	return code
}
