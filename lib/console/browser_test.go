package console

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/train"
)

// gate holds a training loop after each step until the test allows more.
type gate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	allowed int
}

func newGate(n int) *gate {
	g := &gate{allowed: n}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) allow(n int) {
	g.mu.Lock()
	g.allowed = n
	g.mu.Unlock()
	g.cond.Broadcast()
}

func (g *gate) onStep(m train.Record, _ int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for m.StepNumber() >= g.allowed {
		g.cond.Wait()
	}
}

// chromium finds Debian's chromium; make test installs it (mk/console.mk).
func chromium(t *testing.T) string {
	p, err := exec.LookPath("chromium")
	if err == nil {
		return p
	}
	if os.Getenv("TINKER_SKIP_BROWSER") != "" {
		t.Skip("TINKER_SKIP_BROWSER is set: the console's browser test is left out")
	}
	t.Fatal("the console's browser test needs chromium: apt-get install chromium (make test installs it as root), or set TINKER_SKIP_BROWSER=1 to leave it out")
	return ""
}

// artifacts is where the screenshots go: $TINKER_TEST_ARTIFACTS/console,
// or the test's temporary directory.
func artifacts(t *testing.T) string {
	dir := t.TempDir()
	if a := os.Getenv("TINKER_TEST_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "console")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// newChrome starts headless Chromium with a fresh profile and the
// background services off (a closed network would be flooded otherwise).
func newChrome(t *testing.T) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTime(); cancel(); cancelAlloc() })
	// Start the browser now, on this context: a browser started by a
	// step's shorter-lived context would end with that step.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// shot saves a full-page screenshot as name.png.
func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// do runs browser actions with a bound of 20 s; on failure it saves a
// screenshot and shows the page's text.
func do(t *testing.T, ctx context.Context, dir string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		shot(t, ctx, dir, "failed")
		text, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%v; the page (failed.png) says:\n%s", err, text)
	}
}

// eval evaluates a JavaScript expression, awaiting a promise.
func eval[T any](ctx context.Context, expr string) (T, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// waitFor polls expr until it evaluates to want.
func waitFor(t *testing.T, ctx context.Context, expr, want string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		if got, err = eval[string](ctx, expr); err == nil && got == want {
			return
		}
	}
	t.Fatalf("%s is %q, want %q", expr, got, want)
}

// waitAtLeast polls a number-valued expr until it is at least min.
func waitAtLeast(t *testing.T, ctx context.Context, expr string, min int) int {
	t.Helper()
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		got, err = eval[string](ctx, expr)
		if n, _ := strconv.Atoi(got); err == nil && n >= min {
			return n
		}
	}
	t.Fatalf("%s is %q, want at least %d", expr, got, min)
	return 0
}

// bodyText is the page's visible text.
func bodyText(t *testing.T, ctx context.Context) string {
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var sftRows = func() []train.Conversation {
	out := make([]train.Conversation, 4)
	for i := range out {
		out[i] = train.Conversation{Where: fmt.Sprintf("data[%d]", i), Messages: []chat.Message{
			{Role: "user", Content: fmt.Sprintf("What is %d plus one?", i)}, {Role: "assistant", Content: fmt.Sprintf("%d.", i+1)}}}
	}
	return out
}()

// The console in headless Chromium against tinker serve's setup with SFT
// running on tiny-llama: sign-in, the loss curve gaining points as steps
// finish (with no reload), publish and delete of a checkpoint, the log
// directory, the playground, and refusals without a cookie or CSRF token.
func TestConsoleInBrowser(t *testing.T) {
	ctx := newChrome(t)
	dir := artifacts(t)
	logs := t.TempDir()
	f := startServer(t, "", logs)
	sess, err := f.apiClient(t, aliceKey).CreateSession(t.Context(), tinkerapi.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })

	// SFT: 4 rows in batches of 2 for 4 epochs = 8 steps, state saved
	// every 2 steps; held after step 3 until the test lets it go on.
	g := newGate(3)
	t.Cleanup(func() { g.allow(1 << 30) })
	seed := int64(7)
	o := train.SFTOptions{BaseModel: "tinker-local/tiny-llama", Data: sftRows, Lora: tinkerapi.DefaultLoraConfig(), TrainOn: chat.TrainAllAssistant,
		BatchSize: 2, Epochs: 4, LearningRate: 1e-3, Schedule: "linear"}
	o.Lora.Rank, o.Lora.Seed = 4, &seed
	o.LogDir, o.SaveEvery, o.OnStep = filepath.Join(logs, "sft-demo"), 2, g.onStep
	done := make(chan *train.SFTResult, 1)
	go func() {
		res, err := train.SFT(context.Background(), sess, o)
		if err != nil {
			t.Errorf("SFT: %v", err)
		}
		done <- res
	}()
	run := waitRun(t, f)
	runURL := f.URL + "/console/runs/" + run

	// Without a cookie: the sign-in page, and nothing of the run.
	do(t, ctx, dir, chromedp.Navigate(runURL))
	if s := bodyText(t, ctx); !strings.Contains(s, "Sign in first") || strings.Contains(s, "tiny-llama") {
		t.Fatalf("a run page without the cookie shows: %q", s)
	}
	do(t, ctx, dir, chromedp.Navigate(f.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#api_key")))
	shot(t, ctx, dir, "1-signin")
	if s := bodyText(t, ctx); strings.Contains(s, "tiny-llama") || strings.Contains(s, run) {
		t.Fatalf("the sign-in page shows data: %q", s)
	}

	// Sign in: the runs list.
	do(t, ctx, dir, chromedp.SendKeys(chromedp.CSS("#api_key"), aliceKey), chromedp.Submit(chromedp.CSS("#api_key")),
		chromedp.WaitVisible(chromedp.CSS("#runs")))
	// The table refreshes itself: the run's loss sparkline appears once a
	// step has finished.
	waitFor(t, ctx, `String(document.querySelector("#runs td.spark svg polyline") !== null)`, "true")
	shot(t, ctx, dir, "2-runs")
	if s := bodyText(t, ctx); !strings.Contains(s, run) || !strings.Contains(s, "tiny-llama") || !strings.Contains(s, "training") {
		t.Fatalf("runs page: %q", s)
	}
	if cookie, err := eval[string](ctx, "document.cookie"); err != nil || cookie != "" {
		t.Fatalf("the session cookie is readable by scripts (%q, %v): it must be HttpOnly", cookie, err)
	}

	// The run: 3 points, then 6 as steps finish, with no reload.
	loss := `(document.querySelector('figure[data-title="loss"]') || {dataset: {}}).dataset.points || ""`
	do(t, ctx, dir, chromedp.Click(chromedp.CSS("#runs a")), chromedp.WaitVisible(chromedp.CSS(".charts")))
	// The loop may send the next step before it is held, so "at least".
	n := waitAtLeast(t, ctx, loss, 3)
	eval[string](ctx, `window.notReloaded = "yes"`)
	g.allow(6)
	waitAtLeast(t, ctx, loss, max(6, n+1))
	waitFor(t, ctx, `window.notReloaded || ""`, "yes")
	shot(t, ctx, dir, "3-run")

	// Publish the first saved state: its row says public, and so does the API.
	ckpt, err := eval[string](ctx, `document.querySelector('tr[data-checkpoint^="weights/"]').dataset.checkpoint`)
	if err != nil {
		t.Fatal(err)
	}
	row := `tr[data-checkpoint="` + ckpt + `"]`
	do(t, ctx, dir, chromedp.Click(chromedp.CSS(row+" button.publish")), chromedp.WaitVisible(chromedp.CSS(".notice")))
	waitFor(t, ctx, `document.querySelector('`+row+` td.public').innerText.trim()`, "public")
	if !public(t, f, aliceKey, run, ckpt) {
		t.Fatal("the page says public; the API does not")
	}
	shot(t, ctx, dir, "4-published")

	// A POST without the CSRF token, from the signed-in page itself, is refused.
	if status, err := eval[int](ctx, `fetch(location.pathname + "/checkpoints/`+ckpt+`/unpublish", {method: "POST"}).then(r => r.status)`); err != nil || status != 403 {
		t.Fatalf("POST without a CSRF token: %d %v, want 403", status, err)
	}
	if !public(t, f, aliceKey, run, ckpt) {
		t.Fatal("a POST without a token unpublished the checkpoint")
	}

	// Delete, with a confirmation page first.
	do(t, ctx, dir, chromedp.Click(chromedp.CSS(row+" a.danger")), chromedp.WaitVisible(chromedp.CSS("#confirm-delete")))
	shot(t, ctx, dir, "5-confirm-delete")
	do(t, ctx, dir, chromedp.Click(chromedp.CSS("#confirm-delete")), chromedp.WaitVisible(chromedp.CSS(".notice")))
	waitFor(t, ctx, `String(document.querySelector('`+row+`') === null)`, "true")

	// Training ends; its log directory shows all 8 steps.
	g.allow(1 << 30)
	res := <-done
	if res == nil || res.SamplerPath == "" {
		t.Fatal("SFT gave no sampler checkpoint")
	}
	do(t, ctx, dir, chromedp.Navigate(f.URL+"/console/logs"), chromedp.Click(chromedp.CSS(".logs a")),
		chromedp.WaitVisible(chromedp.CSS("#records")))
	waitFor(t, ctx, loss, "8")
	shot(t, ctx, dir, "6-log")

	// The playground samples the sampler checkpoint: the tokens it shows
	// are those ops.Sample gets at temperature 0.
	msg := "What is 2 plus one?"
	do(t, ctx, dir, chromedp.Navigate(f.URL+"/console/playground"), chromedp.WaitVisible(chromedp.CSS("#model")),
		chromedp.SetValue(chromedp.CSS("#model"), res.SamplerPath), chromedp.SetValue(chromedp.CSS("#message"), msg),
		chromedp.SetValue(chromedp.CSS("#temperature"), "0"), chromedp.SetValue(chromedp.CSS("#max_tokens"), "6"),
		chromedp.Click(chromedp.CSS("#sample")), chromedp.WaitVisible(chromedp.CSS("#result")))
	shot(t, ctx, dir, "7-playground")
	shown, err := eval[string](ctx, `[...document.querySelectorAll("#token-table tbody tr td:nth-child(2)")].map(td => td.innerText).join(" ")`)
	if err != nil {
		t.Fatal(err)
	}
	req := tinkerapi.NewSampleRequest(nil)
	req.MaxTokens, req.Temperature = 6, 0
	want, err := ops.Sample(t.Context(), sess, nil, ops.SampleOptions{Model: res.SamplerPath, Messages: []chat.Message{{Role: "user", Content: msg}}, Request: req})
	if err != nil {
		t.Fatal(err)
	}
	if ids := tokenList(want.Sequences[0].Tokens); shown != ids || shown == "" {
		t.Fatalf("playground tokens %q, ops.Sample %q", shown, ids)
	}

	// Sign out: the run page is refused again.
	do(t, ctx, dir, chromedp.Click(chromedp.CSS(".signout button")), chromedp.WaitVisible(chromedp.CSS("#api_key")),
		chromedp.Navigate(runURL))
	if s := bodyText(t, ctx); !strings.Contains(s, "Sign in first") {
		t.Fatalf("after sign-out the run page shows: %q", s)
	}
}

func tokenList(toks []int) string {
	s := make([]string, len(toks))
	for i, x := range toks {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " ")
}

// waitRun waits for alice's training run to exist and returns its id.
func waitRun(t *testing.T, f *fixture) string {
	c := f.apiClient(t, aliceKey)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, err := c.ListTrainingRuns(t.Context(), 1, 0, ""); err == nil && len(r.TrainingRuns) > 0 {
			return r.TrainingRuns[0].TrainingRunID
		}
	}
	t.Fatal("no training run appeared")
	return ""
}
