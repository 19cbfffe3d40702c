package app

import (
	"fmt"
	"math"
	"os"
	"strings"

	starlarkjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/train"
)

// loopFlags are the flags train dpo and train rl share with train sft.
var loopFlags = []flagSpec{
	{Long: "--base-model", Kind: flagString, Metavar: "MODEL", Help: "Base model, or a tinker://…/weights/… state\nto start from (required)."},
	{Long: "--rank", Kind: flagInt, Metavar: "INTEGER", Help: "LoRA rank (default 32)."},
	{Long: "--seed", Kind: flagInt, Metavar: "INTEGER", Help: "Seed of the adapter's initialisation and the order."},
	{Long: "--renderer", Kind: flagString, Metavar: "NAME", Help: "Chat renderer (default: the model's)."},
	{Long: "--learning-rate", Kind: flagString, Metavar: "FLOAT", Help: "Learning rate (default: lr_for(MODEL); DPO 1e-5)."},
	{Long: "--save-every", Kind: flagInt, Metavar: "INTEGER", Help: "Steps between saved states (default 20)."},
	keepStatesFlag,
	{Long: "--log-dir", Kind: flagPath, Metavar: "DIR", Help: "Metrics and saved state; rerun to resume."},
	{Long: "--name", Kind: flagString, Metavar: "TEXT", Help: "Checkpoint name prefix."},
	{Long: "--max-steps", Kind: flagInt, Metavar: "INTEGER", Help: "Stop this run after INTEGER steps."},
}

// keepStatesFlag is --keep-states of every train subcommand.
var keepStatesFlag = flagSpec{Long: "--keep-states", Kind: flagInt, Metavar: "INTEGER",
	Help: "Saved states kept, the newest (default 2; the final\nones always stay; 0 keeps every checkpoint)."}

// trainDPOCmd mirrors the dpo() builtin.
var trainDPOCmd = &command{
	Name:    "dpo",
	Summary: "Direct preference optimisation on a JSONL file of preference pairs.",
	Help: "Train --base-model on --data (one {\"messages\": [...], \"chosen\": ..., \"rejected\": ...} object per\n" +
		"line), as dpo() does; print the table of steps (or JSON with -f json) and the sampler and state checkpoints.",
	Flags: []flagSpec{
		{Long: "--data", Kind: flagPath, Metavar: "FILE", Help: "Preference pairs, JSONL (required)."},
		{Long: "--beta", Kind: flagString, Metavar: "FLOAT", Help: "DPO temperature (default 0.1)."},
		{Long: "--batch-size", Kind: flagInt, Metavar: "INTEGER", Help: "Pairs per step (default 8)."},
		{Long: "--epochs", Kind: flagInt, Metavar: "INTEGER", Help: "Passes over the data (default 1)."},
		{Long: "--lr-schedule", Kind: flagString, Metavar: "NAME", Help: "linear (default), constant or cosine."},
		{Long: "--max-length", Kind: flagInt, Metavar: "INTEGER", Help: "Longest prompt and answer in tokens."},
	},
	Shared: loopFlags,
	Run:    runTrainDPO,
}

// trainRLCmd mirrors the rl() builtin; the reward is a Starlark function.
var trainRLCmd = &command{
	Name:    "rl",
	Summary: "Reinforcement learning on prompts with a Starlark reward function.",
	Help: "Train --base-model on --prompts (JSONL: one string or {\"messages\": [...]} object per line) with\n" +
		"the function reward(prompt, completion) -> number that --reward FILE.star defines, as rl() does;\n" +
		"print the table of steps (or JSON with -f json) and the sampler and state checkpoints.",
	Flags: []flagSpec{
		{Long: "--prompts", Kind: flagPath, Metavar: "FILE", Help: "Prompts, JSONL (required)."},
		{Long: "--reward", Kind: flagPath, Metavar: "FILE", Help: "Starlark file defining reward(prompt, completion)\n(required)."},
		{Long: "--group-size", Kind: flagInt, Metavar: "INTEGER", Help: "Completions per prompt (default 8)."},
		{Long: "--batch-size", Kind: flagInt, Metavar: "INTEGER", Help: "Prompts per step (default: all)."},
		{Long: "--steps", Kind: flagInt, Metavar: "INTEGER", Help: "Steps (default 20)."},
		{Long: "--max-tokens", Kind: flagInt, Metavar: "INTEGER", Help: "Longest completion (default 64)."},
		{Long: "--temperature", Kind: flagString, Metavar: "FLOAT", Help: "Sampling temperature (default 1)."},
		{Long: "--loss", Kind: flagString, Metavar: "NAME", Help: "importance_sampling (default), ppo or cispo."},
		{Long: "--drop-equal-groups", Kind: flagBool, Help: "Leave out groups whose rewards are all equal\n(default: train on them with advantage 0)."},
	},
	Shared: loopFlags,
	Run:    runTrainRL,
}

// loopOptions reads the shared flags; usage words a bad one.
func loopOptions(c *invocation, ro *train.RunOptions, lora *tinkerapi.LoraConfig) (base string, lr float64, usage string) {
	base = c.str("base-model")
	*lora = tinkerapi.DefaultLoraConfig()
	lora.Rank = c.intOr("rank", 32)
	if c.has("seed") {
		s := int64(c.intOr("seed", 0))
		lora.Seed = &s
	}
	ro.LogDir, ro.Name = c.str("log-dir"), c.str("name")
	ro.SaveEvery = c.intOr("save-every", train.DefaultSaveEvery)
	ro.KeepStates = c.intOr("keep-states", train.DefaultKeepStates)
	ro.MaxSteps = c.intOr("max-steps", 0)
	if base == "" {
		return "", 0, "Missing option '--base-model'."
	}
	lr, usage = learningRateFlag(c)
	return base, lr, usage
}

// learningRateFlag is --learning-rate, or 0 (the loop's default) without it.
func learningRateFlag(c *invocation) (float64, string) {
	if !c.has("learning-rate") {
		return 0, ""
	}
	lr, err := c.float("learning-rate", 0)
	if err != nil {
		return 0, err.Error()
	}
	if !(lr > 0) || math.IsInf(lr, 0) {
		return 0, "--learning-rate must be positive."
	}
	return lr, ""
}

func runTrainDPO(c *invocation) int {
	o := train.DPOOptions{BatchSize: c.intOr("batch-size", train.DefaultBatchSize), Epochs: c.intOr("epochs", 1), Schedule: "linear",
		MaxLength: c.intOr("max-length", 0), Renderer: c.str("renderer")}
	var usage string
	if o.BaseModel, o.LearningRate, usage = loopOptions(c, &o.RunOptions, &o.Lora); usage != "" {
		return c.usageError(usage)
	}
	if !c.has("data") {
		return c.usageError("Missing option '--data'.")
	}
	if c.has("lr-schedule") {
		o.Schedule = c.str("lr-schedule")
	}
	var err error
	if o.Beta, err = c.float("beta", train.DefaultDPOBeta); err != nil {
		return c.usageError(err.Error())
	}
	load := func() error {
		rows, err := train.LoadRows(c.str("data"))
		if err == nil {
			o.Data, err = train.Pairs(rows)
		}
		return err
	}
	return runLoop(c, &o.RunOptions, load, func(r *apiRun, s train.Session) (func() error, error) {
		res, err := train.DPO(r.ctx, s, o)
		return func() error { return showRun(c, "DPO", res) }, err
	})
}

func runTrainRL(c *invocation) int {
	o := train.RLOptions{GroupSize: c.intOr("group-size", train.DefaultGroupSize), BatchSize: c.intOr("batch-size", 0),
		Steps: c.intOr("steps", train.DefaultRLSteps), MaxTokens: c.intOr("max-tokens", train.DefaultRLMaxTokens), Loss: train.DefaultRLLoss,
		Renderer: c.str("renderer"), DropEqualGroups: c.has("drop-equal-groups")}
	var usage string
	if o.BaseModel, o.LearningRate, usage = loopOptions(c, &o.RunOptions, &o.Lora); usage != "" {
		return c.usageError(usage)
	}
	switch {
	case !c.has("prompts"):
		return c.usageError("Missing option '--prompts'.")
	case !c.has("reward"):
		return c.usageError("Missing option '--reward'.")
	}
	if c.has("loss") {
		o.Loss = c.str("loss")
	}
	var err error
	if o.Temperature, err = c.float("temperature", 1); err != nil {
		return c.usageError(err.Error())
	}
	load := func() error {
		rows, err := train.LoadRows(c.str("prompts"))
		if err == nil {
			o.Prompts, err = train.Prompts(rows)
		}
		if err == nil {
			o.Reward, err = rewardFile(c.str("reward"), rows)
		}
		return err
	}
	return runLoop(c, &o.RunOptions, load, func(r *apiRun, s train.Session) (func() error, error) {
		ss, ok := s.(train.SamplingSession)
		if !ok {
			return nil, fmt.Errorf("this session cannot sample")
		}
		res, err := train.RL(r.ctx, ss, o)
		return func() error { return showRun(c, "RL", res) }, err
	})
}

// rewardFile loads the reward function a Starlark file defines; it sees
// each prompt row as json.decode gives it. The file runs with Starlark's
// own builtins only: a reward needs no service.
func rewardFile(path string, rows []train.Row) (func(int, string) (float64, error), error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	thread := &starlark.Thread{Name: "reward"}
	opts := &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}
	g, err := starlark.ExecFileOptions(opts, thread, path, src, nil)
	if err != nil && strings.HasPrefix(err.Error(), path+":") {
		return nil, err // a syntax error names the file and line already
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	fn, ok := g["reward"].(starlark.Callable)
	if !ok {
		return nil, fmt.Errorf("%s defines no function reward(prompt, completion)", path)
	}
	prompts := make([]starlark.Value, len(rows))
	for i, r := range rows {
		if prompts[i], err = decodeJSON(thread, r.JSON); err != nil {
			return nil, fmt.Errorf("%s: %v", r.Where, err)
		}
	}
	return func(i int, completion string) (float64, error) {
		v, err := starlark.Call(thread, fn, starlark.Tuple{prompts[i], starlark.String(completion)}, nil)
		if err != nil {
			return 0, err
		}
		f, ok := starlark.AsFloat(v)
		if !ok {
			return 0, fmt.Errorf("reward returned %s, want a number", v.Type())
		}
		return f, nil
	}, nil
}

// showRun prints a DPO or RL run as showSFT prints SFT's.
func showRun[M train.Record](c *invocation, what string, res *train.Result[M]) error {
	if c.jsonMode() {
		return c.writeJSON(train.RunJSON(res))
	}
	if err := c.writeTable(train.RunTable(what, res)); err != nil {
		return err
	}
	showEnd(c, res)
	return nil
}

// decodeJSON decodes a JSON row as Starlark's json.decode does.
func decodeJSON(thread *starlark.Thread, b []byte) (starlark.Value, error) {
	return starlark.Call(thread, starlarkjson.Module.Members["decode"], starlark.Tuple{starlark.String(b)}, nil)
}
