package train

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// SFT, DPO and RL start from a saved state as the cookbook's
// load_checkpoint_path does: its weights (so a second SFT starts at the
// first one's loss, not the base model's), the state's base model (for
// the rate, the renderer and the tokenizer) and its LoRA rank.
func TestLoopsStartFromAState(t *testing.T) {
	sess := localSession(t, 0)
	first, err := SFT(t.Context(), sess, resumeOptions(""))
	if err != nil {
		t.Fatal(err)
	}
	o := resumeOptions(filepath.Join(t.TempDir(), "again"))
	o.BaseModel, o.LearningRate, o.Lora.Rank = first.StatePath, 0, 32
	again, err := SFT(t.Context(), sess, o)
	if err != nil {
		t.Fatal(err)
	}
	if again.BaseModel != "tinker-local/tiny-llama" {
		t.Errorf("base model %q, want the state's", again.BaseModel)
	}
	if fresh, cont := first.Steps[0].Loss, again.Steps[0].Loss; !(cont < 0.75*fresh) {
		t.Errorf("started from the state at loss %.3f, a fresh adapter at %.3f: the weights were not loaded", cont, fresh)
	}
	if lr := again.Steps[0].LearningRate; lr < 7e-3 || lr > 7.5e-3 {
		t.Errorf("learning rate %g, want lr_for(tiny-llama)", lr)
	}
	d := dpoOptions("")
	d.BaseModel, d.Epochs = first.StatePath, 1
	if res, err := DPO(t.Context(), sess, d); err != nil || res.BaseModel != "tinker-local/tiny-llama" {
		t.Errorf("DPO from the state: %v", err)
	}
	r := rlOptions("", 1)
	r.BaseModel = first.StatePath
	if res, err := RL(t.Context(), sess, r); err != nil || res.BaseModel != "tinker-local/tiny-llama" {
		t.Errorf("RL from the state: %v", err)
	}
}

// A mistyped base model, sampler weights, an adapter directory and a
// deleted state are each one line that says what to do.
func TestStartErrors(t *testing.T) {
	sess := localSession(t, 0)
	first, err := SFT(t.Context(), sess, resumeOptions(""))
	if err != nil {
		t.Fatal(err)
	}
	adapter := t.TempDir()
	if err := os.WriteFile(filepath.Join(adapter, "adapter_config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _ := tinkerapi.ParsePath(first.StatePath)
	if err := sess.Client().DeleteCheckpoint(t.Context(), p.RunID, p.CheckpointID); err != nil {
		t.Fatal(err)
	}
	for model, want := range map[string]string{
		"tinker-local/tiny-lama": "unknown base model tinker-local/tiny-lama; did you mean tinker-local/tiny-llama?",
		first.SamplerPath:        "holds sampler weights, which cannot be trained further; start from the run's training state",
		adapter:                  "is an adapter directory: import it first (tinker serve import-adapter",
		first.StatePath:          "no longer exists (deleted or expired); start from another checkpoint",
	} {
		o := resumeOptions("")
		o.BaseModel = model
		_, err := SFT(t.Context(), sess, o)
		var ue *tinkerapi.UserError
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") || !errors.As(err, &ue) {
			t.Errorf("SFT(%q): %v, want one line containing %q", model, err, want)
		}
	}
}

// A run that began from a state resumes from its own saved state even
// after the one it began from was deleted (retention deletes states).
func TestResumeAfterTheStartWasDeleted(t *testing.T) {
	sess := localSession(t, 0)
	first, err := SFT(t.Context(), sess, resumeOptions(""))
	if err != nil {
		t.Fatal(err)
	}
	o := resumeOptions(filepath.Join(t.TempDir(), "second"))
	o.BaseModel, o.Lora.Rank = first.StatePath, 32
	ctx, onStep := interruptAt(t, 2)
	o.OnStep = onStep
	var ie *InterruptedError
	if _, err := SFT(ctx, sess, o); !errors.As(err, &ie) {
		t.Fatalf("want an interrupt, got %v", err)
	}
	p, _ := tinkerapi.ParsePath(first.StatePath)
	if err := sess.Client().DeleteCheckpoint(t.Context(), p.RunID, p.CheckpointID); err != nil {
		t.Fatal(err)
	}
	o.BaseModel, o.Lora.Rank, o.OnStep = first.StatePath, 32, nil
	res, err := SFT(t.Context(), sess, o)
	if err != nil || res.SamplerPath == "" || res.BaseModel != "tinker-local/tiny-llama" {
		t.Fatalf("resume after the start state was deleted: %v", err)
	}
}
