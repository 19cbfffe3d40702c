package app

import (
	"fmt"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/train"
)

// evalCmd mirrors the evaluate() builtin with its default scorer.
var evalCmd = &command{
	Name:    "eval",
	Summary: "Score a model's answers on a JSONL file of conversations.",
	Help: "Sample MODEL (a base model or a tinker:// sampler checkpoint) on each conversation's prompt in\n" +
		"DATA (one conversation per line, in any shape train sft takes: {\"messages\": [...]}, the last message\n" +
		"the assistant's reference answer, or {\"prompt\": ..., \"completion\": ...}),\n" +
		"as evaluate() does, and score exact matches after stripping white space; print the table of rows\n" +
		"(or JSON with -f json) and the mean score.",
	Args: []argSpec{{Name: "MODEL"}, {Name: "DATA"}},
	Flags: []flagSpec{
		{Long: "--max-tokens", Kind: flagInt, Metavar: "INTEGER", Help: "Longest answer in tokens (default 64)."},
		{Long: "--temperature", Kind: flagString, Metavar: "FLOAT", Help: "Sampling temperature (default 0: greedy)."},
		{Long: "--num-samples", Kind: flagInt, Metavar: "INTEGER", Help: "Answers per row (default 1)."},
		{Long: "--renderer", Kind: flagString, Metavar: "NAME", Help: "Chat renderer (default: the model's)."},
		{Long: "--nll", Kind: flagBool, Help: "Also score the references' NLL per token."},
	},
	Run: runEval,
}

func runEval(c *invocation) int {
	if len(c.args) != 2 {
		return c.usageError("Want MODEL and DATA.")
	}
	o := train.EvalOptions{MaxTokens: c.intOr("max-tokens", train.DefaultEvalMaxTokens), NumSamples: c.intOr("num-samples", 1),
		Concurrency: train.DefaultEvalConcurrency, Renderer: c.str("renderer"), NLL: c.has("nll")}
	var err error
	if o.Temperature, err = c.float("temperature", 0); err != nil {
		return c.usageError(err.Error())
	}
	return runAPI(c, func(r *apiRun) error {
		rows, err := train.LoadRows(c.args[1])
		if err == nil {
			o.Data, err = train.Conversations(rows)
		}
		if err != nil {
			return &tinkerapi.UserError{Msg: err.Error()}
		}
		env, s, err := r.openSession()
		if err != nil {
			return err
		}
		defer env.Close()
		if o.Model, err = builtins.ResolveSamplerModel(r.ctx, s, c.args[0]); err != nil {
			return err
		}
		res, err := train.Evaluate(r.ctx, s, o)
		if err != nil {
			return err
		}
		if c.jsonMode() {
			return c.writeJSON(train.EvalJSON(res))
		}
		if err := c.writeTable(train.EvalTable(res)); err != nil {
			return err
		}
		fmt.Fprintf(c.io.Out, "Score: %.3f\n", res.Score)
		return nil
	})
}
