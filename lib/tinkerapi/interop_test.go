package tinkerapi_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// TestAgainstLocalServer runs the client against the real local server
// (lib/server): the SDK's session/futures flow through Do, then every REST
// method, so client and server cannot drift apart unnoticed.
func TestAgainstLocalServer(t *testing.T) {
	c := localClient(t, server.Options{}, "tml-interop", 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	must(c.Healthz(ctx), "healthz")
	caps, err := c.GetServerCapabilities(ctx)
	must(err, "capabilities")
	if len(caps.SupportedModels) == 0 {
		t.Fatal("no supported models")
	}
	var sess struct {
		SessionID string `json:"session_id"`
	}
	must(c.Do(ctx, "POST", "/api/v1/create_session", map[string]any{"tags": []string{}, "user_metadata": map[string]string{},
		"sdk_version": tinkerapi.SDKVersion, "type": "create_session"}, &sess), "create_session")
	created := future(ctx, t, c, "/api/v1/create_model", map[string]any{"session_id": sess.SessionID, "model_seq_id": 0,
		"base_model": caps.SupportedModels[0].ModelName, "type": "create_model",
		"lora_config": map[string]any{"rank": 8, "train_unembed": true, "train_mlp": true, "train_attn": true}})
	runID, _ := created["model_id"].(string)
	saved := future(ctx, t, c, "/api/v1/save_weights_for_sampler", map[string]any{"model_id": runID, "path": "final", "seq_id": 1, "type": "save_weights_for_sampler"})
	if saved["path"] != "tinker://"+runID+"/sampler_weights/final" {
		t.Fatalf("save_weights_for_sampler result %v", saved)
	}
	future(ctx, t, c, "/api/v1/save_weights", map[string]any{"model_id": runID, "path": "0001", "seq_id": 2, "overwrite": false, "type": "save_weights"})

	runs, err := c.ListTrainingRuns(ctx, 20, 0, "")
	must(err, "ListTrainingRuns")
	if len(runs.TrainingRuns) != 1 || runs.Cursor.TotalCount != 1 || runs.TrainingRuns[0].LastCheckpoint == nil ||
		runs.TrainingRuns[0].LastSamplerCheckpoint == nil {
		t.Fatalf("runs: %+v", runs)
	}
	run, err := c.GetTrainingRun(ctx, runID, "")
	must(err, "GetTrainingRun")
	if run.LoraRank == nil || *run.LoraRank != 8 || !run.IsLora {
		t.Errorf("run: %+v", run)
	}
	cps, err := c.ListRunCheckpoints(ctx, runID)
	must(err, "ListRunCheckpoints")
	if len(cps.Checkpoints) != 2 {
		t.Fatalf("run checkpoints: %+v", cps)
	}
	page, err := c.ListUserCheckpoints(ctx, 1, 0)
	must(err, "ListUserCheckpoints")
	if len(page.Checkpoints) != 1 || page.Cursor == nil || page.Cursor.TotalCount != 2 || page.Checkpoints[0].CheckpointID != "weights/0001" {
		t.Errorf("newest-first page: %+v %+v", page.Checkpoints, page.Cursor)
	}
	wi, err := c.WeightsInfo(ctx, "tinker://"+runID+"/sampler_weights/final")
	must(err, "WeightsInfo")
	if !wi.IsLora || wi.LoraRank == nil || *wi.LoraRank != 8 {
		t.Errorf("weights info: %+v", wi)
	}

	must(c.PublishCheckpoint(ctx, runID, "sampler_weights/final"), "publish")
	var apiErr *tinkerapi.APIError
	if err := c.PublishCheckpoint(ctx, runID, "sampler_weights/final"); !errors.As(err, &apiErr) || apiErr.Status != 409 {
		t.Errorf("second publish: %v, want 409", err)
	}
	must(c.UnpublishCheckpoint(ctx, runID, "sampler_weights/final"), "unpublish")
	ttl := int64(3600)
	must(c.SetCheckpointTTL(ctx, runID, "weights/0001", &ttl), "set ttl")
	cps, err = c.ListRunCheckpoints(ctx, runID)
	must(err, "ListRunCheckpoints")
	for _, cp := range cps.Checkpoints {
		if (cp.CheckpointID == "weights/0001") != (cp.ExpiresAt != nil) {
			t.Errorf("expiry after set-ttl: %+v", cp)
		}
	}
	must(c.SetCheckpointTTL(ctx, runID, "weights/0001", nil), "clear ttl")
	zero := int64(0)
	if msg, _ := tinkerapi.CLIError(c.SetCheckpointTTL(ctx, runID, "weights/0001", &zero)); msg != "Invalid request" {
		t.Errorf("ttl 0: %q", msg)
	}

	au, err := c.ArchiveURL(ctx, runID, "sampler_weights/final")
	must(err, "ArchiveURL")
	if !au.Expires.After(time.Now()) {
		t.Errorf("archive URL already expired: %+v", au)
	}
	resp, err := http.Get(au.URL) // plain client: no credential
	must(err, "fetch archive")
	names := map[string]bool{}
	tr := tar.NewReader(resp.Body)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(err, "read archive")
		names[strings.TrimPrefix(h.Name, "./")] = true
	}
	resp.Body.Close()
	if !names["checkpoint_complete"] || !names["adapter_config.json"] {
		t.Errorf("archive members %v", names)
	}

	ss, err := c.ListSessions(ctx, 20, 0, "")
	must(err, "ListSessions")
	if len(ss.Sessions) != 1 || ss.Sessions[0] != sess.SessionID {
		t.Errorf("sessions %+v", ss)
	}
	gs, err := c.GetSession(ctx, sess.SessionID, "")
	must(err, "GetSession")
	if len(gs.TrainingRunIDs) != 1 || gs.TrainingRunIDs[0] != runID {
		t.Errorf("session %+v", gs)
	}
	te, err := c.TraceExport(ctx, sess.SessionID)
	must(err, "TraceExport")
	if te.Status != "pending" && te.Status != "ready" {
		t.Errorf("trace export %+v", te)
	}
	hour := time.Now().UTC().Truncate(time.Hour)
	bu, err := c.BillingUsage(ctx, hour.Add(-time.Hour), hour.Add(time.Hour))
	must(err, "BillingUsage")
	if len(bu.Data) == 0 || len(bu.Sessions) != 1 {
		t.Errorf("billing usage %+v", bu)
	}

	must(c.DeleteCheckpoint(ctx, runID, "weights/0001"), "delete")
	_, err = c.ListRunCheckpoints(ctx, runID)
	must(err, "ListRunCheckpoints")
	if msg, details := tinkerapi.CLIError(c.DeleteCheckpoint(ctx, runID, "weights/0001")); msg != "Resource not found" ||
		!strings.HasPrefix(details, "Details: Error code: 404 - {'detail': ") {
		t.Errorf("second delete: %q %q", msg, details)
	}
}

// future submits a future-returning call and polls retrieve_future until
// the result arrives, the way the SDK does.
func future(ctx context.Context, t *testing.T, c *tinkerapi.Client, path string, body any) map[string]any {
	t.Helper()
	var h struct {
		RequestID string `json:"request_id"`
	}
	if err := c.Do(ctx, "POST", path, body, &h); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for {
		var out map[string]any
		err := c.Do(ctx, "POST", "/api/v1/retrieve_future", map[string]any{"request_id": h.RequestID, "allow_metadata_only": false},
			&out, tinkerapi.WithoutRetries(), tinkerapi.WithTimeout(45*time.Second))
		if err != nil {
			t.Fatalf("%s: retrieve_future: %v", path, err)
		}
		if out["type"] != "try_again" {
			if _, failed := out["error"]; failed {
				t.Fatalf("%s failed: %v", path, out)
			}
			return out
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// localClient starts the real local server (fast futures, no sweeper) on a
// loopback port and returns a client for it.
func localClient(t *testing.T, opts server.Options, key string, retry time.Duration) *tinkerapi.Client {
	t.Helper()
	opts.DataDir, opts.FutureDelay, opts.SweepInterval = t.TempDir(), 10*time.Millisecond, -1
	srv, err := server.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: base, APIKey: key, MaxRetryTime: retry})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
