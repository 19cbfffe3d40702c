// Package train holds the training loops (SFT, DPO, RL) and evaluation as
// plain Go, so that a builtin (sft()) and its subcommand (`tinker train
// sft`) are thin callers of the same
// code: a builtin unpacks Starlark arguments into an options struct, a
// subcommand unpacks flags into the same struct, and both show the same
// Result. The package knows no Starlark and no command line.
//
// Every loop shares one machinery, and a new loop is a new file that
// supplies only what is its own:
//
//   - run.go and pipeline.go: the runner. It opens the log directory and
//     the training client (restored from the saved state when resuming),
//     submits each step before awaiting the one before (at most two in
//     flight, so the service always has the next step queued), waits at
//     barriers where a save or an evaluation must see a step's weights,
//     records metrics, saves every SaveEvery steps and at the end, and on
//     Ctrl-C saves the last finished step and returns InterruptedError.
//     A step's requests are sent with the uncancelled context, so an
//     interrupt never leaves a seq_id gap the server would wait for.
//     A loop is a stepper: submit(step) sends the step's requests and
//     returns a function that awaits them and yields its metrics record.
//   - logdir.go: log_dir with config.json (the settings that must match to
//     resume), metrics.jsonl (one record per step) and state.json (the
//     latest saved state), written through lib/atomicfile. Resuming from
//     the saved state with a step order that is a function of the seed and
//     the step gives the same final weights as a run never interrupted.
//   - status.go and chart.go: the live step line (Status) and the column
//     chart of a run, both driven by the Record interface every loop's
//     metrics type implements (its step, its headline figure, its tokens).
//   - start.go: where a run begins, resolved once for every loop: a base
//     model the backend serves (a mistyped one is worded as sample()
//     words it) or a saved state whose base model sets the rate, the
//     renderer and the tokenizer; and the learning-rate default.
//   - retention.go: what a run deletes as it saves (states beyond the
//     newest KeepStates, RL's superseded policy snapshots).
//   - client.go: the small Client and Session interfaces over the Tinker
//     API client that loops use, so the loops depend on what they call.
//   - data.go and rows.go: data as JSON rows from a JSONL file or a
//     script's list (errors name the row), read into conversations,
//     preference pairs or prompts, and rendered into training data.
//   - show.go: the table and JSON of any loop's steps, read from its
//     record's fields.
//
// sft.go is the SFT loop: LR schedules, batch order, cross_entropy steps
// with Adam, and eval NLL; sft_show.go its table and JSON. dpo.go is DPO:
// reference log-likelihoods once (kept in log_dir), then per step a
// forward and a cross_entropy pass weighted by the loss's gradient. rl.go
// is RL: per step a policy snapshot, group sampling, a reward per
// completion, group-relative advantages and a policy-gradient loss.
// eval.go samples a model on conversations and scores the answers.
// docs/training.md says what each computes.
package train
