package train

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// The weights dpoLoop sends are −∂loss/∂logprob of the batch's mean DPO
// loss, checked per token against float64 central finite differences of
// the loss written out from its definition.
func TestDPOWeightsAreTheLossGradient(t *testing.T) {
	const beta = 0.3
	tokens := [][]float64{{-1.2, -0.4, -2.0}, {-0.7, -3.1}, {-0.2, -0.9, -1.5, -0.3}, {-2.2}}
	weights := [][]float32{{0, 1, 1}, {1, 1}, {1, 0, 1, 1}, {1}}
	ref := []float64{-2.0, -3.5, -1.0, -2.5}
	lossOf := func(lp [][]float64) float64 {
		seq := func(k int) float64 {
			s := 0.0
			for i, x := range lp[k] {
				s += float64(weights[k][i]) * x
			}
			return s
		}
		total := 0.0
		for k := 0; k < len(lp); k += 2 {
			z := beta * ((seq(k) - ref[k]) - (seq(k+1) - ref[k+1]))
			total += -math.Log(1 / (1 + math.Exp(-z)))
		}
		return total / float64(len(lp)/2)
	}
	batch := make([]tinkerapi.Datum, len(tokens))
	pol := make([]float64, len(tokens))
	for k := range tokens {
		batch[k] = tinkerapi.Datum{ModelInput: make([]int, len(tokens[k])), LossFnInputs: map[string]tinkerapi.Tensor{
			"target_tokens": tinkerapi.Int64s(make([]int64, len(tokens[k]))), "weights": tinkerapi.Float32s(weights[k])}}
		lp := make([]float32, len(tokens[k]))
		for i, x := range tokens[k] {
			lp[i] = float32(x)
		}
		pol[k] = weighted(batch[k], lp)
	}
	l := &dpoLoop{o: &DPOOptions{Beta: beta}}
	var m DPOMetrics
	out := l.lossWeights(batch, pol, ref, &m)
	if got, want := m.Loss, lossOf(tokens); math.Abs(got-want) > 1e-6 {
		t.Errorf("loss %v, want %v", got, want)
	}
	const h = 1e-5
	for k := range tokens {
		for i := range tokens[k] {
			orig := tokens[k][i]
			tokens[k][i] = orig + h
			up := lossOf(tokens)
			tokens[k][i] = orig - h
			down := lossOf(tokens)
			tokens[k][i] = orig
			fd := (up - down) / (2 * h)
			if got := -float64(out[k].LossFnInputs["weights"].Float32[i]); math.Abs(got-fd) > 1e-6 {
				t.Errorf("sequence %d token %d: weight gives gradient %v, finite differences %v", k, i, got, fd)
			}
		}
	}
}

// prefs is n pairs preferring "Yes." to "No." after a question.
func prefs(n int) []Pair {
	out := make([]Pair, n)
	for i := range out {
		out[i] = Pair{Where: fmt.Sprintf("data[%d]", i), Prompt: []chat.Message{{Role: "user", Content: fmt.Sprintf("Is %d a number?", i)}},
			Chosen: "Yes, it is.", Rejected: "No."}
	}
	return out
}

func dpoOptions(logDir string) DPOOptions {
	seed := int64(5)
	o := DPOOptions{BaseModel: "tinker-local/tiny-llama", Data: prefs(4), Lora: tinkerapi.DefaultLoraConfig(), Beta: 0.5,
		BatchSize: 4, Epochs: 4, LearningRate: 1e-2, Schedule: "constant"}
	o.Lora.Rank, o.Lora.Seed = 4, &seed
	o.LogDir = logDir
	return o
}

// DPO on a tiny preference set starts at margin 0 (the policy is the
// reference) and classifies every pair by its last steps.
func TestDPOLearnsPreferences(t *testing.T) {
	sess := localSession(t, 0)
	res, err := DPO(t.Context(), sess, dpoOptions(filepath.Join(t.TempDir(), "run")))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Steps {
		t.Logf("step %d: loss %.4f accuracy %.2f margin %.4f", m.Step, m.Loss, m.Accuracy, m.Margin)
	}
	first, last := res.Steps[0], res.Steps[len(res.Steps)-1]
	if first.Margin != 0 || math.Abs(first.Loss-math.Log(2)) > 1e-9 {
		t.Errorf("step 1: margin %v, loss %v; want 0 and log 2 (policy = reference)", first.Margin, first.Loss)
	}
	if last.Accuracy != 1 || !(last.Margin > 0) || !(last.Loss < first.Loss) {
		t.Errorf("last step: accuracy %v, margin %v, loss %v (from %v); want 1, > 0 and falling", last.Accuracy, last.Margin, last.Loss, first.Loss)
	}
	if res.SamplerPath == "" {
		t.Errorf("no sampler checkpoint")
	}
}
