package train

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// capitals is the share of a completion's characters that are capital
// letters.
func capitals(_ int, text string) (float64, error) {
	if text == "" {
		return 0, nil
	}
	n, caps := 0, 0
	for _, r := range text {
		n++
		if unicode.IsUpper(r) {
			caps++
		}
	}
	return float64(caps) / float64(n), nil
}

func rlOptions(logDir string, steps int) RLOptions {
	seed := int64(2)
	o := RLOptions{BaseModel: "tinker-local/tiny-llama", Prompts: []Prompt{{Text: "Say something:", Where: "prompts[0]"}, {Text: "Go on:", Where: "prompts[1]"}},
		Reward: capitals, Lora: tinkerapi.DefaultLoraConfig(), GroupSize: 8, Steps: steps, MaxTokens: 8, Temperature: 1,
		Loss: DefaultRLLoss, LearningRate: 1e-2}
	o.Lora.Rank, o.Lora.Seed = 8, &seed
	o.LogDir = logDir
	return o
}

func meanReward(steps []RLMetrics) float64 {
	s := 0.0
	for _, m := range steps {
		s += m.MeanReward
	}
	return s / float64(len(steps))
}

// RL with a capital-letters reward raises it by more than 0.3. (On
// policy, as this loop samples, ppo and cispo have the same gradient as
// importance_sampling: every ratio is 1.)
func TestRLRaisesReward(t *testing.T) {
	sess := localSession(t, 0)
	for _, loss := range []string{"importance_sampling"} {
		o := rlOptions(filepath.Join(t.TempDir(), loss), 5)
		o.Loss = loss
		res, err := RL(t.Context(), sess, o)
		if err != nil {
			t.Fatal(err)
		}
		var line []string
		for _, m := range res.Steps {
			line = append(line, fmt.Sprintf("%.2f", m.MeanReward))
		}
		t.Logf("%s: mean reward by step %s", loss, strings.Join(line, " "))
		first, last := res.Steps[0].MeanReward, meanReward(res.Steps[len(res.Steps)-2:])
		if !(last-first > 0.3) {
			t.Errorf("%s: mean reward %.3f -> %.3f, want a rise above 0.3", loss, first, last)
		}
	}
}
