package train

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

func resumeOptions(logDir string) SFTOptions {
	seed := int64(3)
	o := SFTOptions{BaseModel: "tinker-local/tiny-llama", Data: qa(6), Lora: tinkerapi.DefaultLoraConfig(), TrainOn: chat.TrainAllAssistant,
		BatchSize: 2, Epochs: 2, LearningRate: 5e-3, Schedule: "cosine"}
	o.Lora.Rank, o.Lora.Seed = 4, &seed
	o.LogDir, o.SaveEvery = logDir, 4
	return o
}

// Ctrl-C (a cancelled context) after step 2 saves that step's state, even
// though it is not a save point, and a second call with the same log_dir
// continues from it to the losses of a run never interrupted.
func TestSFTInterruptAndResume(t *testing.T) {
	sess := localSession(t, 0)
	dir := t.TempDir()
	whole, err := SFT(t.Context(), sess, resumeOptions(filepath.Join(dir, "whole")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	o := resumeOptions(filepath.Join(dir, "cut"))
	o.OnStep = func(m Record, total int) {
		if m.StepNumber() == 2 {
			cancel()
		}
	}
	part, err := SFT(ctx, sess, o)
	var ie *InterruptedError
	if !errors.As(err, &ie) || ie.Step < 2 || ie.Step >= whole.Total || part.StatePath == "" {
		t.Fatalf("interrupted call: %v (result %+v)", err, part)
	}
	o.OnStep = nil
	rest, err := SFT(t.Context(), sess, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.Steps) != len(whole.Steps) || rest.SamplerPath == "" {
		t.Fatalf("resumed run has %d steps (sampler %q), want %d", len(rest.Steps), rest.SamplerPath, len(whole.Steps))
	}
	for i := range whole.Steps {
		if a, b := whole.Steps[i].Loss, rest.Steps[i].Loss; a != b {
			t.Errorf("step %d: loss %v resumed, %v uninterrupted", i+1, b, a)
		}
	}
}
