package ops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/batch"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Batch sampling shared by sample_batch() and `tinker sample --prompts`.

// SampleBatch runs a batch job (lib/batch) with a progress bar on a
// terminal. A run stopped by Ctrl-C or a failed row returns the rows so far
// with the *batch.StoppedError.
func SampleBatch(ctx context.Context, c *tinkerapi.Client, con Console, job batch.Job) (*BatchResult, error) {
	var opts batch.Options
	var bar *progress.Bar
	if con.TTY {
		bar = progress.NewCount(con.W, true, con.Width, "Sampling", 0)
		opts.OnProgress = func(p batch.Progress) { bar.SetTotal(int64(p.Total)); bar.Set(int64(p.Done)) }
	}
	res, err := batch.Run(ctx, c, job, opts)
	bar.End(err)
	if res == nil {
		return nil, batchErr(err)
	}
	return &BatchResult{R: *res}, err
}

// batchErr words a job that could not start: the service's errors as
// usual, the job's own problems (parameters that differ from the output
// file's, invalid prompts) as they are.
func batchErr(err error) error {
	var ae *tinkerapi.APIError
	var te *tinkerapi.TransportError
	if errors.As(err, &ae) || errors.As(err, &te) || errors.Is(err, context.Canceled) {
		return APIErr(err)
	}
	return UserErr(err.Error(), "")
}

// ReadPromptsFile reads a prompts JSONL file (docs/batch.md).
func ReadPromptsFile(path string) ([]batch.Prompt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, UserErr(fmt.Sprintf("Cannot read %s: %v", path, err), "")
	}
	defer f.Close()
	ps, err := batch.ReadPrompts(f)
	if err != nil {
		return nil, UserErr(fmt.Sprintf("%s: %v", path, err), "")
	}
	return ps, nil
}

// BatchResult is a batch sampling job's outcome: the run's counts and a
// summary per model.
type BatchResult struct {
	R batch.Result
}

// Table is the summary per model.
func (b *BatchResult) Table(now gotime.Time) *render.Table {
	t := &render.Table{
		Title: fmt.Sprintf("Batch %s: %d of %d rows", b.R.Output, b.R.Total-b.R.Remaining, b.R.Total),
		Columns: []render.Column{{Header: "Model"}, {Header: "Rows", Right: true}, {Header: "Missing", Right: true},
			{Header: "Mean tokens", Right: true}, {Header: "Stop reasons"}, {Header: "Mean logprob", Right: true}},
	}
	for _, m := range b.R.Models {
		reasons := make([]string, len(m.StopReasons))
		for i, r := range m.StopReasons {
			reasons[i] = fmt.Sprintf("%s %d", r.Reason, r.Count)
		}
		lp := "-"
		if m.LogprobTokens > 0 {
			lp = strconv.FormatFloat(m.MeanLogprob, 'f', 3, 64)
		}
		t.Rows = append(t.Rows, []string{m.Model, strconv.Itoa(m.Rows), strconv.Itoa(m.Missing),
			strconv.FormatFloat(m.MeanTokens, 'f', 1, 64), strings.Join(reasons, ", "), lp})
	}
	return t
}

func (b *BatchResult) JSON() any {
	models := make([]any, len(b.R.Models))
	for i, m := range b.R.Models {
		reasons := render.Object{}
		for _, r := range m.StopReasons {
			reasons = append(reasons, render.Member{Key: r.Reason, Value: r.Count})
		}
		var lp any
		if m.LogprobTokens > 0 {
			lp = m.MeanLogprob
		}
		models[i] = render.Object{{Key: "model", Value: m.Model}, {Key: "rows", Value: m.Rows}, {Key: "missing", Value: m.Missing},
			{Key: "mean_tokens", Value: m.MeanTokens}, {Key: "stop_reasons", Value: reasons}, {Key: "mean_logprob", Value: lp}}
	}
	return render.Object{{Key: "output", Value: b.R.Output}, {Key: "seed", Value: b.R.Seed}, {Key: "total", Value: b.R.Total},
		{Key: "resumed", Value: b.R.Resumed}, {Key: "written", Value: b.R.Written}, {Key: "remaining", Value: b.R.Remaining},
		{Key: "models", Value: models}}
}
