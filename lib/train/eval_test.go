package train

import (
	"fmt"
	"testing"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// colours is Q/A rows asking for the colour of the sky or the grass on
// day from, from+1, ...: the answer depends on one word of the question.
func colours(from, n int) []Conversation {
	out := make([]Conversation, n)
	for i := range out {
		thing, colour := "sky", "Blue."
		if i%2 == 1 {
			thing, colour = "grass", "Green."
		}
		out[i] = Conversation{Where: fmt.Sprintf("data[%d]", i), Messages: []chat.Message{
			{Role: "user", Content: fmt.Sprintf("On day %d, what colour is the %s?", from+i, thing)}, {Role: "assistant", Content: colour}}}
	}
	return out
}

// evaluateOn scores a base model or a sampler checkpoint on rows.
func evaluateOn(t *testing.T, sess *tinkerapi.Session, path string, rows []Conversation) *EvalResult {
	t.Helper()
	m, err := modelref.Resolve(t.Context(), sess, path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Evaluate(t.Context(), sess, EvalOptions{Model: m, Data: rows,
		MaxTokens: 8, NumSamples: 1, Concurrency: DefaultEvalConcurrency, NLL: true})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A held-out Q/A set scores at most 1/6 before SFT and at least 5/6 after
// it, with the learning rate of the published rule (its tiny-model form
// for both tiny models); the references' NLL falls.
func TestEvaluateBeforeAndAfterSFT(t *testing.T) {
	sess := localSession(t, 0)
	held := colours(100, 6)
	for _, base := range []string{models.TinyLlama, models.TinyQwen3} {
		before := evaluateOn(t, sess, base, held)
		// Twenty epochs: since role_colon trains its stop sequence too,
		// ten left tiny-qwen3 near the bar on some seeds.
		seed := int64(3)
		o := SFTOptions{BaseModel: base, Data: colours(0, 16), Lora: tinkerapi.DefaultLoraConfig(), TrainOn: chat.TrainAllAssistant,
			BatchSize: 4, Epochs: 20, Schedule: "constant"}
		o.Lora.Rank, o.Lora.Seed = 8, &seed
		run, err := SFT(t.Context(), sess, o)
		if err != nil {
			t.Fatal(err)
		}
		after := evaluateOn(t, sess, run.SamplerPath, held)
		t.Logf("%s: score %.3f -> %.3f, reference NLL %.3f -> %.3f; after: %q", base, before.Score, after.Score, *before.NLL, *after.NLL, after.Rows[0].Completion)
		if before.Score > 1.0/6 || after.Score < 5.0/6 || !(*after.NLL < *before.NLL) {
			t.Errorf("%s: held-out score %.3f before, %.3f after SFT (NLL %.3f -> %.3f); want <= 1/6, >= 5/6 and falling", base, before.Score, after.Score, *before.NLL, *after.NLL)
		}
	}
}
