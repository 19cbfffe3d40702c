package hfhub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/hfhub/hubtest"
)

const (
	testToken = "hf_TestTokenAbcdefghijklmnop1234"
	testPath  = "tinker://run-1/sampler_weights/0001"
)

// adapterDir writes an extracted checkpoint like the archive holds.
func adapterDir(t *testing.T, weights int) string {
	t.Helper()
	dir := t.TempDir()
	data := make([]byte, weights)
	for i := range data {
		data[i] = byte(i * 7)
	}
	files := map[string][]byte{
		"adapter_config.json":       []byte(`{"r": 8, "lora_alpha": 32, "lora_dropout": 1e-05, "base_model_name_or_path": null, "target_modules": ["q_proj"]}`),
		"adapter_model.safetensors": data,
		"checkpoint_complete":       nil,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loopbackHub starts a loopback Hub accepting testToken.
func loopbackHub(t *testing.T) *hubtest.Server {
	hub := hubtest.New(testToken)
	t.Cleanup(hub.Close)
	return hub
}

// clientOf is a Hub pointed at hub with the given token.
func clientOf(hub *hubtest.Server, token string) *Hub {
	return &Hub{Endpoint: hub.URL(), Token: token, TokenSource: "HF_TOKEN", Client: hub.Client(), retryWait: 1}
}

func qwen() AdapterInfo {
	rank, yes, no := 8, true, false
	return AdapterInfo{BaseModel: "Qwen/Qwen3-8B", LoraRank: &rank, TrainAttn: &yes, TrainMLP: &yes, TrainUnembed: &no}
}

func TestPushDerivesRepoAndUploadsAdapter(t *testing.T) {
	hub := loopbackHub(t)
	dir := adapterDir(t, 100_000)
	var last, total int64
	res, err := clientOf(hub, testToken).Push(context.Background(), PushOptions{
		Dir: dir, TinkerPath: testPath, Adapter: qwen(),
		Progress: func(s, tot int64) { last, total = s, tot },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.RepoID != "tinker-Qwen3-8B-run-1" || res.FullRepoID != "alice/tinker-Qwen3-8B-run-1" || res.Revision != "sampler_weights-0001" {
		t.Fatalf("result %+v", res)
	}
	if res.RepoURL != hub.URL()+"/alice/tinker-Qwen3-8B-run-1" || !strings.HasSuffix(res.CommitURL, "/commit/"+res.CommitOID) {
		t.Fatalf("urls %+v", res)
	}
	want := []string{"README.md", "adapter_config.json", "adapter_model.safetensors"}
	if !slices.Equal(res.Uploaded, want) {
		t.Fatalf("uploaded %v, want %v", res.Uploaded, want)
	}
	if private, _ := hub.Private(res.FullRepoID); !private {
		t.Error("repo created public without Public")
	}
	files := hub.Files(res.FullRepoID, "sampler_weights-0001")
	if _, ok := files["checkpoint_complete"]; ok {
		t.Error("checkpoint_complete uploaded")
	}
	if c := hub.Commits(); len(c) != 1 || c[0].Summary != "Upload Tinker checkpoint "+testPath {
		t.Fatalf("commits %+v", c)
	}
	if _, ok := hub.Files(res.FullRepoID, "main")["README.md"]; ok {
		t.Error("commit went to main, not the derived branch")
	}
	weights, _ := os.ReadFile(filepath.Join(dir, "adapter_model.safetensors"))
	if string(files["adapter_model.safetensors"]) != string(weights) || !hub.HasObject(weights) {
		t.Error("weights not stored through LFS")
	}
	cfg := string(files["adapter_config.json"])
	wantCfg := "{\n  \"base_model_name_or_path\": \"Qwen/Qwen3-8B\",\n  \"lora_alpha\": 32,\n  \"lora_dropout\": 1e-05,\n  \"r\": 8,\n  \"target_modules\": [\n    \"q_proj\"\n  ]\n}\n"
	if cfg != wantCfg {
		t.Errorf("adapter_config.json =\n%s\nwant\n%s", cfg, wantCfg)
	}
	card := string(files["README.md"])
	for _, s := range []string{"base_model: Qwen/Qwen3-8B\n", "library_name: peft\n", "- lora\n", "- base_model:adapter:Qwen/Qwen3-8B\n", "tinker_path: " + testPath + "\n", "- LoRA rank: 8\n", "attention yes, MLP yes, unembedding no"} {
		if !strings.Contains(card, s) {
			t.Errorf("model card lacks %q:\n%s", s, card)
		}
	}
	var sum int64
	for _, c := range files {
		sum += int64(len(c))
	}
	sum -= int64(len(files[".gitattributes"]))
	if last != sum || total != sum {
		t.Errorf("progress ended at %d/%d, want %d/%d", last, total, sum, sum)
	}
}

func TestPushNamedRepoOnMainAndPatterns(t *testing.T) {
	hub := loopbackHub(t)
	dir := adapterDir(t, 1000)
	os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
	os.WriteFile(filepath.Join(dir, "logs", "train.txt"), []byte("x"), 0o644)
	res, err := clientOf(hub, testToken).Push(context.Background(), PushOptions{
		Dir: dir, TinkerPath: testPath, RepoID: "alice/mine", Public: true, NoModelCard: true,
		IgnorePatterns: []string{"logs/"}, CommitMessage: "first",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != "" || !slices.Equal(res.Uploaded, []string{"adapter_config.json", "adapter_model.safetensors"}) {
		t.Fatalf("result %+v", res)
	}
	if private, _ := hub.Private("alice/mine"); private || hub.Commits()[0].Branch != "main" || hub.Commits()[0].Summary != "first" {
		t.Fatalf("repo/commit wrong: %+v", hub.Commits())
	}
	// With allow patterns, checkpoint_complete is no longer left out.
	res, err = clientOf(hub, testToken).Push(context.Background(), PushOptions{
		Dir: dir, TinkerPath: testPath, RepoID: "alice/mine", NoModelCard: true, AllowPatterns: []string{"checkpoint_*", "*.txt"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Uploaded, []string{"checkpoint_complete", "logs/train.txt"}) {
		t.Fatalf("allow patterns uploaded %v", res.Uploaded)
	}
}

func TestPushNotLoggedIn(t *testing.T) {
	hub := loopbackHub(t)
	h := clientOf(hub, "")
	if _, err := h.Whoami(context.Background()); !errors.Is(err, ErrNotLoggedIn) {
		t.Fatalf("Whoami without token: %v", err)
	}
	_, err := h.Push(context.Background(), PushOptions{Dir: adapterDir(t, 10), TinkerPath: testPath})
	if !errors.Is(err, ErrNotLoggedIn) {
		t.Fatalf("Push without token: %v", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "hf auth login") || !strings.Contains(msg, "HF_TOKEN") {
		t.Errorf("message %q should be one line naming `hf auth login` and HF_TOKEN", msg)
	}
	if hub.RepoCount() != 0 {
		t.Error("a repo was created")
	}
}

func TestPushInvalidToken(t *testing.T) {
	hub := loopbackHub(t)
	bad := "hf_WrongTokenZyxwvutsrqponm9876"
	for _, source := range []string{"HF_TOKEN", "/home/u/.cache/huggingface/token"} {
		h := clientOf(hub, bad)
		h.TokenSource = source
		_, err := h.Push(context.Background(), PushOptions{Dir: adapterDir(t, 10), TinkerPath: testPath})
		var api *APIError
		if !errors.As(err, &api) || api.Status != 401 || api.Op != "whoami" {
			t.Fatalf("%s: want a 401 from whoami, got %v", source, err)
		}
		if !strings.Contains(err.Error(), "Invalid credentials") || !strings.Contains(err.Error(), source) || strings.Contains(err.Error(), bad) {
			t.Errorf("%s: message %q", source, err)
		}
	}
	if hub.RepoCount() != 0 {
		t.Error("a repo was created")
	}
}

func TestPushExistingRepo(t *testing.T) {
	hub := loopbackHub(t)
	hub.AddRepo("alice/kept", map[string]string{"notes.txt": "keep me"})
	opts := PushOptions{Dir: adapterDir(t, 5000), TinkerPath: testPath, Adapter: qwen(), RepoID: "alice/kept"}
	if _, err := clientOf(hub, testToken).Push(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if got := string(hub.Files("alice/kept", "main")["notes.txt"]); got != "keep me" {
		t.Errorf("existing file changed: %q", got)
	}
	// The same push again: the README names this checkpoint, so the guard
	// lets it through, and nothing changed, so no commit is made.
	opts.Dir = adapterDir(t, 5000)
	res, err := clientOf(hub, testToken).Push(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Uploaded) != 0 || len(res.Unchanged) != 3 || res.CommitURL != "" || len(hub.Commits()) != 1 || hub.Puts() != 1 {
		t.Fatalf("second push: %+v, commits %d, puts %d", res, len(hub.Commits()), hub.Puts())
	}
}

func TestPushRefusesRepoOfAnotherCheckpoint(t *testing.T) {
	hub := loopbackHub(t)
	other := "tinker://run-0/sampler_weights/0042"
	hub.AddRepo("alice/taken", map[string]string{"README.md": "# x\n\n```\n" + other + "\n```\n"})
	opts := PushOptions{Dir: adapterDir(t, 10), TinkerPath: testPath, RepoID: "taken"}
	_, err := clientOf(hub, testToken).Push(context.Background(), opts)
	var mm *CheckpointMismatchError
	if !errors.As(err, &mm) || mm.Found != other || mm.Expected != testPath || mm.RepoID != "alice/taken" {
		t.Fatalf("want a mismatch error, got %v", err)
	}
	if len(hub.Commits()) != 0 {
		t.Fatal("committed despite the guard")
	}
	opts.Force = true
	if _, err := clientOf(hub, testToken).Push(context.Background(), opts); err != nil {
		t.Fatalf("forced push: %v", err)
	}
	if len(hub.Commits()) != 1 {
		t.Fatal("forced push made no commit")
	}
}

func TestPushRetriesInterruptedUpload(t *testing.T) {
	hub := loopbackHub(t)
	hub.FailPuts(2)
	dir := adapterDir(t, 300_000)
	var sent []int64
	res, err := clientOf(hub, testToken).Push(context.Background(), PushOptions{
		Dir: dir, TinkerPath: testPath, RepoID: "alice/r", Progress: func(s, _ int64) { sent = append(sent, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if hub.Puts() != 3 || len(hub.Commits()) != 1 || !slices.Contains(res.Uploaded, "adapter_model.safetensors") {
		t.Fatalf("puts %d, commits %d, result %+v", hub.Puts(), len(hub.Commits()), res)
	}
	if len(sent) == 0 || sent[len(sent)-1] < 300_000 {
		t.Errorf("progress ended at %v", sent[len(sent)-1:])
	}
	// Each failure hands back its bytes, so the count dips, then completes.
	if !slices.ContainsFunc(sent[1:], func(s int64) bool { return s < slices.Max(sent[:len(sent)/2]) }) {
		t.Errorf("progress never rewound after a failed attempt: %v", sent)
	}

	hub.FailPuts(retryAttempts)
	_, err = clientOf(hub, testToken).Push(context.Background(), PushOptions{Dir: adapterDir(t, 300_001), TinkerPath: testPath, RepoID: "alice/r2"})
	if err == nil || !strings.Contains(err.Error(), "upload") {
		t.Fatalf("upload failing every time: %v", err)
	}
}

func TestTokenNeverInErrorsOrProgress(t *testing.T) {
	hub := loopbackHub(t)
	hub.EchoToken(true)
	var progressText []string
	progress := func(s, tot int64) { progressText = append(progressText, fmt.Sprintf("%d/%d", s, tot)) }
	_, err := clientOf(hub, testToken).Push(context.Background(), PushOptions{Dir: adapterDir(t, 2000), TinkerPath: testPath, RepoID: "alice/e", Progress: progress})
	if err == nil || !strings.Contains(err.Error(), "commit refused") || !strings.Contains(err.Error(), redacted) {
		t.Fatalf("want the commit error, redacted: %v", err)
	}
	// A refused token, echoed back by the server.
	other := "hf_OtherTokenQwertyuiopasdfgh55"
	_, err2 := clientOf(hub, other).Whoami(context.Background())
	for _, e := range []error{err, err2} {
		for _, secret := range []string{testToken, other} {
			for x := e; x != nil; x = errors.Unwrap(x) {
				if strings.Contains(x.Error(), secret) || strings.Contains(fmt.Sprintf("%+v", x), secret) {
					t.Errorf("token in error: %v", x)
				}
			}
		}
	}
	if len(progressText) == 0 || strings.Contains(strings.Join(progressText, " "), testToken) {
		t.Errorf("progress %v", progressText)
	}
}

func TestPushChecksTheFolder(t *testing.T) {
	h := &Hub{Token: testToken}
	dir := adapterDir(t, 10)
	os.Remove(filepath.Join(dir, "checkpoint_complete"))
	if _, err := h.Push(context.Background(), PushOptions{Dir: dir, TinkerPath: testPath}); !errors.Is(err, ErrIncomplete) {
		t.Errorf("no checkpoint_complete: %v", err)
	}
	os.Remove(filepath.Join(dir, "adapter_model.safetensors"))
	if _, err := h.Push(context.Background(), PushOptions{Dir: dir, TinkerPath: testPath}); !errors.Is(err, ErrNotAdapter) {
		t.Errorf("no weights: %v", err)
	}
	if _, err := h.Push(context.Background(), PushOptions{Dir: dir, TinkerPath: "tinker://x"}); err == nil {
		t.Error("bad tinker path accepted")
	}
}

// A Hub answer is read up to a bound: an endpoint that sends more (here a
// valid but oversized whoami answer) gets a one-line error, not a buffer
// as large as the body.
func TestHubAnswerIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"name":"someone","pad":"`))
		w.Write(bytes.Repeat([]byte("x"), maxAnswer))
		w.Write([]byte(`"}`))
	}))
	t.Cleanup(srv.Close)
	h := &Hub{Endpoint: srv.URL, Token: "hf_test", Client: srv.Client()}
	_, err := h.Whoami(context.Background())
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Whoami over an oversized answer: %v, want a size error", err)
	}
}
