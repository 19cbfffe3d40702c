package chat

import (
	"slices"
	"strings"
	"testing"
)

// trainedText decodes the weight-1 tokens of a training render.
func trainedText(t *testing.T, tr Training, decode func([]int) string) []string {
	t.Helper()
	var out []string
	var run []int
	for i, w := range tr.Weights {
		if w == 1 {
			run = append(run, tr.Tokens[i])
			continue
		}
		if len(run) > 0 {
			out = append(out, decode(run))
			run = nil
		}
	}
	if len(run) > 0 {
		out = append(out, decode(run))
	}
	return out
}

func TestRenderForTraining(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "Be nice."}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello"},
		{Role: "user", Content: "Bye"}, {Role: "assistant", Content: "Ciao"}}
	for _, c := range []struct {
		tok, renderer, rule string
		want                []string
	}{
		// role_colon trains the whole stop sequence "\n\nUser:" after the
		// last answer (item 4 of issue 28).
		{"llama3_1", "role_colon", TrainAllAssistant, []string{" Hello\n\n", " Ciao\n\nUser:"}},
		{"llama3_1", "role_colon", TrainLastAssistant, []string{" Ciao\n\nUser:"}},
		{"llama3_1", "llama3", TrainAllAssistant, []string{"Hello<|eot_id|>", "Ciao<|eot_id|>"}},
		// No "\n" after the final <|im_end|> (item 5).
		{"qwen3", "qwen3_disable_thinking", TrainLastAssistant, []string{"Ciao<|im_end|>"}},
		{"qwen3", "qwen3", TrainLastAssistant, []string{"<think>\n\n</think>\n\nCiao<|im_end|>"}},
	} {
		tk := loadTok(t, c.tok)
		r, err := New(c.renderer, tk)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := r.RenderForTraining(msgs, c.rule)
		if err != nil {
			t.Fatalf("%s %s: %v", c.renderer, c.rule, err)
		}
		if len(tr.Tokens) != len(tr.Weights) {
			t.Fatalf("%d tokens, %d weights", len(tr.Tokens), len(tr.Weights))
		}
		got := trainedText(t, tr, func(ids []int) string { return tk.Decode(ids, false) })
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s trains on %q, want %q", c.renderer, c.rule, got, c.want)
		}
		// The context before the last answer encodes as render()'s prompt.
		p, err := r.Render(msgs[:4])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tr.Tokens[:len(p.Tokens)], p.Tokens) {
			t.Errorf("%s: the training tokens do not start with the prompt's", c.renderer)
		}
	}
	tk := loadTok(t, "llama3_1")
	r, _ := New("role_colon", tk)
	all, err := r.RenderForTraining(msgs, TrainAllMessages)
	if err != nil {
		t.Fatal(err)
	}
	// all_messages trains message bodies, not the "User:" headers.
	got := trainedText(t, all, func(ids []int) string { return tk.Decode(ids, false) })
	want := []string{" Be nice.\n\n", " Hi\n\n", " Hello\n\n", " Bye\n\n", " Ciao\n\nUser:"}
	if !slices.Equal(got, want) {
		t.Errorf("all_messages trains %q, want %q", got, want)
	}
	if _, err := r.RenderForTraining(msgs, "some"); err == nil || !strings.Contains(err.Error(), "unknown train_on") {
		t.Errorf("bad rule: %v", err)
	}
}
