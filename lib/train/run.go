package train

import (
	"context"
	"fmt"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// RunOptions are the settings every loop shares.
type RunOptions struct {
	LogDir    string // config.json, metrics.jsonl, state.json; "" for none
	Name      string // checkpoint name prefix; "" for the loop's name
	SaveEvery int    // steps between saved states; 0: only at the end
	// KeepStates is how many saved states stay (the newest; the final
	// ones always stay, and RL's policy snapshots go once the next
	// exists); 0 keeps everything.
	KeepStates int
	// MaxSteps > 0 stops this call after that many steps of the run
	// (saving its state); schedules still span the whole run.
	MaxSteps int
	// OnStep is told of each finished step (Status.Step draws it).
	OnStep func(m Record, total int)
	// OnResume is told, before the first step, that the run resumes
	// after step of total (the step saved in LogDir).
	OnResume func(step, total int)
	// OnWarning is told, once per call before the first step, each thing
	// about the data the user should know (also in Result.Warnings).
	OnWarning func(msg string)
}

// rate is a run's learning rate: the one given, or (when 0) the loop's
// default for its base model, def.
func rate(given float64, base string, def func(string) (float64, error)) (float64, error) {
	if given != 0 {
		return given, nil
	}
	lr, err := def(base)
	if err != nil {
		return 0, fmt.Errorf("learning_rate: %w", err)
	}
	return lr, nil
}

// dpoRate is DPO's default learning rate, whatever the model.
func dpoRate(string) (float64, error) { return DefaultDPOLearningRate, nil }

// Result is the outcome of a run, or of the part of it this call ran.
type Result[M Record] struct {
	BaseModel   string
	Steps       []M // every finished step of the run, resumed ones too
	Total       int
	StatePath   string
	SamplerPath string // empty until the run has finished
	LogDir      string
	Warnings    []string // what OnWarning was told
}

// LastStep is the number of the last finished step, 0 for none.
func (r *Result[M]) LastStep() int {
	if len(r.Steps) == 0 {
		return 0
	}
	return r.Steps[len(r.Steps)-1].StepNumber()
}

// InterruptedError is a loop's error when ctx was cancelled: the state of
// the last finished step has been saved by then.
type InterruptedError struct {
	Step, Total int
	StatePath   string
	LogDir      string
	// Resume words how to continue, given the log directory, e.g. as the
	// builtin's argument (the default) or a command-line option.
	Resume func(logDir string) string
}

func (e *InterruptedError) Error() string {
	if e.StatePath == "" {
		return fmt.Sprintf("interrupted after step %d of %d, before any state was saved: nothing to resume; run it again to start over", e.Step, e.Total)
	}
	how := "training_client(state=...) continues from it; give log_dir to make runs resumable"
	if e.LogDir != "" {
		if e.Resume != nil {
			how = e.Resume(e.LogDir)
		} else {
			how = fmt.Sprintf("run again with log_dir=%q to resume", e.LogDir)
		}
	}
	return fmt.Sprintf("interrupted after step %d of %d; state saved to %s; %s", e.Step, e.Total, e.StatePath, how)
}

// runner is the machinery one loop call shares with every other: its log
// directory, its training client, pipelined submission, saves and the
// result. A loop supplies only the stepper.
type runner[M Record] struct {
	o      *RunOptions
	start  start
	tc     Client
	keep   retention
	log    *logDir[M] // nil without LogDir
	res    *Result[M]
	st     State // the last saved state
	total  int
	prefix string
	// wait awaits futures already submitted, even after an interrupt: the
	// server runs them anyway, and the saved state must match the metrics.
	wait context.Context

	finished  int         // steps whose results are in
	resultsAt []time.Time // when the last steps' results came in (see lap)
}

// stepper is one loop's part of a run.
type stepper[M Record] interface {
	// submit sends step's requests (0-based) and returns the function that
	// awaits them and gives the step's metrics; errors it returns name the
	// step.
	submit(ctx context.Context, step int) (func() (M, error), error)
	// barrier reports whether something after step other than a save
	// (an evaluation, a sampling round) must see its weights.
	barrier(step int) bool
}

// warn tells the run's warnings, once.
func (r *runner[M]) warn(msgs []string) {
	r.res.Warnings = append(r.res.Warnings, msgs...)
	for _, m := range msgs {
		if r.o.OnWarning != nil {
			r.o.OnWarning(m)
		}
	}
}

// newRunner prepares a run of total steps from st whose settings are cfg,
// reading the saved state of an earlier call from o.LogDir. The error is
// that of the log directory.
func newRunner[M Record](ctx context.Context, o *RunOptions, st start, total int, cfg any, prefix string) (*runner[M], error) {
	r := &runner[M]{o: o, start: st, total: total, prefix: o.Name, wait: context.WithoutCancel(ctx)}
	r.res = &Result[M]{BaseModel: st.base, Total: total, LogDir: o.LogDir}
	if r.prefix == "" {
		r.prefix = prefix
	}
	if o.LogDir != "" {
		var err error
		if r.log, r.st, r.res.Steps, err = openLogDir[M](o.LogDir, cfg); err != nil {
			return nil, err
		}
		r.res.StatePath, r.res.SamplerPath = r.st.StatePath, r.st.SamplerPath
	}
	return r, nil
}

// done reports whether an earlier call finished the run.
func (r *runner[M]) done() bool { return r.st.Step == r.total && r.st.SamplerPath != "" }

// open creates the training client: restored with its optimizer from the
// saved state when resuming, else from the start's weights (a fresh
// optimizer) or a fresh adapter; then it starts the metrics log.
func (r *runner[M]) open(ctx context.Context, s Session, lora tinkerapi.LoraConfig, createdBy string) error {
	var tc *tinkerapi.TrainingClient
	var err error
	meta := map[string]string{"created_by": createdBy}
	switch {
	case r.st.StatePath != "":
		tc, err = s.CreateTrainingClientFromState(ctx, r.st.StatePath, tinkerapi.StateOptions{Optimizer: true, BaseModel: r.start.base})
		err = r.resumeErr(err)
	case r.start.from != "":
		tc, err = s.CreateTrainingClientFromState(ctx, r.start.from, tinkerapi.StateOptions{UserMetadata: meta})
		err = stateErr(r.start.from, err)
	default:
		tc, err = s.CreateTrainingClient(ctx, r.start.base, lora, meta)
	}
	if err != nil {
		return err
	}
	r.tc = tc
	r.keep = retention{rest: s.Client(), keep: r.o.KeepStates}
	if r.st.StatePath != "" {
		r.keep.states = []string{r.st.StatePath}
	}
	if r.log != nil {
		if err := r.log.start(); err != nil {
			return fmt.Errorf("log_dir: %w", err)
		}
	}
	return nil
}

// resumeErr words a failure to restore the saved state: one that is gone
// says how to start over or go on from an older state.
func (r *runner[M]) resumeErr(err error) error {
	if err == nil || !gone(err) {
		return err
	}
	return userErr(fmt.Sprintf("cannot resume: the state log_dir %s saved after step %d (%s) no longer exists (deleted or expired); "+
		"start over with another log_dir (or remove %s), or start a new run from an older state: checkpoint.list() lists them, pass one as the base model",
		r.o.LogDir, r.st.Step, r.st.StatePath, r.o.LogDir))
}

func (r *runner[M]) close() {
	if r.log != nil {
		r.log.close()
	}
}

// lap is a finished step's share of the wall time. With two steps in
// flight their results often come in together, so the time since the
// previous result alternated between a whole step and nothing (and the
// status line showed absurd tokens/s); a step's time is therefore the time
// since the result pipelineDepth steps back came in, divided by the steps
// in between.
func (r *runner[M]) lap() float64 { return r.lapAt(time.Now()) }

// lapAt is lap with the clock read by the caller (tests pass their own).
func (r *runner[M]) lapAt(now time.Time) float64 {
	r.resultsAt = append(r.resultsAt, now)
	back := min(pipelineDepth, len(r.resultsAt)-1)
	d := now.Sub(r.resultsAt[len(r.resultsAt)-1-back]).Seconds() / float64(max(back, 1))
	if len(r.resultsAt) > pipelineDepth+1 {
		r.resultsAt = r.resultsAt[1:]
	}
	return d
}

// saveAt reports whether the state is saved after step n (1-based).
func (r *runner[M]) saveAt(n int) bool {
	return n == r.total || r.o.SaveEvery > 0 && n%r.o.SaveEvery == 0
}
