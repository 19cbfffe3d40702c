package builtins

import (
	"context"
	"fmt"

	"go.starlark.net/starlark"

	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/train"
)

// dpoBuiltins are the builtins dpo.go defines (registryParts lists them).
var dpoBuiltins = []entry{
	{docEntry{
		Name: "dpo",
		Signature: "dpo(base_model, data, beta=0.1, rank=32, learning_rate=None, batch_size=8, epochs=1, lr_schedule=\"linear\", " +
			"seed=None, renderer=None, max_length=None, save_every=20, keep_states=2, log_dir=None, name=None, max_steps=None)",
		Summary: "Direct preference optimisation on {\"messages\", \"chosen\", \"rejected\"} rows; returns the run.",
		Details: "base_model may be a training state to start from, as in sft() (e.g. an SFT run). data is a JSONL\n" +
			"file or a list of dicts: \"messages\" are the prompt turns, \"chosen\" and \"rejected\" two answers, the\n" +
			"first preferred. The reference is the starting policy: its log-likelihood of every\n" +
			"answer is computed once, before the first step (and kept in log_dir). Each step's loss is the mean of\n" +
			"-log sigmoid(beta * ((log p(chosen) - log p_ref(chosen)) - (log p(rejected) - log p_ref(rejected))))\n" +
			"over batch_size pairs, applied as a forward pass and a cross_entropy forward_backward weighted by the\n" +
			"loss's gradient, so it runs on the service as on the local server. learning_rate defaults to\n" +
			"1e-5, the cookbook's DPO default (not lr_for(), the SFT rule; the tiny local models need more, as\n" +
			"in the example). Step metrics (measured before the step's update): loss, accuracy (share of pairs\n" +
			"with a positive margin), margin, chosen_reward, rejected_reward. log_dir, save_every, keep_states,\n" +
			"max_steps and Ctrl-C work as in sft(); the result has .metrics, .sampler_checkpoint and .state_checkpoint.",
		Example: "prefs = [{\"messages\": [{\"role\": \"user\", \"content\": \"Is %d even?\" % n}], \"chosen\": \"Let me check.\", \"rejected\": \"No.\"} for n in range(4)]\n" +
			"preferred = dpo(\"tinker-local/tiny-llama\", prefs, beta=0.5, batch_size=4, epochs=4, rank=8, seed=1, learning_rate=5e-3)\n" +
			"preferred.metrics[-1][\"accuracy\"]",
		Learns: `preferred.metrics[-1]["accuracy"] == 1.0 and preferred.metrics[-1]["margin"] > 0`,
	}, dpoFn},
}

func dpoFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var baseV, dataV starlark.Value
	var seedV, rendererV, maxLenV, logDirV, nameV, maxStepsV, lrV starlark.Value = starlark.None, starlark.None, starlark.None,
		starlark.None, starlark.None, starlark.None, starlark.None
	var betaV starlark.Value = starlark.Float(train.DefaultDPOBeta)
	o := train.DPOOptions{Lora: tinkerapi.DefaultLoraConfig(), BatchSize: train.DefaultBatchSize, Epochs: 1, Schedule: "linear"}
	o.SaveEvery, o.KeepStates = train.DefaultSaveEvery, train.DefaultKeepStates
	if err := unpackArgs(b.Name(), args, kwargs, "base_model", &baseV, "data", &dataV, "beta?", &betaV, "rank?", &o.Lora.Rank,
		"learning_rate?", &lrV, "batch_size?", &o.BatchSize, "epochs?", &o.Epochs, "lr_schedule?", &o.Schedule, "seed?", &seedV,
		"renderer?", &rendererV, "max_length?", &maxLenV, "save_every?", &o.SaveEvery, "keep_states?", &o.KeepStates, "log_dir?", &logDirV, "name?", &nameV,
		"max_steps?", &maxStepsV); err != nil {
		return nil, err
	}
	fail := func(err error) error { return fmt.Errorf("%s: %w", b.Name(), err) }
	var err error
	if o.BaseModel, err = startArg(baseV); err != nil {
		return nil, fail(err)
	}
	rows, err := dataRowsArg(dataV, "data")
	if err == nil {
		o.Data, err = train.Pairs(rows)
	}
	if err != nil {
		return nil, fail(err)
	}
	beta, ok := starlark.AsFloat(betaV)
	if !ok {
		return nil, fail(fmt.Errorf("beta must be a number, got %s", betaV.Type()))
	}
	o.Beta = beta
	if err := loopArgs(&o.RunOptions, &o.Lora.Seed, &o.Renderer, &o.MaxLength, seedV, rendererV, maxLenV, logDirV, nameV, maxStepsV); err != nil {
		return nil, fail(err)
	}
	if o.LearningRate, err = learningRateArg(lrV); err != nil {
		return nil, fail(err)
	}
	var res *train.DPOResult
	err = runLoop(thread, b.Name(), &o.RunOptions, func(ctx context.Context, env *Env) error {
		s, err := env.Session(ctx)
		if err != nil {
			return err
		}
		res, err = train.DPO(ctx, s, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	run, err := newTrainRun(ContextOf(thread), envOf(thread), "dpo", "DPO", res)
	if err != nil {
		return nil, err
	}
	return DPORun{run}, nil
}

// loopArgs reads the optional arguments the training builtins share.
func loopArgs(ro *train.RunOptions, seed **int64, renderer *string, maxLen *int, seedV, rendererV, maxLenV, logDirV, nameV, maxStepsV starlark.Value) error {
	var err error
	if *seed, err = optInt64Arg(seedV, "seed"); err != nil {
		return err
	}
	if maxLen != nil {
		if *maxLen, err = optIntArg(maxLenV, "max_length", 0); err != nil {
			return err
		}
	}
	if ro.MaxSteps, err = optIntArg(maxStepsV, "max_steps", 0); err != nil {
		return err
	}
	for _, s := range []struct {
		v   starlark.Value
		dst *string
		n   string
	}{{rendererV, renderer, "renderer"}, {logDirV, &ro.LogDir, "log_dir"}, {nameV, &ro.Name, "name"}} {
		if *s.dst, err = optString(s.v, s.n); err != nil {
			return err
		}
	}
	return nil
}
