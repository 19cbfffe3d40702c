package batch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/chat"
)

func TestReadPrompts(t *testing.T) {
	in := `"plain text"

[256, 65, 66]
[{"role": "user", "content": "hi"}]
{"id": "q7", "prompt": "with id", "answer": "kept aside"}
{"id": 12, "tokens": [65]}
{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}
{"text": "text key"}
`
	ps, err := ReadPrompts(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Prompt{
		{ID: "1", Text: ptr("plain text")},
		{ID: "3", Tokens: []int{256, 65, 66}},
		{ID: "4", Messages: []chat.Message{{Role: "user", Content: "hi"}}},
		{ID: "q7", Text: ptr("with id")},
		{ID: "12", Tokens: []int{65}},
		{ID: "7", Messages: []chat.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}},
		{ID: "8", Text: ptr("text key")},
	}
	if len(ps) != len(want) {
		t.Fatalf("%d prompts: %+v", len(ps), ps)
	}
	for i := range want {
		if promptsHash(ps[i:i+1]) != promptsHash(want[i:i+1]) {
			t.Errorf("prompt %d: %+v, want %+v", i, ps[i], want[i])
		}
	}

	for _, tc := range []struct{ in, want string }{
		{`"a"` + "\n" + `{"id": 1, "prompt": "b"}`, `line 2: id "1" is already used on line 1`},
		{`{"prompt": "a", "tokens": [1]}`, `line 1: give exactly one of "prompt", "tokens" and "messages"`},
		{`{"id": "x"}`, `line 1: give exactly one`},
		{`[]`, "line 1: the list is empty"},
		{`[{"content": "no role"}]`, "line 1: message 1 has no role"},
		{`""`, "line 1: the text is empty"},
		{`42`, "line 1: want a JSON string, list or object"},
		{`{"tokens": "abc"}`, `"tokens" must be a list of token ids`},
		{`{"id": true, "prompt": "a"}`, `"id" must be`},
		{"\n\n", "has no prompts"},
	} {
		_, err := ReadPrompts(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		edit func(j *Job)
		want string
	}{
		{func(j *Job) { j.Models = nil }, "no models"},
		{func(j *Job) { j.Models = []string{tinyLlama, tinyLlama} }, "listed twice"},
		{func(j *Job) { j.Prompts = append(j.Prompts, Prompt{ID: "text", Tokens: []int{1}}) }, `prompt id "text" is used twice`},
		{func(j *Job) { j.Prompts = []Prompt{{ID: "a"}} }, "exactly one of text, tokens and messages"},
		{func(j *Job) { j.Params.MaxTokens = 0 }, "max_tokens"},
		{func(j *Job) { j.Params.TopP = 0 }, "top_p"},
		{func(j *Job) { j.Params.TopK = 0 }, "top_k"},
		{func(j *Job) { j.Params.StopStrings, j.Params.StopTokens = []string{"x"}, []int{1} }, "not both"},
		{func(j *Job) { j.Output = "" }, "no output"},
	} {
		j := testJob(t.TempDir())
		tc.edit(&j)
		if _, err := Run(context.Background(), nil, j, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}

func TestRowSeed(t *testing.T) {
	base := RowSeed(7, "m", "p", 0)
	if base != RowSeed(7, "m", "p", 0) {
		t.Fatal("not deterministic")
	}
	for _, other := range []int64{RowSeed(8, "m", "p", 0), RowSeed(7, "n", "p", 0), RowSeed(7, "m", "q", 0),
		RowSeed(7, "m", "p", 1), RowSeed(7, "mp", "", 0)} {
		if other == base {
			t.Errorf("seed %d repeats", other)
		}
	}
	if RowSeed(7, "a", "bc", 0) == RowSeed(7, "ab", "c", 0) {
		t.Error("identity parts run together")
	}
	if base < 0 || base >= 1<<53 {
		t.Errorf("seed %d out of range", base)
	}
}

func TestLimiter(t *testing.T) {
	l := newLimiter(8)
	ctx := context.Background()
	for range 8 {
		if err := l.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l.pushBack()
	l.pushBack() // same overload: no second cut before a row completes
	if l.limit != 4 {
		t.Fatalf("limit %d after one overload", l.limit)
	}
	l.release(true)
	l.pushBack()
	if l.limit != 2 {
		t.Fatalf("limit %d after a second overload", l.limit)
	}
	for range 7 {
		l.release(true)
	}
	// 7 rows without push-back at a bound of 2: raised by one per bound's worth.
	if l.limit != 4 {
		t.Fatalf("limit %d after recovery", l.limit)
	}
	if cuts, lowest := l.stats(); cuts != 2 || lowest != 2 {
		t.Errorf("stats %d %d", cuts, lowest)
	}
	cctx, cancel := context.WithCancel(ctx)
	for range 4 {
		if err := l.acquire(cctx); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error)
	go func() { done <- l.acquire(cctx) }()
	cancel()
	if err := <-done; err == nil {
		t.Error("acquire past the bound succeeded after cancel")
	}
}

func TestReadRowsSkipsDuplicatesAndTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	data := `{"model":"m","prompt_id":"a","sample":0,"text":"x","tokens":[1],"stop_reason":"stop"}
{"model":"m","prompt_id":"a","sample":0,"text":"dup","tokens":[2],"stop_reason":"stop"}
{"model":"m","prompt_id":"b","sample":1,"text":"y","tokens":[3],"stop_reason":"length"}
{"model":"m","prompt_id":"c"`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadRows(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Text != "x" || rows[1].PromptID != "b" || rows[1].Sample != 1 {
		t.Fatalf("rows %+v", rows)
	}
	if err := os.WriteFile(path, []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRows(path); err == nil {
		t.Fatal("a line that is not a row was accepted")
	}
}
