package train

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// optimSteps records the Adam parameters of every optim_step the server
// is sent.
type optimSteps struct {
	mu     sync.Mutex
	params []tinkerapi.AdamParams
}

func (o *optimSteps) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "optim_step") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var req struct {
				Adam tinkerapi.AdamParams `json:"adam_params"`
			}
			if json.Unmarshal(body, &req) == nil {
				o.mu.Lock()
				o.params = append(o.params, req.Adam)
				o.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	})
}

func (o *optimSteps) take() []tinkerapi.AdamParams {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.params
	o.params = nil
	return p
}

// The SFT, DPO and RL loops send Adam eps 1e-8, as the cookbook's loops
// do; DPO's learning rate defaults to the cookbook's 1e-5.
func TestLoopDefaultsAreTheCookbooks(t *testing.T) {
	rec := &optimSteps{}
	sess := localSessionWith(t, 0, rec.wrap)
	o := resumeOptions("")
	o.Epochs, o.Data = 1, qa(2)
	if _, err := SFT(t.Context(), sess, o); err != nil {
		t.Fatal(err)
	}
	d := dpoOptions("")
	d.LearningRate, d.Epochs = 0, 1
	dres, err := DPO(t.Context(), sess, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RL(t.Context(), sess, rlOptions("", 1)); err != nil {
		t.Fatal(err)
	}
	steps := rec.take()
	if len(steps) < 3 {
		t.Fatalf("%d optimizer steps recorded, want one per loop at least", len(steps))
	}
	for i, p := range steps {
		if p.Eps != 1e-8 {
			t.Errorf("optim_step %d sent eps %g, want 1e-8", i, p.Eps)
		}
	}
	if lr := dres.Steps[0].LearningRate; lr != 1e-5 {
		t.Errorf("DPO's default learning rate is %g, want the cookbook's 1e-5", lr)
	}
}

func constantReward(int, string) (float64, error) { return 0.5, nil }

// Groups whose rewards are all equal are trained on with advantage 0 and
// every step steps (the cookbook's default); DropEqualGroups leaves them
// out and, with nothing left, skips the optimizer step.
func TestRLEqualRewardGroups(t *testing.T) {
	rec := &optimSteps{}
	sess := localSessionWith(t, 0, rec.wrap)
	o := rlOptions(filepath.Join(t.TempDir(), "keep"), 2)
	o.Reward, o.GroupSize = constantReward, 2
	res, err := RL(t.Context(), sess, o)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.take()); n != 2 {
		t.Errorf("kept equal groups: %d optimizer steps, want 2", n)
	}
	for _, m := range res.Steps {
		if m.Skipped != 0 || m.Trained == 0 || m.Loss != 0 {
			t.Errorf("kept equal groups: step %+v, want all trained, none skipped, loss 0", m)
		}
	}
	o.LogDir, o.DropEqualGroups = filepath.Join(t.TempDir(), "drop"), true
	res, err = RL(t.Context(), sess, o)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.take()); n != 0 {
		t.Errorf("dropped equal groups: %d optimizer steps, want none", n)
	}
	for _, m := range res.Steps {
		if m.Skipped != 2 || m.Trained != 0 {
			t.Errorf("dropped equal groups: step %+v, want both groups skipped", m)
		}
	}
}
