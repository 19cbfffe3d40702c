package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/train"
	"github.com/tinkershell/tinker/shell"
)

var trainCmd = &command{
	Name:    "train",
	Summary: "Train LoRA adapters.",
	Sub:     []*command{trainSFTCmd, trainDPOCmd, trainRLCmd},
}

// trainSFTCmd mirrors the sft() builtin.
var trainSFTCmd = &command{
	Name:    "sft",
	Summary: "Supervised fine-tuning on a JSONL file of conversations.",
	Help: "Fine-tune --base-model on --data (one conversation per line: {\"messages\": [...]} or\n" +
		"{\"prompt\": ..., \"completion\": ...}), as sft() does; print the table of steps (or JSON with -f json)\n" +
		"and the sampler and state checkpoints (the state is what --base-model trains on from).",
	Flags: []flagSpec{
		{Long: "--base-model", Kind: flagString, Metavar: "MODEL", Help: "Base model, or a tinker://…/weights/… state\nto start from (required)."},
		{Long: "--data", Kind: flagPath, Metavar: "FILE", Help: "Training conversations, JSONL (required)."},
		{Long: "--eval-data", Kind: flagPath, Metavar: "FILE", Help: "Held-out conversations scored as mean NLL."},
		{Long: "--rank", Kind: flagInt, Metavar: "INTEGER", Help: "LoRA rank (default 32)."},
		{Long: "--seed", Kind: flagInt, Metavar: "INTEGER", Help: "Seed of the adapter's initialisation and the shuffle."},
		{Long: "--renderer", Kind: flagString, Metavar: "NAME", Help: "Chat renderer (default: the model's)."},
		{Long: "--train-on", Kind: flagString, Metavar: "RULE", Help: "all_assistant_messages (default),\nlast_assistant_message, last_assistant_turn,\nall_messages, all_tokens,\nall_user_and_system_messages or customized\n(each message's \"trainable\")."},
		{Long: "--reduction", Kind: flagString, Metavar: "NAME", Help: "mean (default: each example's weights sum to 1)\nor none (0/1 weights, a token-sum loss)."},
		{Long: "--max-length", Kind: flagInt, Metavar: "INTEGER", Help: "Longest example in tokens."},
		{Long: "--truncate", Kind: flagBool, Help: "Cut longer examples instead of failing."},
		{Long: "--batch-size", Kind: flagInt, Metavar: "INTEGER", Help: "Conversations per step (default 8)."},
		{Long: "--epochs", Kind: flagInt, Metavar: "INTEGER", Help: "Passes over the data (default 1)."},
		{Long: "--learning-rate", Kind: flagString, Metavar: "FLOAT", Help: "Peak learning rate (default: lr_for(MODEL))."},
		{Long: "--lr-schedule", Kind: flagString, Metavar: "NAME", Help: "linear (default), constant or cosine."},
		{Long: "--save-every", Kind: flagInt, Metavar: "INTEGER", Help: "Steps between saved states (default 20)."},
		keepStatesFlag,
		{Long: "--eval-every", Kind: flagInt, Metavar: "INTEGER", Help: "Steps between evaluations (default 10)."},
		{Long: "--log-dir", Kind: flagPath, Metavar: "DIR", Help: "Metrics and saved state; rerun to resume."},
		{Long: "--name", Kind: flagString, Metavar: "TEXT", Help: "Checkpoint name prefix (default sft)."},
		{Long: "--max-steps", Kind: flagInt, Metavar: "INTEGER", Help: "Stop this run after INTEGER steps."},
	},
	Run: runTrainSFT,
}

func runTrainSFT(c *invocation) int {
	o, usage := sftOptions(c)
	if usage != "" {
		return c.usageError(usage)
	}
	load := func() (err error) {
		if o.Data, err = train.LoadConversations(c.str("data")); err != nil || !c.has("eval-data") {
			return err
		}
		o.Eval, err = train.LoadConversations(c.str("eval-data"))
		return err
	}
	return runLoop(c, &o.RunOptions, load, func(r *apiRun, s train.Session) (func() error, error) {
		res, err := train.SFT(r.ctx, s, o)
		return func() error { return showSFT(c, res) }, err
	})
}

// sftOptions reads the flags of train sft; usage words a bad one.
func sftOptions(c *invocation) (o train.SFTOptions, usage string) {
	o = train.SFTOptions{BaseModel: c.str("base-model"), Lora: tinkerapi.DefaultLoraConfig(), TrainOn: chat.TrainAllAssistant,
		Renderer: c.str("renderer"), Truncate: c.has("truncate"), Reduction: c.str("reduction")}
	o.LogDir, o.Name = c.str("log-dir"), c.str("name")
	if o.BaseModel == "" {
		return o, "Missing option '--base-model'."
	}
	if !c.has("data") {
		return o, "Missing option '--data'."
	}
	o.Lora.Rank = c.intOr("rank", 32)
	if c.has("seed") {
		s := int64(c.intOr("seed", 0))
		o.Lora.Seed = &s
	}
	if c.has("train-on") {
		o.TrainOn = c.str("train-on")
	}
	o.MaxLength = c.intOr("max-length", 0)
	o.BatchSize = c.intOr("batch-size", train.DefaultBatchSize)
	o.Epochs = c.intOr("epochs", 1)
	o.Schedule = "linear"
	if c.has("lr-schedule") {
		o.Schedule = c.str("lr-schedule")
	}
	o.SaveEvery = c.intOr("save-every", train.DefaultSaveEvery)
	o.KeepStates = c.intOr("keep-states", train.DefaultKeepStates)
	o.EvalEvery = c.intOr("eval-every", train.DefaultEvalEvery)
	o.MaxSteps = c.intOr("max-steps", 0)
	o.LearningRate, usage = learningRateFlag(c)
	return o, usage
}

// runLoop runs a training loop as a subcommand: load reads its data files
// (their errors come before any request), then loop runs in a session
// with the live step line on a terminal and returns how to show its
// result. Ctrl-C stops after the steps already sent and saves (the line
// "interrupted after step N … to resume", exit 130); a second Ctrl-C exits
// at once.
func runLoop(c *invocation, ro *train.RunOptions, load func() error, loop func(r *apiRun, s train.Session) (func() error, error)) int {
	interrupted := false
	code := runAPI(c, func(r *apiRun) error {
		if err := load(); err != nil {
			return &tinkerapi.UserError{Msg: err.Error()}
		}
		env, s, err := r.openSession()
		if err != nil {
			return interruptedOr(c, r, err, &interrupted)
		}
		defer env.Close()
		var status *train.Status
		if c.io.ErrTTY {
			status = train.NewStatus(c.io.Err, c.io.Width)
			ro.OnStep = status.Step
			defer env.HushStatus()()
		}
		ro.OnResume = func(step, total int) {
			status.Resumed(step)
			fmt.Fprintf(c.io.Err, "resuming from step %d of %d (the state saved in %s)\n", step, total, ro.LogDir)
		}
		ro.OnWarning = func(msg string) { fmt.Fprintf(c.io.Err, "warning: %s\n", msg) }
		defer watchInterrupt(r, status)()
		show, err := loop(r, s)
		status.Clear() // before any message, which would follow it on its line
		var ie *train.InterruptedError
		if errors.As(err, &ie) {
			ie.Resume = func(dir string) string { return "run the same command again (with --log-dir " + dir + ") to resume" }
			interrupted = true
			fmt.Fprintf(c.io.Err, "%v\n", err)
			return nil
		}
		if err != nil {
			return interruptedOr(c, r, err, &interrupted)
		}
		return show()
	})
	if interrupted {
		return shell.ExitInterrupted
	}
	return code
}

// interruptedOr is err as a user error, unless Ctrl-C caused it before
// the loop began: then it says so (never a bare "Aborted!") and the
// command exits as interrupted.
func interruptedOr(c *invocation, r *apiRun, err error, interrupted *bool) error {
	if r.ctx.Err() != nil {
		*interrupted = true
		fmt.Fprintln(c.io.Err, "interrupted before the first step: nothing was trained or saved; run the same command again")
		return nil
	}
	var ue *tinkerapi.UserError
	if !errors.As(err, &ue) {
		return &tinkerapi.UserError{Msg: err.Error()}
	}
	return err
}

// watchInterrupt tells, at the first Ctrl-C, that the run is finishing
// the steps already sent and saving; runAPI exits at once at the second,
// with this note (what was saved before stays). The function it returns
// stops watching.
func watchInterrupt(r *apiRun, status *train.Status) func() {
	note := "interrupted again: quitting without saving; the last saved state stays in the log directory"
	r.quitNote.Store(&note)
	stop := context.AfterFunc(r.ctx, func() {
		status.Clear()
		fmt.Fprintln(r.io.Err, "stopping: finishing the steps already sent, then saving (Ctrl-C again to quit at once)")
	})
	return func() { stop() }
}

// showSFT prints a finished (or stopped) run: its table or JSON, the loss
// chart on a terminal, and the checkpoint to use or continue from.
func showSFT(c *invocation, res *train.SFTResult) error {
	if c.jsonMode() {
		return c.writeJSON(train.SFTJSON(res))
	}
	if err := c.writeTable(train.SFTTable(res)); err != nil {
		return err
	}
	showEnd(c, res)
	return nil
}

// showEnd follows a run's table: the loss chart on a terminal, then the
// checkpoint to use or to continue from.
func showEnd[M train.Record](c *invocation, res *train.Result[M]) {
	if c.io.OutTTY {
		fmt.Fprintln(c.io.Out, train.Chart(res.Steps, c.io.Width))
	}
	if res.SamplerPath != "" {
		fmt.Fprintf(c.io.Out, "Sampler checkpoint: %s\n", res.SamplerPath)
		// the state is what train dpo/rl/sft --base-model continues from
		fmt.Fprintf(c.io.Out, "State checkpoint:   %s\n", res.StatePath)
	} else {
		fmt.Fprintf(c.io.Out, "State checkpoint: %s (run again with --log-dir to continue)\n", res.StatePath)
	}
}
