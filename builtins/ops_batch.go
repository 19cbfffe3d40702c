package builtins

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/tinkershell/tinker/lib/batch"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Batch sampling shared by sample_batch() and `tinker sample --prompts`.

// SampleBatch runs a batch job (lib/batch) with a progress bar on a
// terminal. A run stopped by Ctrl-C or a failed row returns the rows so far
// with the *batch.StoppedError.
func SampleBatch(ctx context.Context, env *Env, job batch.Job) (*BatchResult, error) {
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	var opts batch.Options
	var bar *progress.Bar
	if env.NoticesTTY {
		bar = progress.NewCount(env.Notices, true, env.Width, "Sampling", 0)
		opts.OnProgress = func(p batch.Progress) { bar.SetTotal(int64(p.Total)); bar.Set(int64(p.Done)) }
	}
	res, err := batch.Run(ctx, c, job, opts)
	bar.End(err)
	if res == nil {
		return nil, batchErr(err)
	}
	out := &BatchResult{R: *res, models: job.Models}
	for _, p := range job.Prompts {
		out.prompts = append(out.prompts, p.ID)
	}
	return out, err
}

// batchErr words a job that could not start: the service's errors as
// usual, the job's own problems (parameters that differ from the output
// file's, invalid prompts) as they are.
func batchErr(err error) error {
	var ae *tinkerapi.APIError
	var te *tinkerapi.TransportError
	if errors.As(err, &ae) || errors.As(err, &te) || errors.Is(err, context.Canceled) {
		return apiErr(err)
	}
	return userErr(err.Error(), "")
}

// ReadPromptsFile reads a prompts JSONL file (docs/batch.md).
func ReadPromptsFile(path string) ([]batch.Prompt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, userErr(fmt.Sprintf("Cannot read %s: %v", path, err), "")
	}
	defer f.Close()
	ps, err := batch.ReadPrompts(f)
	if err != nil {
		return nil, userErr(fmt.Sprintf("%s: %v", path, err), "")
	}
	return ps, nil
}
