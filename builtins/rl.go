package builtins

import (
	"context"
	"fmt"

	starlarkjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"

	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/train"
)

// rlBuiltins are the builtins rl.go defines (registryParts lists them).
var rlBuiltins = []entry{
	{docEntry{
		Name: "rl",
		Signature: "rl(base_model, prompts, reward, group_size=8, batch_size=None, steps=20, max_tokens=64, temperature=1.0, " +
			"loss=\"importance_sampling\", learning_rate=None, rank=32, seed=None, renderer=None, drop_equal_groups=False, " +
			"save_every=20, keep_states=2, log_dir=None, name=None, max_steps=None)",
		Summary: "Reinforcement learning with a Starlark reward: group sampling, advantages against the group mean; returns the run.",
		Details: "base_model may be a training state to start from, as in sft() (e.g. an SFT run). prompts is a\n" +
			"JSONL file or a list of strings (plain prompts) or {\"messages\": [...]} dicts (rendered with the chat\n" +
			"renderer). Each step saves the policy for sampling, samples group_size completions of\n" +
			"each of batch_size prompts (default: all) with their logprobs, and calls reward(prompt, completion)\n" +
			"-> number for each, prompt being the row as given. A completion's advantage is its reward minus its\n" +
			"group's mean; a group whose rewards are all equal has advantage 0 and is trained on all the same (as\n" +
			"the cookbook does: Adam steps every step), unless drop_equal_groups=True leaves such groups out (and\n" +
			"skips the step when none is left). The step trains with loss \"importance_sampling\", \"ppo\" or\n" +
			"\"cispo\" (as the service computes them) and Adam (eps 1e-8, as the cookbook) at learning_rate\n" +
			"(default lr_for(base_model)). Step metrics: mean_reward, loss, tokens, num_trained, skipped_groups\n" +
			"(those dropped). seed fixes the adapter's initialisation and the sampling, so log_dir resumes (as in\n" +
			"sft()) end with the same weights; save_every and keep_states work as there, and each step's policy\n" +
			"snapshot is deleted once the next exists (keep_states=0 keeps them, for a day). A reward function\n" +
			"that fails stops the run naming the prompt and the completion.",
		Example: "def shout(prompt, completion):\n" +
			"    return len([c for c in completion.elems() if c.isupper()]) / max(len(completion), 1)\n" +
			"rewarded = rl(\"tinker-local/tiny-llama\", [\"Say something:\", \"Go on:\"], shout, steps=4, max_tokens=8, rank=8, seed=2)\n" +
			"(rewarded.metrics[0][\"mean_reward\"], rewarded.metrics[-1][\"mean_reward\"])",
		Learns: `rewarded.metrics[-1]["mean_reward"] - rewarded.metrics[0]["mean_reward"] > 0.3`,
	}, rlFn},
}

func rlFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var baseV, promptsV starlark.Value
	var reward starlark.Callable
	var seedV, rendererV, logDirV, nameV, maxStepsV, lrV, batchV starlark.Value = starlark.None, starlark.None, starlark.None,
		starlark.None, starlark.None, starlark.None, starlark.None
	var tempV starlark.Value = starlark.Float(1.0)
	o := train.RLOptions{Lora: tinkerapi.DefaultLoraConfig(), GroupSize: train.DefaultGroupSize, Steps: train.DefaultRLSteps,
		MaxTokens: train.DefaultRLMaxTokens, Loss: train.DefaultRLLoss}
	o.SaveEvery, o.KeepStates = train.DefaultSaveEvery, train.DefaultKeepStates
	if err := unpackArgs(b.Name(), args, kwargs, "base_model", &baseV, "prompts", &promptsV, "reward", &reward,
		"group_size?", &o.GroupSize, "batch_size?", &batchV, "steps?", &o.Steps, "max_tokens?", &o.MaxTokens, "temperature?", &tempV,
		"loss?", &o.Loss, "learning_rate?", &lrV, "rank?", &o.Lora.Rank, "seed?", &seedV, "renderer?", &rendererV,
		"drop_equal_groups?", &o.DropEqualGroups, "save_every?", &o.SaveEvery, "keep_states?", &o.KeepStates, "log_dir?", &logDirV, "name?", &nameV, "max_steps?", &maxStepsV); err != nil {
		return nil, err
	}
	fail := func(err error) error { return fmt.Errorf("%s: %w", b.Name(), err) }
	var err error
	if o.BaseModel, err = startArg(baseV); err != nil {
		return nil, fail(err)
	}
	rows, err := dataRowsArg(promptsV, "prompts")
	if err == nil {
		o.Prompts, err = train.Prompts(rows)
	}
	if err != nil {
		return nil, fail(err)
	}
	given, err := promptValues(thread, promptsV, rows)
	if err != nil {
		return nil, fail(err)
	}
	t, ok := starlark.AsFloat(tempV)
	if !ok {
		return nil, fail(fmt.Errorf("temperature must be a number, got %s", tempV.Type()))
	}
	o.Temperature = t
	if o.BatchSize, err = optIntArg(batchV, "batch_size", 0); err != nil {
		return nil, fail(err)
	}
	if err := loopArgs(&o.RunOptions, &o.Lora.Seed, &o.Renderer, nil, seedV, rendererV, starlark.None, logDirV, nameV, maxStepsV); err != nil {
		return nil, fail(err)
	}
	if o.LearningRate, err = learningRateArg(lrV); err != nil {
		return nil, fail(err)
	}
	o.Reward = func(i int, completion string) (float64, error) {
		return callNumber(thread, reward, given[i], starlark.String(completion))
	}
	var res *train.RLResult
	err = runLoop(thread, b.Name(), &o.RunOptions, func(ctx context.Context, env *Env) error {
		s, err := env.Session(ctx)
		if err != nil {
			return err
		}
		res, err = train.RL(ctx, s, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	run, err := newTrainRun(ContextOf(thread), envOf(thread), "rl", "RL", res)
	if err != nil {
		return nil, err
	}
	return RLRun{run}, nil
}

// promptValues are the prompts as the reward function sees them: the
// list's elements, or a JSONL file's rows decoded as json.decode does.
func promptValues(thread *starlark.Thread, v starlark.Value, rows []train.Row) ([]starlark.Value, error) {
	if l, ok := v.(*starlark.List); ok {
		out := make([]starlark.Value, l.Len())
		for i := range out {
			out[i] = l.Index(i)
		}
		return out, nil
	}
	decode := starlarkjson.Module.Members["decode"]
	out := make([]starlark.Value, len(rows))
	for i, r := range rows {
		x, err := starlark.Call(thread, decode, starlark.Tuple{starlark.String(r.JSON)}, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Where, err)
		}
		out[i] = x
	}
	return out, nil
}
