package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// conformanceCase is one case of testdata/conformance.json: a conversation,
// a renderer and what the cookbook's renderer makes of it, written by hand
// from the cookbook's renderers and tests. Expected tokens are given as
// the cookbook's chunks: each chunk's text is encoded on its own (the
// third element "split" encodes special-token spellings as text, as Qwen3
// encodes content), so the chunk boundaries are part of the expectation.
type conformanceCase struct {
	Name        string            `json:"name"`
	Renderer    string            `json:"renderer"`
	Tokenizer   string            `json:"tokenizer"`
	Messages    []Message         `json:"messages"`
	TrainOn     string            `json:"train_on"`
	Want        []json.RawMessage `json:"want"`   // [text, weight(, "split")]
	Prompt      []string          `json:"prompt"` // generation prompt chunks
	Tokens      int               `json:"tokens"` // total token count, when pinned
	Warning     bool              `json:"warning"`
	StopTokens  []string          `json:"stop_tokens"`
	StopStrings []string          `json:"stop_strings"`
	Error       string            `json:"error"`
}

func loadConformance(t *testing.T) []conformanceCase {
	data, err := os.ReadFile(filepath.Join("testdata", "conformance.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []conformanceCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("conformance.json: %v", err)
	}
	return cases
}

func TestConformance(t *testing.T) {
	for _, c := range loadConformance(t) {
		t.Run(c.Name, func(t *testing.T) {
			tk := loadTok(t, c.Tokenizer)
			r, err := New(c.Renderer, tk)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.Error != "":
				checkError(t, r, c)
			case c.TrainOn != "":
				checkTraining(t, r, c)
			default:
				checkPrompt(t, r, c)
			}
		})
	}
}

func checkError(t *testing.T, r Renderer, c conformanceCase) {
	var err error
	if c.TrainOn != "" {
		_, err = r.RenderForTraining(c.Messages, c.TrainOn)
	} else {
		_, err = r.Render(c.Messages)
	}
	if err == nil || !strings.Contains(err.Error(), c.Error) {
		t.Fatalf("error = %v, want one containing %q", err, c.Error)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
}

func checkTraining(t *testing.T, r Renderer, c conformanceCase) {
	tk := r.(renderer).tok
	var want []int
	var weights []float32
	for _, raw := range c.Want {
		var chunk []any
		if err := json.Unmarshal(raw, &chunk); err != nil || len(chunk) < 2 {
			t.Fatalf("bad chunk %s", raw)
		}
		text := chunk[0].(string)
		ids := tk.Encode(text, false)
		if len(chunk) == 3 && chunk[2] == "split" {
			ids = tk.EncodeSplitSpecial(text)
		}
		want = append(want, ids...)
		for range ids {
			weights = append(weights, float32(chunk[1].(float64)))
		}
	}
	got, err := r.RenderForTraining(c.Messages, c.TrainOn)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Tokens, want) {
		t.Fatalf("tokens\n got %v %q\nwant %v %q", got.Tokens, tk.Decode(got.Tokens, false), want, tk.Decode(want, false))
	}
	if !slices.Equal(got.Weights, weights) {
		dec := func(ids []int) string { return tk.Decode(ids, false) }
		t.Fatalf("weights\n got %v (trains %q)\nwant %v", got.Weights, trainedText(t, got, dec), weights)
	}
	if c.Tokens > 0 && len(got.Tokens) != c.Tokens {
		t.Errorf("%d tokens, want %d", len(got.Tokens), c.Tokens)
	}
	if (got.Warning != "") != c.Warning {
		t.Errorf("warning = %q, want one: %v", got.Warning, c.Warning)
	}
}

func checkPrompt(t *testing.T, r Renderer, c conformanceCase) {
	tk := r.(renderer).tok
	var want []int
	for _, text := range c.Prompt {
		want = append(want, tk.Encode(text, false)...)
	}
	got, err := r.Render(c.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Tokens, want) {
		t.Fatalf("tokens\n got %v %q\nwant %v %q", got.Tokens, got.Text, want, tk.Decode(want, false))
	}
	var stops []int
	for _, s := range c.StopTokens {
		id, ok := tk.TokenID(s)
		if !ok {
			t.Fatalf("no token %s", s)
		}
		stops = append(stops, id)
	}
	if !slices.Equal(got.StopTokens, stops) || !slices.Equal(got.StopStrings, c.StopStrings) {
		t.Errorf("stops = %v %q, want %v %q", got.StopTokens, got.StopStrings, stops, c.StopStrings)
	}
}
