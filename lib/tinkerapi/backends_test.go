package tinkerapi

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerapi/partialtest"
)

// TestPartialBackend (issue 22, item 7): against a server with only part
// of the API (SkyRL tx's shape), the client creates a session and a model
// through a future numbered with an integer (sent back as a number), reads
// runs owned by "default" and checkpoints without a cursor, and a call to
// an endpoint the backend lacks fails with one line naming the feature.
func TestPartialBackend(t *testing.T) {
	stub := partialtest.New()
	defer stub.Close()
	c, err := New(Config{BaseURL: stub.URL(), APIKey: "tml-anything"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := c.CreateSession(ctx, SessionOptions{})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	defer s.Close()
	tc, err := s.CreateTrainingClient(ctx, partialtest.BaseModel, LoraConfig{Rank: 32, TrainMLP: true}, nil)
	if err != nil {
		t.Fatalf("create model with an integer request id: %v", err)
	}
	info, err := c.GetInfo(ctx, tc.ModelID())
	if err != nil || info.ModelID != tc.ModelID() {
		t.Errorf("get_info: %+v %v", info, err)
	}
	runs, err := c.ListTrainingRuns(ctx, 10, 0, "")
	if err != nil || len(runs.TrainingRuns) != 1 || runs.TrainingRuns[0].ModelOwner != "default" {
		t.Fatalf("runs: %+v %v", runs, err)
	}
	cps, err := c.ListRunCheckpoints(ctx, tc.ModelID())
	if err != nil || len(cps.Checkpoints) != 1 || cps.Cursor != nil {
		t.Errorf("checkpoints without a cursor: %+v %v", cps, err)
	}
	if caps, err := c.GetServerCapabilities(ctx); err != nil || caps.SupportedModels[0].Servable != nil {
		t.Errorf("capabilities without max_context_length: %+v %v", caps, err)
	}
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for feature, call := range map[string]func() error{
		"session export":          func() error { _, err := c.TraceExport(ctx, "session_1"); return err },
		"session listing":         func() error { _, err := c.ListSessions(ctx, 10, 0, ""); return err },
		"billing":                 func() error { _, err := c.BillingUsage(ctx, day, day.Add(time.Hour)); return err },
		"listing all checkpoints": func() error { _, err := c.ListUserCheckpoints(ctx, 10, 0); return err },
	} {
		err := call()
		msg, _ := CLIError(err)
		if !errors.Is(err, ErrNotOffered) || msg != "this backend does not offer "+feature || strings.Contains(msg, "\n") {
			t.Errorf("%s: %v (shown as %q)", feature, err, msg)
		}
	}
	// A model the backend does not know is its 404, not "not offered".
	if _, err := c.GetInfo(ctx, "model_nope"); err == nil || errors.Is(err, ErrNotOffered) {
		t.Errorf("unknown model: %v", err)
	}
	if !slices.Contains(stub.Requests(), "POST /api/v1/retrieve_future") {
		t.Errorf("no future was polled: %v", stub.Requests())
	}
}
