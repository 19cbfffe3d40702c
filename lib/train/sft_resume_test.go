package train

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
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

// Ctrl-C right after a periodic save stops with that state: it is not
// saved again under the same name (which failed with "already exists",
// and the subcommand then printed only "Aborted!").
func TestInterruptRightAfterASave(t *testing.T) {
	sess := localSession(t, 0)
	o := resumeOptions(filepath.Join(t.TempDir(), "run"))
	ctx, onStep := interruptAt(t, o.SaveEvery)
	o.OnStep = onStep
	_, err := SFT(ctx, sess, o)
	var ie *InterruptedError
	if !errors.As(err, &ie) || ie.Step != o.SaveEvery || !strings.HasSuffix(ie.StatePath, "sft-000004") {
		t.Fatalf("interrupted at a save: %v", err)
	}
}

// Ctrl-C that lands while a step's requests are being sent does not cut
// the pair short: every forward_backward the server got has its
// optim_step (a lost one left a seq_id gap the next save waited 30 s
// for), and the run stops with the last saved state.
func TestInterruptWhileSubmitting(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	counts := map[string]int{}
	sess := localSessionWith(t, 0, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for _, op := range []string{"forward_backward", "optim_step"} {
				if strings.HasSuffix(r.URL.Path, op) {
					mu.Lock()
					counts[op]++
					if op == "forward_backward" && counts[op] == 3 {
						cancel() // between step 3's two requests
					}
					mu.Unlock()
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	o := resumeOptions(filepath.Join(t.TempDir(), "run"))
	_, err := SFT(ctx, sess, o)
	var ie *InterruptedError
	if !errors.As(err, &ie) {
		t.Fatalf("want an interrupt, got %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if counts["forward_backward"] != counts["optim_step"] || ie.Step != counts["optim_step"] {
		t.Errorf("%d forward_backward, %d optim_step, stopped after step %d: want the pairs whole and all saved", counts["forward_backward"], counts["optim_step"], ie.Step)
	}
}
