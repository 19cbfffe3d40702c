package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// start is where a loop begins: a fresh adapter on a base model, or the
// weights of a saved training state (as the cookbook's
// load_checkpoint_path: weights only, a fresh optimizer). Either way the
// base model decides the learning-rate rule, the renderer and the
// tokenizer.
type start struct {
	base string // the base model
	from string // tinker://…/weights/… to load, or "" for a fresh adapter
	rank int    // the checkpoint's LoRA rank, 0 when unknown or fresh
}

// resolveStart reads a loop's model argument: a base model the backend
// serves (a mistyped name is one line saying what was meant, the words
// sample() uses) or a tinker://…/weights/… state, whose base model it
// looks up (or, for a run in logDir that began from it and saved a state
// of its own, reads from there). Errors are *tinkerapi.UserError.
func resolveStart(ctx context.Context, s Session, model, logDir string) (start, error) {
	if !strings.HasPrefix(model, "tinker://") {
		if isAdapterDir(model) {
			return start{}, userErr(fmt.Sprintf("%s is an adapter directory: import it first (tinker serve import-adapter %s --base-model MODEL) and start from the tinker://…/weights/… path it prints", model, model))
		}
		if err := ops.CheckBaseModel(ctx, s.Client(), model); err != nil {
			return start{}, err
		}
		return start{base: model}, nil
	}
	p, err := tinkerapi.ParseArg(model)
	if err != nil {
		return start{}, err
	}
	if p.Kind != "weights" {
		return start{}, userErr(fmt.Sprintf("%s holds sampler weights, which cannot be trained further; start from the run's training state (its .state_checkpoint, a tinker://%s/weights/… path)", model, p.RunID))
	}
	info, err := s.Client().WeightsInfo(ctx, model)
	if gone(err) {
		if st, ok := resumedFrom(logDir, model); ok {
			// Resuming needs the run's own state, not the one it began
			// from, which retention or a person may have deleted since.
			return st, nil
		}
	}
	if err != nil {
		return start{}, stateErr(model, err)
	}
	st := start{base: info.BaseModel, from: model}
	if info.LoraRank != nil {
		st.rank = *info.LoraRank
	}
	return st, nil
}

// BaseOf is the base model a loop started from model would train on: the
// model itself, or a state's base model, resolved (and its errors worded)
// as the loops resolve it. lr_for() takes states and runs through it.
func BaseOf(ctx context.Context, s Session, model string) (string, error) {
	st, err := resolveStart(ctx, s, model, "")
	return st.base, err
}

// resumedFrom is the start of the run in logDir (its config.json) when
// that run began from the state from and has saved a state of its own to
// resume from.
func resumedFrom(logDir, from string) (start, bool) {
	if logDir == "" {
		return start{}, false
	}
	var cfg struct {
		BaseModel string `json:"base_model"`
		From      string `json:"from"`
		Rank      int    `json:"rank"`
	}
	b, err := os.ReadFile(filepath.Join(logDir, "config.json"))
	if err != nil || json.Unmarshal(b, &cfg) != nil || cfg.From != from || cfg.BaseModel == "" {
		return start{}, false
	}
	_, err = os.Stat(filepath.Join(logDir, "state.json"))
	return start{base: cfg.BaseModel, from: from, rank: cfg.Rank}, err == nil
}

// isAdapterDir reports whether path is a local PEFT adapter directory.
func isAdapterDir(path string) bool {
	_, err := os.Stat(filepath.Join(path, "adapter_config.json"))
	return err == nil
}

// stateErr words a failure to find a saved state: one that is gone says
// so and how to go on; others pass unchanged.
func stateErr(path string, err error) error {
	if gone(err) {
		return userErr(fmt.Sprintf("the saved state %s no longer exists (deleted or expired); start from another checkpoint (checkpoint.list() lists them) or from the base model", path))
	}
	return err
}

// gone reports whether err is the backend's "not found".
func gone(err error) bool {
	var ae *tinkerapi.APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// begin resolves a loop's model argument (*model becomes the base model)
// and its learning rate (*lr, when 0, becomes def's for that base model);
// a state's LoRA rank replaces lora's.
func begin(ctx context.Context, s Session, ro *RunOptions, model *string, lr *float64, lora *tinkerapi.LoraConfig, def func(string) (float64, error)) (start, error) {
	st, err := resolveStart(ctx, s, *model, ro.LogDir)
	if err != nil {
		return start{}, err
	}
	*model = st.base
	if st.rank > 0 {
		lora.Rank = st.rank
	}
	if *lr, err = rate(*lr, st.base, def); err != nil {
		return start{}, userErr(err.Error())
	}
	return st, nil
}
