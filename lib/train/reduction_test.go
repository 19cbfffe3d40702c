package train

import (
	"context"
	"math"
	"testing"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Under "mean" each example's weights sum to 1 (the cookbook's
// conversation_to_datum default); under "none" they stay 0/1 on the same
// positions; "sum" is "none"; anything else is refused.
func TestReductionWeights(t *testing.T) {
	r, err := modelref.Renderer(context.Background(), "tinker-local/tiny-llama", "")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []chat.Message{{Role: "user", Content: "Sky?"}, {Role: "assistant", Content: "Blue, mostly."}}
	mean, err := ConversationDatum(r, msgs, DatumOptions{TrainOn: chat.TrainAllAssistant, Reduction: ReductionMean})
	if err != nil {
		t.Fatal(err)
	}
	none, err := ConversationDatum(r, msgs, DatumOptions{TrainOn: chat.TrainAllAssistant, Reduction: ReductionNone})
	if err != nil {
		t.Fatal(err)
	}
	if got := Weight(mean); math.Abs(got-1) > 1e-6 {
		t.Errorf("mean: weights sum to %v, want 1", got)
	}
	n := Weight(none)
	if n < 2 {
		t.Fatalf("none: %v trained tokens, want several", n)
	}
	for i, w := range none.LossFnInputs["weights"].Float32 {
		m := mean.LossFnInputs["weights"].Float32[i]
		if (w != 0 && w != 1) || math.Abs(float64(m)-float64(w)/n) > 1e-7 {
			t.Errorf("weight %d: none %v, mean %v (want none/%v)", i, w, m, n)
		}
	}
	for in, want := range map[string]string{"": ReductionMean, "sum": ReductionNone, "none": ReductionNone, "mean": ReductionMean} {
		if got, err := CheckReduction(in); got != want || err != nil {
			t.Errorf("CheckReduction(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := CheckReduction("avg"); err == nil {
		t.Error("CheckReduction(\"avg\") accepted")
	}
}

// SFT's loss and eval NLL are the mean NLL per trained token whatever the
// reduction: the first step's loss (before any update) is the same under
// "mean" and "none", and equals the loss:sum of 0/1 data over its tokens.
func TestSFTLossPerTokenWhateverTheReduction(t *testing.T) {
	sess := localSession(t, 0)
	first := map[string]float64{}
	for _, red := range []string{ReductionMean, ReductionNone} {
		o := resumeOptions("")
		o.Data, o.Eval, o.Epochs, o.Reduction, o.BatchSize = qa(4), qa(4), 1, red, 4
		res, err := SFT(t.Context(), sess, o)
		if err != nil {
			t.Fatal(err)
		}
		first[red] = res.Steps[0].Loss
		if res.Steps[0].EvalNLL == nil || !(*res.Steps[0].EvalNLL < first[red]) {
			t.Errorf("%s: eval NLL after the step %v, want below the loss before it %v", red, res.Steps[0].EvalNLL, first[red])
		}
	}
	if math.Abs(first[ReductionMean]-first[ReductionNone]) > 1e-4 {
		t.Errorf("first loss %v under mean, %v under none: not per token", first[ReductionMean], first[ReductionNone])
	}
	// The reference: a forward pass over 0/1 data, loss:sum / tokens.
	r, _ := modelref.Renderer(t.Context(), "tinker-local/tiny-llama", "")
	o := resumeOptions("")
	data, _, err := toData(r, qa(4), &o, ReductionNone)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(3)
	lora := tinkerapi.DefaultLoraConfig()
	lora.Rank, lora.Seed = 4, &seed
	tc, err := sess.CreateTrainingClient(t.Context(), o.BaseModel, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tc.Forward(t.Context(), tinkerapi.ForwardBackwardInput{Data: data, LossFn: "cross_entropy"})
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := out.Loss()
	if want := sum / TotalWeight(data); math.Abs(first[ReductionMean]-want) > 1e-4 {
		t.Errorf("first loss %v, want loss:sum/tokens %v", first[ReductionMean], want)
	}
}
