package train

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// After Ctrl-C a run still saves the step it finished; when that save
// hangs (a busy service), a second Ctrl-C (the hard stop) gives it up and
// the call returns at once with the state saved before.
func TestHardStopGivesUpTheSave(t *testing.T) {
	hard, stopHard := context.WithCancel(t.Context())
	defer stopHard()
	ctx, cancel := context.WithCancel(WithHardStop(t.Context(), hard))
	defer cancel()
	stalled := make(chan struct{}, 1)
	sess := localSessionWith(t, 0, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ctx.Err() != nil && strings.HasSuffix(r.URL.Path, "save_weights") {
				io.Copy(io.Discard, r.Body) // so the server sees the client go
				select {
				case stalled <- struct{}{}:
				default:
				}
				<-r.Context().Done() // held until the client gives up
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	o := resumeOptions(filepath.Join(t.TempDir(), "run"))
	o.OnStep = func(m Record, _ int) {
		if m.StepNumber() == o.SaveEvery+1 {
			cancel()
		}
	}
	done := make(chan error, 1)
	go func() { _, err := SFT(ctx, sess, o); done <- err }()
	select {
	case <-stalled:
	case err := <-done:
		t.Fatalf("the run ended without saving after the interrupt: %v", err)
	}
	stopHard()
	select {
	case err := <-done:
		var ie *InterruptedError
		if !errors.As(err, &ie) || ie.Step != o.SaveEvery || !strings.HasSuffix(ie.StatePath, "sft-000004") {
			t.Fatalf("hard stop: %v", err)
		}
	case <-time.After(60 * time.Second): // a hang guard, not a timing
		t.Fatal("the hard stop did not end the hung save")
	}
}
